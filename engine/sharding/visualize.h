// A text picture of one array's sharding, like jax.debug.visualize_array_sharding: a grid with a
// cell per block, labelled with the devices holding it ("CPU 0,2,4,6" when replicated over some
// axes), and the mesh axes that split each dimension on the grid's edges.
#pragma once

#include <string>

#include "engine/sharding/partition_spec.h"

namespace shardlab::sharding {

// `rows`/`cols` pick the two dimensions drawn (for rank 1, the one dimension is drawn as columns
// and `rows` is ignored); devices holding the same (row, column) block share its cell. With
// `processes` > 1 (a run over that many processes, backends/processes.h's device order) each cell
// also names the processes that hold its block.
std::string render_sharding(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, int rows = 0, int cols = 1,
                            const std::string& platform = "CPU", int processes = 1);

}  // namespace shardlab::sharding
