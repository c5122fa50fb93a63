#include "engine/backends/cpu/executor.h"

#include <Eigen/Core>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <optional>
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
Executor<T>::Executor(const ir::Program& program, plan::MemoryPlan plan, bool fuse)
    : program_(program), plan_(std::move(plan)), persistent_(&own_persistent_) {
  arena_.assign(size_t(plan_.arena_elems), T(0));
  own_persistent_.assign(size_t(plan_.param_elems + plan_.opt_state_elems), T(0));
  if (fuse) {
    plan_fusion();
  } else {
    for (size_t i = 0; i < program_.instrs.size(); ++i) steps_.push_back(Step{i});
  }
}

template <class T>
size_t Executor<T>::fused_instructions() const {
  size_t n = 0;
  for (const Step& s : steps_) n += s.folded;
  return n;
}

// MatMul -> BiasAdd [-> Relu] and MatMul -> ReluGrad become one GEMM whose store applies the
// elementwise work, when the intermediate results have no other reader and the memory plan
// already put the final result in the MatMul's buffer (so the GEMM cannot overwrite its inputs).
// Optimizer updates scheduled in between are stepped over when they write nothing the folded
// instruction reads.
template <class T>
void Executor<T>::plan_fusion() {
  const auto& ins = program_.instrs;
  std::vector<int> uses(program_.values.size(), 0);
  for (const ir::Instr& i : ins)
    for (int v : i.in) ++uses[size_t(v)];
  auto same_buffer = [&](int a, int b) {
    return plan_.arena_offset[size_t(a)] >= 0 && plan_.arena_offset[size_t(a)] == plan_.arena_offset[size_t(b)];
  };
  auto is_update = [](const ir::Instr& i) { return i.op == ir::Op::AdamUpdate || i.op == ir::Op::SgdUpdate; };
  // The instruction that reads `v` next after `from`, if only updates that leave its inputs alone stand between.
  auto next_reader = [&](size_t from, int v) -> std::optional<size_t> {
    for (size_t j = from + 1; j < ins.size(); ++j) {
      if (std::find(ins[j].in.begin(), ins[j].in.end(), v) != ins[j].in.end()) {
        for (size_t k = from + 1; k < j; ++k)
          for (int w : ins[k].in)
            if (std::find(ins[j].in.begin(), ins[j].in.end(), w) != ins[j].in.end()) return std::nullopt;
        return j;
      }
      if (!is_update(ins[j])) return std::nullopt;
    }
    return std::nullopt;
  };
  folded_away_.assign(ins.size(), false);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (folded_away_[i]) continue;
    Step s;
    s.instr = i;
    std::vector<size_t> folded;
    if (ins[i].op == ir::Op::MatMul && uses[size_t(ins[i].out[0])] == 1) {
      const int m = ins[i].out[0];
      if (auto j = next_reader(i, m)) {
        const ir::Instr& next = ins[*j];
        if (next.op == ir::Op::BiasAdd && next.in[0] == m) {
          folded.push_back(*j);
          s.bias = next.in[1];
          s.out = next.out[0];
          auto r = uses[size_t(s.out)] == 1 ? next_reader(*j, s.out) : std::nullopt;
          if (r && ins[*r].op == ir::Op::Relu) {
            folded.push_back(*r);
            s.relu = true;
            s.out = ins[*r].out[0];
          }
        } else if (next.op == ir::Op::ReluGrad && next.in[1] == m) {
          folded.push_back(*j);
          s.mask = next.in[0];
          s.out = next.out[0];
        }
      }
      if (!folded.empty() && !same_buffer(s.out, m)) folded.clear(), s = Step{i};
    }
    s.folded = folded.size();
    for (size_t f : folded) folded_away_[f] = true;
    steps_.push_back(s);
  }
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
  comm_seconds_ = 0;
  for (const Step& step : steps_) {
    const ir::Instr& ins = program_.instrs[step.instr];
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
    if (step.folded) {
      Epilogue<T> e;
      e.bias = step.bias >= 0 ? data(step.bias) : nullptr;
      e.relu = step.relu;
      e.mask = step.mask >= 0 ? data(step.mask) : nullptr;
      args.out[0] = data(step.out);
      run_matmul(ins, args, e);
    } else if (ins.op == ir::Op::AllReduce || ins.op == ir::Op::AllGather || ins.op == ir::Op::ReduceScatter ||
               ins.op == ir::Op::AllToAll) {
      const auto t0 = std::chrono::steady_clock::now();
      run_kernel(ins, args, ctx);
      comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      run_kernel(ins, args, ctx);
    }
  }
}

template class Executor<float>;
template class Executor<double>;

}  // namespace shardlab::backends::cpu
