// The predicted time of one partitioned training step: a roofline per primitive of the local
// program (its FLOPs at the device's GEMM rate or its bytes at the device's bandwidth, whichever
// is slower), each collective as a latency plus the bytes it moves, and on a CPU the turns that
// devices beyond the shared cores take. What bounds the step is whichever part is largest.
#pragma once

#include <string>

#include "engine/advisor/hardware.h"
#include "engine/sharding/mesh.h"
#include "engine/sharding/partitioner.h"

namespace shardlab::advisor {

struct Prediction {
  double step_s = 0;           // wall time of one step
  double compute_s = 0;        // of it: primitives bound by their FLOPs
  double memory_s = 0;         // primitives bound by their bytes
  double communication_s = 0;  // collectives
  std::string bound_by;        // "compute", "memory" or "communication"
};

Prediction predict(const sharding::PartitionedStep& step, const sharding::Mesh& mesh, const Hardware& hw);

}  // namespace shardlab::advisor
