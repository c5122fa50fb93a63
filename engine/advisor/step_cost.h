// The predicted time of one partitioned training step on a hardware profile: per instruction of
// the local program, a GEMM's FLOPs at the rate measured for its shape or a streaming primitive's
// bytes at the measured bandwidth (a roofline: whichever is slower), plus the fixed cost of an
// instruction; each collective as a latency plus its bytes over the rate of its kind and group;
// plus the fixed cost of running the program. The rates are those of the mesh's device count
// running at once, so devices taking turns on shared cores are in them. What bounds the step is
// its largest part. With pipeline stages, each stage sums its own instructions (a send as a
// two-device gather), and the busiest stage's time is stretched by the bubble, (M+S-1)/M, except
// where virtual devices outnumber the CPU cores they share: a stage waiting in the bubble lends its
// core to the others, so the step is the stages' mean work (or the critical path, where longer).
#pragma once

#include <string>

#include "engine/advisor/hardware.h"
#include "engine/ir/program.h"
#include "engine/sharding/mesh.h"
#include "engine/sharding/partitioner.h"

namespace shardlab::advisor {

struct Prediction {
  double step_s = 0;           // wall time of one step
  double compute_s = 0;        // of it: instructions bound by their FLOPs
  double memory_s = 0;         // instructions bound by their bytes, and the fixed costs
  double communication_s = 0;  // collectives
  std::string bound_by;        // "compute", "memory" or "communication"
  // step_s +- band_s: the hardware profile's spread (how much its calibration's probes varied from
  // round to round) applied to the step; 0 on a profile without one (written from datasheets).
  double band_s = 0;
};

Prediction predict(const sharding::PartitionedStep& step, const sharding::Mesh& mesh, const Hardware& hw);
Prediction predict(const ir::Program& program, const sharding::Mesh& mesh, const Hardware& hw);

// Bytes an instruction moves to and from memory: its operands read and its outputs written; with
// `write_allocate` (a CPU's caches) each output also read before it is written, except an optimizer
// update's, written in place. Calibration divides the same count by the measured time, so the two
// agree.
double instruction_bytes(const ir::Program& p, const ir::Instr& ins, bool write_allocate);
// A local (not collective) instruction's time on `r`: its FLOPs at the GEMM rate of its shape or
// its bytes at the stream rate, whichever is slower, without the fixed cost of an instruction.
double local_instruction_seconds(const ir::Program& p, const ir::Instr& ins, const DeviceRates& r, bool cpu);
// The collective kind a profile rates an instruction by ("all_reduce", ...).
std::string collective_kind(ir::Op op);

}  // namespace shardlab::advisor
