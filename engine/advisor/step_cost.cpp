#include "engine/advisor/step_cost.h"

#include <algorithm>
#include <vector>

#include "engine/backends/cpu/comm_kernels.h"
#include "engine/backends/cpu/shared_replicas.h"
#include "engine/ir/primitive.h"

namespace shardlab::advisor {

namespace {

double bytes_of(const ir::Program& p, const std::vector<int>& values) {
  double b = 0;
  for (int v : values) b += double(p.bytes(v));
  return b;
}

bool is_update(ir::Op op) { return op == ir::Op::AdamUpdate || op == ir::Op::SgdUpdate; }

// A matmul's rows, inner dimension and columns, from its operands' shapes.
struct GemmDims {
  double rows, inner, cols;
};

GemmDims gemm_dims(const ir::Program& p, const ir::Instr& ins) {
  const Shape& a = p.shape(ins.in[0]);
  const Shape& c = p.shape(ins.out[0]);
  const double cols = double(c.back());
  const double rows = double(numel(c)) / std::max(1.0, cols);
  const double inner = ins.attrs.trans_a ? double(numel(a)) / std::max<double>(1, double(a.back())) : double(a.back());
  return {rows, inner, cols};
}

// A GEMM's smallest dimension and where it is (rows, inner or columns).
std::pair<GemmSide, double> gemm_shape(const ir::Program& p, const ir::Instr& ins) {
  const auto [rows, inner, cols] = gemm_dims(p, ins);
  if (rows <= inner && rows <= cols) return {GemmSide::Rows, rows};
  if (inner <= cols) return {GemmSide::Inner, inner};
  return {GemmSide::Cols, cols};
}

// FLOP/s of a matmul: the curve of its smallest dimension, slowed by what each other dimension
// costs where it too is small. Each curve was measured with the other two dimensions large, so a
// dimension's cost is the time per FLOP its curve adds over that curve's own large-size rate; the
// costs add, as packing one operand and packing the other do. (A 64 x 784 by 784 x 64 layer, read
// off the 64-row curve alone, was predicted at twice the rate it ran.)
double gemm_rate(const DeviceRates& r, const ir::Program& p, const ir::Instr& ins) {
  const auto [side, smallest] = gemm_shape(p, ins);
  const GemmDims d = gemm_dims(p, ins);
  double seconds_per_flop = 1.0 / std::max(1.0, r.gemm(side).at(smallest));
  const std::pair<GemmSide, double> others[] = {{GemmSide::Rows, d.rows}, {GemmSide::Inner, d.inner}, {GemmSide::Cols, d.cols}};
  for (const auto& [s, size] : others) {
    if (s == side) continue;
    const Curve& c = r.gemm(s);
    if (c.points.empty()) continue;
    const double at = std::max(1.0, c.at(size)), large = std::max(1.0, c.points.back().second);
    seconds_per_flop += std::max(0.0, 1.0 / at - 1.0 / large);
  }
  return 1.0 / seconds_per_flop;
}

// Blocks a gather or reduce-scatter along a dimension moves: the elements before that dimension in
// its whole array (1: one contiguous block).
int64_t collective_blocks(const ir::Program& p, const ir::Instr& ins) {
  const int64_t dim = ins.attrs.dim;
  const Shape* s = nullptr;
  if (ins.op == ir::Op::AllGather || ins.op == ir::Op::AllGatherInPlace) s = &p.shape(ins.in.at(0));
  else if (ins.op == ir::Op::ReduceScatter) s = &p.shape(ins.out.at(0));
  if (!s) return 1;
  int64_t blocks = 1;
  for (int64_t i = 0; i < dim && i < int64_t(s->size()); ++i) blocks *= (*s)[size_t(i)];
  return blocks;
}

// Whether a collective over `axes` joins devices of different nodes: devices are numbered with the
// last mesh axis fastest, so a group spans its axes' sizes times the strides below them.
bool crosses_nodes(const sharding::Mesh& mesh, const std::vector<std::string>& axes, int per_node) {
  if (per_node <= 0) return false;
  int64_t span = 1;
  for (const std::string& a : axes) {
    const int i = mesh.axis_index(a);
    if (i < 0) continue;
    int64_t stride = 1;
    for (size_t j = size_t(i) + 1; j < mesh.axes().size(); ++j) stride *= mesh.axes()[j].size;
    span = std::max(span, stride * mesh.axes()[size_t(i)].size);
  }
  return span > per_node;
}

// A local instruction's time, its FLOPs at its rate or its bytes at the stream rate, whichever is
// slower, and whether its FLOPs were.
std::pair<double, bool> local_seconds(const ir::Program& prog, const ir::Instr& ins, const DeviceRates& r, double peak, bool cpu) {
  std::vector<Shape> in, out;
  for (int v : ins.in) in.push_back(prog.shape(v));
  for (int v : ins.out) out.push_back(prog.shape(v));
  const double flops = ir::primitive(ins.op).flops(in, out, ins.attrs);
  double rate = peak;
  if (ins.op == ir::Op::MatMul) rate = gemm_rate(r, prog, ins);
  const double t_flops = rate > 0 ? flops / rate : 0;
  const double t_bytes = instruction_bytes(prog, ins, cpu) / r.memory_bytes_per_s;
  return {std::max(t_flops, t_bytes), t_flops >= t_bytes};
}

double peak_of(const DeviceRates& r) { return std::max({r.gemm_rows.at(1e9), r.gemm_inner.at(1e9), r.gemm_cols.at(1e9), 1.0}); }

}  // namespace

double local_instruction_seconds(const ir::Program& p, const ir::Instr& ins, const DeviceRates& r, bool cpu) {
  return local_seconds(p, ins, r, peak_of(r), cpu).first;
}

double instruction_bytes(const ir::Program& p, const ir::Instr& ins, bool write_allocate) {
  // In-place updates write back every operand but the gradient.
  if (is_update(ins.op)) return 2 * bytes_of(p, ins.in) - bytes_of(p, {ins.in.at(1)});
  // On a CPU an output goes to memory the cache does not hold: each line is read in before it is
  // written, so it moves twice. Counted once, an elementwise op measured 13-20 GB/s on the 2-core
  // EPYC and Adam, which writes in place, 29-31: one rate then over-predicted Adam by 1.5x.
  return bytes_of(p, ins.in) + (write_allocate ? 2 : 1) * bytes_of(p, ins.out);
}

std::string collective_kind(ir::Op op) {
  switch (op) {
    case ir::Op::AllReduce: return "all_reduce";
    case ir::Op::AllGather:
    case ir::Op::AllGatherInPlace: return "all_gather";
    case ir::Op::ReduceScatter: return "reduce_scatter";
    case ir::Op::AllToAll: return "all_to_all";
    default: return "";
  }
}

Prediction predict(const ir::Program& prog, const sharding::Mesh& mesh, const Hardware& hw) {
  const int devices = int(std::max<int64_t>(1, mesh.device_count()));
  const DeviceRates r = hw.rates_for(devices);
  const double peak = peak_of(r);
  // A pipeline's stages each run their own instructions: one sum per stage.
  const int64_t stages = std::max<int64_t>(prog.stages, 1);
  std::vector<Prediction> per(static_cast<size_t>(stages));
  int64_t microbatches = 1;
  for (Prediction& p : per) p.memory_s = r.run_s;
  // Parameters the CPU runtime holds once for all its virtual devices (one process): their in-place
  // gathers move nothing and cost one barrier.
  std::vector<char> held_once(prog.values.size(), 0);
  std::vector<std::string> all_axes;
  for (const auto& a : mesh.axes()) all_axes.push_back(a.name);
  if (hw.kind == "cpu" && !crosses_nodes(mesh, all_axes, hw.devices_per_node))
    for (int v : backends::cpu::shared_replicas(prog, devices)) held_once[size_t(v)] = 1;
  for (const ir::Instr& ins : prog.instrs) {
    microbatches = std::max(microbatches, ins.microbatch + 1);
    const int64_t lo = ins.stage >= 0 ? ins.stage : 0, hi = ins.stage >= 0 ? ins.stage : stages - 1;
    auto add = [&](double Prediction::*part, double t) {
      for (int64_t s = lo; s <= hi; ++s) per[size_t(s)].*part += t;
    };
    if (ins.op == ir::Op::Recv) continue;  // its send is counted
    if (ins.op == ir::Op::Send) {
      // Between neighbouring stages: rated as a gather of two devices across the pipeline's axis.
      const CollectiveRate c = hw.collective("all_gather", devices, 2, crosses_nodes(mesh, {prog.stage_axis}, hw.devices_per_node));
      add(&Prediction::communication_s, c.seconds(bytes_of(prog, ins.in)));
      continue;
    }
    const std::string kind = collective_kind(ins.op);
    if (!kind.empty()) {
      // The whole array: a gather's result, a reduction's operand; an in-place gather's buffer.
      double bytes = std::max(bytes_of(prog, ins.in), bytes_of(prog, ins.out));
      const int group = int(std::max<int64_t>(1, ins.attrs.group_size));
      if (group <= 1) continue;
      const CollectiveRate c = hw.collective(kind, devices, group, crosses_nodes(mesh, ins.attrs.mesh_axes, hw.devices_per_node));
      if (ins.op == ir::Op::AllGatherInPlace && held_once[size_t(ins.in.at(0))]) {
        add(&Prediction::communication_s, c.latency_s);
        continue;
      }
      add(&Prediction::communication_s, c.seconds(bytes));
      // Along a dimension with blocks before it, as the runtime moves it: on the CPU up to
      // kBlockwiseMax blocks a collective each, one more latency per block; beyond (and on a GPU,
      // always) one more copy of the whole array, read from staging and written in place.
      // (FSDP+Megatron's 16 MiB weight gathers along columns, counted as contiguous, left
      // deep-mlp's step 20% under-predicted.)
      const bool cpu = hw.kind == "cpu";
      const int64_t blocks = collective_blocks(prog, ins);
      if (cpu && blocks > 1 && blocks <= backends::cpu::kBlockwiseMax) add(&Prediction::communication_s, double(blocks - 1) * c.latency_s);
      else if (blocks > 1) add(&Prediction::memory_s, (cpu ? 3 : 2) * bytes / r.memory_bytes_per_s);
      continue;
    }
    const auto [t, flop_bound] = local_seconds(prog, ins, r, peak, hw.kind == "cpu");
    add(flop_bound ? &Prediction::compute_s : &Prediction::memory_s, t);
    add(&Prediction::memory_s, r.instruction_s);
  }
  // The busiest stage sets the pace, and every stage idles (S-1)/(M+S-1) of the step while the
  // pipeline fills and drains: its work takes (M+S-1)/M of its own time.
  auto total = [](const Prediction& a) { return a.compute_s + a.memory_s + a.communication_s; };
  Prediction p = *std::max_element(per.begin(), per.end(), [&](const Prediction& a, const Prediction& b) { return total(a) < total(b); });
  if (stages > 1) {
    double stretch = double(microbatches + stages - 1) / double(microbatches);
    // Virtual devices outnumbering the cores they share idle in the bubble without idling a core:
    // a waiting stage lends its core to the others (the rates are already each device's share).
    // The step is then the stages' mean work, or, where longer, the busiest stage's critical path
    // run at the whole cores its idle peers leave it (devices / cores times its share).
    if (hw.kind == "cpu" && hw.shared_cores > 0 && devices > hw.shared_cores) {
      Prediction mean;
      for (const Prediction& s : per) {
        mean.compute_s += s.compute_s / double(stages);
        mean.memory_s += s.memory_s / double(stages);
        mean.communication_s += s.communication_s / double(stages);
      }
      const double critical = stretch * double(hw.shared_cores) / double(devices);
      if (total(mean) >= critical * total(p)) {
        p = mean;
        stretch = 1;
      } else {
        stretch = critical;
      }
    }
    p.compute_s *= stretch, p.memory_s *= stretch, p.communication_s *= stretch;
  }
  p.step_s = p.compute_s + p.memory_s + p.communication_s;
  p.band_s = p.step_s * hw.spread;
  p.bound_by = p.communication_s >= std::max(p.compute_s, p.memory_s) ? "communication"
               : p.memory_s > p.compute_s                              ? "memory"
                                                                       : "compute";
  return p;
}

Prediction predict(const sharding::PartitionedStep& step, const sharding::Mesh& mesh, const Hardware& hw) {
  return predict(step.program, mesh, hw);
}

}  // namespace shardlab::advisor
