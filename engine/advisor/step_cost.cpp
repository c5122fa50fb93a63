#include "engine/advisor/step_cost.h"

#include <algorithm>

#include "engine/ir/primitive.h"

namespace shardlab::advisor {

namespace {

double bytes_of(const ir::Program& p, const std::vector<int>& values) {
  double b = 0;
  for (int v : values) b += double(numel(p.shape(v))) * sizeof(float);
  return b;
}

}  // namespace

Prediction predict(const sharding::PartitionedStep& step, const sharding::Mesh& mesh, const Hardware& hw) {
  const double devices = double(std::max<int64_t>(1, mesh.device_count()));
  // Devices computing at once, and what each of them gets of the machine (a GPU: all of its own).
  const double at_once = hw.shared_cores > 0 ? std::min(devices, double(hw.shared_cores)) : 1.0;
  const double flops_per_s = hw.gemm_flops / at_once;
  const double bytes_per_s = hw.memory_bytes_per_s / at_once;
  Prediction p;
  const ir::Program& prog = step.program;
  for (const ir::Instr& ins : prog.instrs) {
    const double bytes = bytes_of(prog, ins.in) + bytes_of(prog, ins.out);
    if (ir::is_collective(ins.op) && ins.op != ir::Op::ShardSlice) {
      // Shared memory: each device reads its peers' blocks and writes its result, so a collective
      // costs about its operands' bytes again per peer it combines, plus the wake-ups.
      const double peers = double(std::max<int64_t>(1, ins.attrs.group_size));
      p.communication_s += hw.collective_latency_s + bytes * (peers - 1) / peers * 2.0 / bytes_per_s;
      continue;
    }
    std::vector<Shape> in, out;
    for (int v : ins.in) in.push_back(prog.shape(v));
    for (int v : ins.out) out.push_back(prog.shape(v));
    const double t_flops = ir::primitive(ins.op).flops(in, out, ins.attrs) / flops_per_s;
    const double t_bytes = bytes / bytes_per_s;
    (t_flops >= t_bytes ? p.compute_s : p.memory_s) += std::max(t_flops, t_bytes);
  }
  // Devices beyond the shared cores take turns: the step lasts that many rounds.
  const double rounds = hw.shared_cores > 0 ? std::max(1.0, devices / double(hw.shared_cores)) : 1.0;
  p.compute_s *= rounds;
  p.memory_s *= rounds;
  p.communication_s *= rounds;
  p.step_s = p.compute_s + p.memory_s + p.communication_s;
  p.bound_by = p.communication_s >= std::max(p.compute_s, p.memory_s) ? "communication"
               : p.memory_s > p.compute_s                              ? "memory"
                                                                       : "compute";
  return p;
}

}  // namespace shardlab::advisor
