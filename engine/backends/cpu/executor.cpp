#include "engine/backends/cpu/executor.h"

#include <Eigen/Core>
#include "engine/backends/cpu/openmp.h"
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <type_traits>

#include "engine/backends/cpu/comm_kernels.h"
#include "engine/backends/cpu/kernels.h"
#include "engine/plan/foldable_chains.h"
#include "engine/tensor/convert.h"
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
DType Executor<T>::held(DType d) {
  return d == DType::F32 && std::is_same_v<T, double> ? DType::F64 : d;
}

template <class T>
Executor<T>::Executor(const ir::Program& program, plan::MemoryPlan plan, bool fuse, const Executor* share_persistent)
    : program_(program), plan_(std::move(plan)), persistent_(&own_persistent_) {
  int64_t persistent_bytes = plan_.param_bytes + plan_.opt_state_bytes, arena_bytes = plan_.arena_bytes;
  if constexpr (std::is_same_v<T, float>) {
    arena_at_ = plan_.arena_offset;
    persistent_at_ = plan_.persistent_offset;
  } else {
    lay_out_each_value_alone();
    arena_bytes = persistent_bytes = 0;
    for (size_t v = 0; v < program_.values.size(); ++v) {
      const int64_t end = int64_t(numel(program_.values[v].shape) * dtype_size(held(program_.values[v].dtype)));
      if (arena_at_[v] >= 0) arena_bytes = std::max(arena_bytes, arena_at_[v] + end);
      if (persistent_at_[v] >= 0) persistent_bytes = std::max(persistent_bytes, persistent_at_[v] + end);
    }
  }
  arena_.assign(size_t(arena_bytes), std::byte{0});
  if (share_persistent) {
    if (share_persistent->persistent_->size() != size_t(persistent_bytes))
      throw Error("internal: executors disagree on the size of the persistent state");
    persistent_ = share_persistent->persistent_;
    if (share_persistent->replica_block_) {
      replica_block_ = share_persistent->replica_block_;
      replica_offsets_ = share_persistent->replica_offsets_;
      mark_replicas();
    }
  } else {
    own_persistent_ = util::ZeroedPages(size_t(persistent_bytes));
  }
  int64_t staging = 0;
  for (const ir::Instr& ins : program_.instrs) staging = std::max(staging, plan::staging_elems(program_, ins));
  staging_.assign(size_t(staging), T(0));
  if (fuse) {
    plan_fusion();
  } else {
    for (size_t i = 0; i < program_.instrs.size(); ++i) {
      Step s;
      s.instr = i;
      steps_.push_back(std::move(s));
    }
  }
  describe_steps();
}

// The double executor's layout: every arena value at its own offset (8-byte aligned), parameters
// then optimizer state in the persistent block, in value order as the plan has them.
template <class T>
void Executor<T>::lay_out_each_value_alone() {
  const size_t nv = program_.values.size();
  arena_at_.assign(nv, -1);
  persistent_at_.assign(nv, -1);
  auto size_of = [&](size_t v) { return (int64_t(numel(program_.values[v].shape) * dtype_size(held(program_.values[v].dtype))) + 7) / 8 * 8; };
  int64_t arena = 0, persistent = 0;
  for (ir::ValueKind kind : {ir::ValueKind::Param, ir::ValueKind::OptState})
    for (size_t v = 0; v < nv; ++v)
      if (plan_.persistent_offset.at(v) >= 0 && program_.values[v].kind == kind) persistent_at_[v] = persistent, persistent += size_of(v);
  for (size_t v = 0; v < nv; ++v)
    if (plan_.arena_offset.at(v) >= 0) arena_at_[v] = arena, arena += size_of(v);
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
    info.category = int(profiler::instruction_category(in.op));
    info.name = ir::op_name(in.op);
    if (st.folded) info.name += st.mask >= 0 ? "+relu_grad" : st.relu ? "+bias+relu" : "+bias";
    double f = profiler::instruction_flops(program_, in);
    for (size_t k : st.folded_instrs) f += profiler::instruction_flops(program_, ins[k]);
    (comm ? info.bytes : info.flops) = comm ? f * double(dtype_size(held(program_.dtype(in.in.empty() ? in.out.at(0) : in.in[0])))) : f;
    // Live arena bytes once this step is done (distinct buffers only).
    const int64_t stage = in.stage >= 0 ? in.stage : 0;
    const int* from = first.data() + size_t(stage) * nv;
    const int* to = last.data() + size_t(stage) * nv;
    std::vector<std::pair<int64_t, int64_t>> bufs;
    for (size_t v = 0; v < nv; ++v)
      if (arena_at_[v] >= 0 && from[v] <= int(st.instr) && to[v] > int(st.instr))
        bufs.push_back({arena_at_[v], int64_t(numel(program_.values[v].shape) * dtype_size(held(program_.values[v].dtype)))});
    std::sort(bufs.begin(), bufs.end());
    int64_t covered = 0, reach = 0;
    for (auto [off, n] : bufs) {
      if (off + n <= reach) continue;
      covered += off + n - std::max(off, reach);
      reach = off + n;
    }
    info.live_bytes = double(covered);
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
void Executor<T>::share_replicas(Executor& owner, const std::vector<int>& values) {
  if (owner.persistent_->size() != persistent_->size() || owner.persistent_at_ != persistent_at_)
    throw Error("internal: executors sharing parameters disagree on the layout of the persistent state");
  replica_offsets_.clear();
  for (int v : values) {
    if (persistent_at_.at(size_t(v)) < 0 || program_.values[size_t(v)].kind != ir::ValueKind::Param)
      throw Error("internal: value '" + program_.values.at(size_t(v)).name + "' is not a parameter and cannot be shared");
    replica_offsets_.push_back(persistent_at_[size_t(v)]);
  }
  std::sort(replica_offsets_.begin(), replica_offsets_.end());
  replica_block_ = owner.persistent_;
  mark_replicas();
}

template <class T>
void Executor<T>::mark_replicas() {
  replica_.assign(program_.values.size(), 0);
  for (size_t v = 0; v < program_.values.size(); ++v)
    replica_[v] = program_.values[v].kind == ir::ValueKind::Param && persistent_at_[v] >= 0 &&
                  std::binary_search(replica_offsets_.begin(), replica_offsets_.end(), persistent_at_[v]);
}

template <class T>
void* Executor<T>::raw(int v) {
  const size_t i = size_t(v);
  if (!replica_.empty() && replica_[i]) return replica_block_->data() + persistent_at_[i];
  if (persistent_at_.at(i) >= 0) return persistent_->data() + persistent_at_[i];
  if (arena_at_.at(i) >= 0) return arena_.data() + arena_at_[i];
  throw Error("internal: value '" + program_.values.at(i).name + "' has no storage in the plan");
}

template <class T>
const void* Executor<T>::raw(int v) const {
  return const_cast<Executor*>(this)->raw(v);
}

template <class T>
T* Executor<T>::data(int v) {
  if (program_.dtype(v) != DType::F32)
    throw Error("internal: value '" + program_.values.at(size_t(v)).name + "' is " + dtype_name(program_.dtype(v)) + ", not float32");
  return static_cast<T*>(raw(v));
}

template <class T>
const T* Executor<T>::data(int v) const {
  return const_cast<Executor*>(this)->data(v);
}

template <class T>
void Executor<T>::write(int v, const T* from) {
  from_float(from, raw(v), held(program_.dtype(v)), size_t(numel(program_.shape(v))));
}

template <class T>
void Executor<T>::read(int v, T* to) const {
  to_float(raw(v), held(program_.dtype(v)), to, size_t(numel(program_.shape(v))));
}

// Convert: any held type to any other, through T a chunk at a time (directly where one side is T).
template <class T>
void Executor<T>::run_convert(const ir::Instr& ins) {
  const int x = ins.in[0], y = ins.out[0];
  const DType from = held(program_.dtype(x)), to = held(program_.dtype(y));
  const int64_t n = numel(program_.shape(x));
  const auto* src = static_cast<const std::byte*>(raw(x));
  auto* dst = static_cast<std::byte*>(raw(y));
  const DType mine = held(DType::F32);
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= 4 * kChunk)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t off = c * kChunk, len = std::min(kChunk, n - off);
    const std::byte* s = src + size_t(off) * dtype_size(from);
    std::byte* d = dst + size_t(off) * dtype_size(to);
    if (from == to) {
      if (s != d) std::memcpy(d, s, size_t(len) * dtype_size(to));
    } else if (from == mine) {
      from_float(reinterpret_cast<const T*>(s), d, to, size_t(len));
    } else if (to == mine) {
      to_float(s, from, reinterpret_cast<T*>(d), size_t(len));
    } else {
      std::vector<T> tmp(static_cast<size_t>(len));
      to_float(s, from, tmp.data(), size_t(len));
      from_float(tmp.data(), d, to, size_t(len));
    }
  }
}

// A MatMul (with its folded epilogue): operands as stored, the product in T. A 16-bit result is
// computed into the staging area and rounded into place; its epilogue then runs on the rounded
// values, rounding after the bias add as the unfused instructions would, so fusing changes nothing.
template <class T>
void Executor<T>::run_matmul_step(const Step& step, const ir::Instr& ins) {
  MatmulOperands x;
  x.a = raw(ins.in[0]);
  x.a_type = held(program_.dtype(ins.in[0]));
  x.a_shape = &program_.shape(ins.in[0]);
  x.b = raw(ins.in[1]);
  x.b_type = held(program_.dtype(ins.in[1]));
  x.b_shape = &program_.shape(ins.in[1]);
  const int out = step.folded ? step.out : ins.out[0];
  const DType od = program_.dtype(out);
  // A Convert folded into the operands (ir/cast_folding.h) rounds float32 ones as it would have.
  ir::Instr folded_cast;
  const ir::Instr* mm = &ins;
  if (ins.attrs.round_operands) {
    folded_cast = ins;
    folded_cast.attrs.precision = rounding_to(*ins.attrs.round_operands);
    mm = &folded_cast;
  }
  if (od == DType::F32) {
    Epilogue<T> e;
    if (step.folded) {
      e.bias = step.bias >= 0 ? data(step.bias) : nullptr;
      e.relu = step.relu;
      e.mask = step.mask >= 0 ? data(step.mask) : nullptr;
    }
    run_matmul(*mm, x, data(out), e);
    // A 16-bit product a folded Convert widens: stored in float32, rounded to its 16-bit dtype.
    const DType product = ins.attrs.round_operands.value_or(program_.dtype(ins.in[0]));
    if (ins.attrs.result_dtype && is_16bit(product)) round_to_dtype(data(out), size_t(numel(program_.shape(out))), product);
    return;
  }
  const Shape& os = program_.shape(ins.out[0]);
  const int64_t mn = numel(os), cols = os.empty() ? 1 : os.back(), rows = mn / std::max<int64_t>(cols, 1);
  T* c = staging_.data();
  run_matmul(*mm, x, c);
  void* y = raw(out);
  from_float(c, y, od, size_t(mn));
  if (!step.folded) return;
  to_float(y, od, c, size_t(mn));
  if (step.bias >= 0) {
    std::vector<T> bias(static_cast<size_t>(cols));
    to_float(raw(step.bias), held(program_.dtype(step.bias)), bias.data(), size_t(cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) c[r * cols + j] += bias[size_t(j)];
    from_float(c, y, od, size_t(mn));
    to_float(y, od, c, size_t(mn));
  }
  if (step.relu)
    for (int64_t i = 0; i < mn; ++i) c[i] = c[i] > T(0) ? c[i] : T(0);
  if (step.mask >= 0) {
    std::vector<T> mask(static_cast<size_t>(cols));
    const DType md = held(program_.dtype(step.mask));
    const auto* m = static_cast<const std::byte*>(raw(step.mask));
    for (int64_t r = 0; r < rows; ++r) {
      to_float(m + size_t(r * cols) * dtype_size(md), md, mask.data(), size_t(cols));
      for (int64_t j = 0; j < cols; ++j)
        if (!(mask[size_t(j)] > T(0))) c[r * cols + j] = T(0);
    }
  }
  from_float(c, y, od, size_t(mn));
}

// Any other computing instruction: its 16-bit and int32 operands and results go through float
// working copies in the staging area (plan::stages_operand says which). An elementwise one goes a
// chunk at a time (plan::staging_chunk), its row operand (BiasAdd's bias) staged whole.
template <class T>
void Executor<T>::run_staged(const ir::Instr& ins, const StepContext& ctx) {
  const size_t nin = ins.in.size(), nall = nin + ins.out.size();
  std::vector<bool> staged(nall);
  bool any = false;
  for (size_t k = 0; k < nall; ++k) any |= staged[k] = plan::stages_operand(program_, ins, k);
  const plan::Staging how = any ? plan::staging_of(ins.op) : plan::Staging::Whole;
  auto value = [&](size_t k) { return k < nin ? ins.in[k] : ins.out[k - nin]; };
  const int64_t total = ins.out.empty() ? 0 : numel(program_.shape(ins.out[0]));
  const int64_t chunk = how == plan::Staging::Whole ? total : plan::staging_chunk(program_, ins);
  // Operands staged whole: all of them where the instruction is not elementwise, else the row.
  auto whole = [&](size_t k) { return how == plan::Staging::Whole || (how == plan::Staging::Rows && k == 1); };
  std::vector<T*> buf(nall, nullptr);
  size_t used = 0;
  for (size_t k = 0; k < nall; ++k) {
    if (!staged[k]) continue;
    const int v = value(k);
    const size_t n = whole(k) ? size_t(numel(program_.shape(v))) : size_t(chunk);
    buf[k] = staging_.data() + used;
    used += n;
    if (k < nin && whole(k)) to_float(raw(v), held(program_.dtype(v)), buf[k], n);
  }
  // One pass over elements [off, off + len) (all of them where not chunked).
  std::vector<Shape> shapes(nall);
  auto pass = [&](int64_t off, int64_t len) {
    KernelArgs<T> args;
    for (size_t k = 0; k < nall; ++k) {
      const int v = value(k);
      const Shape* shape = &program_.shape(v);
      T* p = nullptr;
      if (how == plan::Staging::Whole || whole(k)) {
        p = staged[k] ? buf[k] : data(v);
      } else {
        shapes[k] = how == plan::Staging::Rows ? Shape{len / shape->back(), shape->back()} : Shape{len};
        shape = &shapes[k];
        if (staged[k]) {
          p = buf[k];
          if (k < nin)
            to_float(static_cast<const std::byte*>(raw(v)) + size_t(off) * dtype_size(program_.dtype(v)), held(program_.dtype(v)), p,
                     size_t(len));
        } else {
          p = data(v) + off;
        }
      }
      if (k < nin) {
        args.in.push_back(p);
        args.in_mut.push_back(p);
        args.in_shapes.push_back(shape);
      } else {
        args.out.push_back(p);
        args.out_shapes.push_back(shape);
      }
    }
    run_kernel(ins, args, ctx);
    for (size_t k = nin; k < nall; ++k)
      if (staged[k]) {
        const int v = value(k);
        const int64_t o = whole(k) ? 0 : off, n = whole(k) ? numel(program_.shape(v)) : len;
        from_float(buf[k], static_cast<std::byte*>(raw(v)) + size_t(o) * dtype_size(program_.dtype(v)), held(program_.dtype(v)), size_t(n));
      }
  };
  if (how == plan::Staging::Whole) pass(0, total);
  else
    for (int64_t off = 0; off < total; off += chunk) pass(off, std::min(chunk, total - off));
  // An update writes its parameter (and state, always float32) in place.
  if ((ins.op == ir::Op::AdamUpdate || ins.op == ir::Op::SgdUpdate) && staged[0])
    from_float(buf[0], raw(ins.in[0]), held(program_.dtype(ins.in[0])), size_t(numel(program_.shape(ins.in[0]))));
}

template <class T>
void Executor<T>::run(const StepContext& ctx) {
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
    if (ins.op == ir::Op::MatMul || ins.op == ir::Op::BatchMatMul) {
      run_matmul_step(step, ins);
    } else if (ins.op == ir::Op::Convert || (ins.op == ir::Op::Reshape && program_.dtype(ins.in[0]) != DType::F32)) {
      run_convert(ins);  // a Reshape of a 16-bit value is a copy of its bytes
    } else if (ir::is_collective(ins.op) || ins.op == ir::Op::ShardSlice) {
      const auto c0 = std::chrono::steady_clock::now();
      CommArgs a;
      const int operand = ins.in.empty() ? -1 : ins.in[0];
      a.in = operand >= 0 ? static_cast<const std::byte*>(raw(operand)) : nullptr;
      a.in_mut = operand >= 0 ? static_cast<std::byte*>(raw(operand)) : nullptr;
      a.in_shape = operand >= 0 ? &program_.shape(operand) : nullptr;
      a.out = ins.out.empty() ? nullptr : static_cast<std::byte*>(raw(ins.out[0]));
      a.out_shape = ins.out.empty() ? nullptr : &program_.shape(ins.out[0]);
      a.type = held(program_.dtype(operand >= 0 ? operand : ins.out.at(0)));
      a.shared = ins.op == ir::Op::AllGatherInPlace && !replica_.empty() && replica_[size_t(operand)];
      run_comm_kernel(ins, a, ctx);
      if (ins.op != ir::Op::ShardSlice)
        comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    } else {
      run_staged(ins, ctx);
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
