#include "engine/backends/cpu/executor.h"

#include <Eigen/Core>
#include "engine/backends/cpu/openmp.h"
#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/backends/cpu/kernels.h"
#include "engine/plan/foldable_chains.h"
#include "engine/ir/primitive.h"
#include "engine/profiler/instruction_arrays.h"
#include "engine/profiler/trace.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

void set_threads(int threads) {
  if (threads <= 0) threads = default_threads();
  openmp::set_num_threads(threads);
  // 0: Eigen asks OpenMP, whose thread count is per calling thread, so concurrent virtual devices
  // each keep their own share of the cores.
  Eigen::setNbThreads(0);
}

int default_threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

template <class T>
Executor<T>::Executor(const ir::Program& program, plan::MemoryPlan plan, bool fuse, const Executor* share_persistent)
    : program_(program), plan_(std::move(plan)), persistent_(&own_persistent_) {
  arena_.assign(size_t(plan_.arena_elems), T(0));
  if (share_persistent) {
    if (share_persistent->persistent_->size() != size_t(plan_.param_elems + plan_.opt_state_elems))
      throw Error("internal: executors disagree on the size of the persistent state");
    persistent_ = share_persistent->persistent_;
  } else {
    own_persistent_.assign(size_t(plan_.param_elems + plan_.opt_state_elems), T(0));
  }
  if (fuse) {
    plan_fusion();
  } else {
    for (size_t i = 0; i < program_.instrs.size(); ++i) steps_.push_back(Step{i});
  }
  describe_steps();
}

// What a trace shows per step: category, name, planned FLOPs or bytes moved, and the step's
// live arena bytes after it (from the memory plan's live ranges).
template <class T>
void Executor<T>::describe_steps() {
  const auto& ins = program_.instrs;
  const int end = int(ins.size());
  // Live ranges per pipeline stage (one range without a pipeline): a step's live bytes are those of
  // the stage that runs it.
  const int64_t stages = std::max<int64_t>(program_.stages, 1);
  const size_t nv = program_.values.size();
  std::vector<int> first(size_t(stages) * nv, end), last(size_t(stages) * nv, -1);
  for (int64_t s = 0; s < stages; ++s)
    for (int i = 0; i < end; ++i) {
      if (!ir::runs_on_stage(ins[size_t(i)], stages > 1 ? s : -1)) continue;
      for (int v : ins[size_t(i)].in) last[size_t(s) * nv + size_t(v)] = std::max(last[size_t(s) * nv + size_t(v)], i);
      for (int v : ins[size_t(i)].out) {
        first[size_t(s) * nv + size_t(v)] = std::min(first[size_t(s) * nv + size_t(v)], i);
        last[size_t(s) * nv + size_t(v)] = std::max(last[size_t(s) * nv + size_t(v)], i);
      }
    }
  const std::vector<profiler::SpanArrays> arrays = profiler::instruction_arrays(program_);
  for (const Step& st : steps_) {
    const ir::Instr& in = ins[st.instr];
    StepInfo info;
    // The arrays it touched, folded instructions' included (a fused bias reads its parameter).
    profiler::SpanArrays touched = arrays[st.instr];
    for (size_t k : st.folded_instrs)
      for (auto [from, to] : {std::pair{&arrays[k].reads, &touched.reads}, std::pair{&arrays[k].writes, &touched.writes}})
        for (const std::string& a : *from)
          if (std::find(to->begin(), to->end(), a) == to->end()) to->push_back(a);
    if (!touched.empty()) info.arrays = std::make_shared<const profiler::SpanArrays>(touched);
    info.array = !touched.writes.empty() ? touched.writes.front() : ir::is_collective(in.op) && !touched.reads.empty() ? touched.reads.front() : "";
    const bool comm = ir::is_collective(in.op);
    const bool update = in.op == ir::Op::AdamUpdate || in.op == ir::Op::SgdUpdate;
    info.category = int(comm ? profiler::Category::Collective : update ? profiler::Category::Optimizer : profiler::Category::Compute);
    info.name = ir::op_name(in.op);
    if (st.folded) info.name += st.mask >= 0 ? "+relu_grad" : st.relu ? "+bias+relu" : "+bias";
    auto flops_of = [&](const ir::Instr& x) {
      std::vector<Shape> is, os;
      for (int v : x.in) is.push_back(program_.shape(v));
      for (int v : x.out) os.push_back(program_.shape(v));
      return ir::primitive(x.op).flops(is, os, x.attrs);
    };
    double f = flops_of(in);
    for (size_t k : st.folded_instrs) f += flops_of(ins[k]);
    (comm ? info.bytes : info.flops) = comm ? f * sizeof(T) : f;
    // Live arena bytes once this step is done (distinct buffers only).
    const int64_t stage = in.stage >= 0 ? in.stage : 0;
    const int* from = first.data() + size_t(stage) * nv;
    const int* to = last.data() + size_t(stage) * nv;
    std::vector<std::pair<int64_t, int64_t>> bufs;
    for (size_t v = 0; v < nv; ++v)
      if (plan_.arena_offset[v] >= 0 && from[v] <= int(st.instr) && to[v] > int(st.instr))
        bufs.push_back({plan_.arena_offset[v], numel(program_.values[v].shape)});
    std::sort(bufs.begin(), bufs.end());
    int64_t covered = 0, reach = 0;
    for (auto [off, n] : bufs) {
      if (off + n <= reach) continue;
      covered += off + n - std::max(off, reach);
      reach = off + n;
    }
    info.live_bytes = double(covered) * sizeof(T);
    info_.push_back(info);
  }
}

template <class T>
size_t Executor<T>::fused_instructions() const {
  size_t n = 0;
  for (const Step& s : steps_) n += s.folded;
  return n;
}

// The IR pass's epilogue chains that the memory plan lets a GEMM fold (plan::foldable_chains).
template <class T>
void Executor<T>::plan_fusion() {
  const auto& ins = program_.instrs;
  std::vector<const ir::EpilogueChain*> at(ins.size(), nullptr);
  const std::vector<ir::EpilogueChain> chains = plan::foldable_chains(program_, plan_);
  for (const ir::EpilogueChain& c : chains) at[c.matmul] = &c;
  folded_away_.assign(ins.size(), false);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (folded_away_[i]) continue;
    Step s;
    s.instr = i;
    if (const ir::EpilogueChain* c = at[i]) {
      s.folded = c->folded.size();
      s.folded_instrs = c->folded;
      s.bias = c->bias;
      s.relu = c->relu;
      s.mask = c->mask;
      s.out = c->out;
      for (size_t f : c->folded) folded_away_[f] = true;
    }
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
void Executor<T>::run(const StepContext& ctx) {
  KernelArgs<T> args;
  comm_seconds_ = 0;
  profiler::Trace* trace = ctx.trace;
  profiler::StepSummary summary;
  summary.step = ctx.step;
  summary.device = ctx.device;
  summary.data_us = ctx.data_wait_us;
  const double step_start = trace ? trace->now_us() : 0.0;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& step = steps_[k];
    const ir::Instr& ins = program_.instrs[step.instr];
    if (!ir::runs_on_stage(ins, ctx.stage)) continue;  // another pipeline stage's work
    const double t0 = trace ? trace->now_us() : 0.0;
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
    } else if (ir::is_collective(ins.op)) {
      const auto t0 = std::chrono::steady_clock::now();
      run_kernel(ins, args, ctx);
      comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      run_kernel(ins, args, ctx);
    }
    if (trace) {
      const StepInfo& info = info_[k];
      const double dur = trace->now_us() - t0;
      const auto cat = profiler::Category(info.category);
      (cat == profiler::Category::Collective  ? summary.collective_us
       : cat == profiler::Category::Optimizer ? summary.optimizer_us
                                              : summary.compute_us) += dur;
      summary.flops += info.flops;
      if (trace->detailed()) {
        profiler::Span span{ctx.device, cat, info.name, ins.node, info.array, t0, dur, info.flops, info.bytes, ctx.step,
                            info.arrays};
        if (ctx.stage >= 0) {
          span.stage = ctx.stage;
          span.microbatch = ins.microbatch;
          span.backward = ins.backward;
        }
        trace->add(std::move(span));
        trace->add(profiler::MemorySample{ctx.device, t0 + dur, info.live_bytes});
      }
    }
  }
  if (trace) {
    const double end = trace->now_us();
    summary.wall_us = end - step_start + ctx.data_wait_us;
    trace->add(profiler::Span{ctx.device, profiler::Category::Step, "step " + std::to_string(ctx.step + 1), "", "", step_start,
                              end - step_start, summary.flops, 0, ctx.step});
    trace->add(summary);
  }
}

template class Executor<float>;
template class Executor<double>;

}  // namespace shardlab::backends::cpu
