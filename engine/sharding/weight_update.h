// Sharded weight update (Xu et al. 2020, "Automatic Cross-Replica Sharding of Weight Update in
// Data-Parallel Training"; ZeRO stage 1): a parameter replicated over the mesh axes that split the
// batch keeps its optimizer state split over those axes as well. Each device then reduce-scatters
// the gradient, updates its own block of parameter and state, and gathers the parameter back:
// the same bytes on the wire as an all-reduce, 1/N of the update's work and of the state's memory.
// The partitioner, the design-time sharding report and so every view use this one rule.
#pragma once

#include <string>
#include <vector>

#include "engine/sharding/mesh.h"
#include "engine/tensor/tensor.h"

namespace shardlab::sharding {

using AxesPerDim = std::vector<std::vector<std::string>>;

// The optimizer state's mesh axes per dimension, for a parameter of global shape `shape` laid out
// as `param` when the batch is split over `batch_axes`: the batch axes the parameter does not use
// are added to its first dimension that is unsplit and divides by their product. Otherwise (no
// such axes, or no such dimension) the state keeps the parameter's layout.
AxesPerDim optimizer_state_axes(const AxesPerDim& param, const Shape& shape, const Mesh& mesh,
                                const std::vector<std::string>& batch_axes);

}  // namespace shardlab::sharding
