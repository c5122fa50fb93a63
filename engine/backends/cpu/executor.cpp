#include "engine/backends/cpu/executor.h"

#include <Eigen/Core>
#include <omp.h>
#include <thread>

#include "engine/backends/cpu/kernels.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

void set_threads(int threads) {
  if (threads <= 0) threads = default_threads();
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}

int default_threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

template <class T>
Executor<T>::Executor(const ir::Program& program, plan::MemoryPlan plan)
    : program_(program), plan_(std::move(plan)), persistent_(&own_persistent_) {
  arena_.assign(size_t(plan_.arena_elems), T(0));
  own_persistent_.assign(size_t(plan_.param_elems + plan_.opt_state_elems), T(0));
}

template <class T>
T* Executor<T>::data(int v) {
  const size_t i = size_t(v);
  if (plan_.persistent_offset.at(i) >= 0) return persistent_->data() + plan_.persistent_offset[i];
  if (plan_.arena_offset.at(i) >= 0) return arena_.data() + plan_.arena_offset[i];
  throw Error("internal: value '" + program_.values.at(i).name + "' has no storage in the plan");
}

template <class T>
const T* Executor<T>::data(int v) const {
  return const_cast<Executor*>(this)->data(v);
}

template <class T>
void Executor<T>::share_persistent_with(Executor& other) const {
  if (other.own_persistent_.size() != own_persistent_.size())
    throw Error("internal: executors disagree on the size of the persistent state");
  other.own_persistent_.clear();
  other.own_persistent_.shrink_to_fit();
  other.persistent_ = persistent_;
}

template <class T>
void Executor<T>::run(const StepContext& ctx) {
  KernelArgs<T> args;
  for (const ir::Instr& ins : program_.instrs) {
    args.in.clear();
    args.out.clear();
    args.in_shapes.clear();
    args.out_shapes.clear();
    args.in_mut.clear();
    for (int v : ins.in) {
      T* d = data(v);
      args.in.push_back(d);
      args.in_mut.push_back(d);
      args.in_shapes.push_back(&program_.shape(v));
    }
    for (int v : ins.out) {
      args.out.push_back(data(v));
      args.out_shapes.push_back(&program_.shape(v));
    }
    run_kernel(ins, args, ctx);
  }
}

template class Executor<float>;
template class Executor<double>;

}  // namespace shardlab::backends::cpu
