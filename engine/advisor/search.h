// The advisor's search: layouts no template spells, found from the model's own logical axes. On
// every factorization of N devices into a mesh of up to three axes, each of the model's heaviest
// parameter axes goes to no mesh axis or to one, and the batch to any set of them. Before anything
// is partitioned, an assignment is pruned where a mesh axis does not divide a dimension it would
// split, where a mesh axis would split nothing, or where the parameters alone would not fit a
// device. Each survivor gets a lower bound on its step: every instruction of the one-device step
// at its predicted time, divided by as many devices as its node's axes are split over (a smaller
// GEMM only runs slower per FLOP), plus the fixed costs no split shrinks and the gradients it must
// reduce over the batch's axes. The advisor partitions survivors in order of that bound until the
// next bound is no better than the best step found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/advisor/hardware.h"
#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"

namespace shardlab::advisor {

struct SearchedLayout {
  sharding::Mesh mesh;
  sharding::LogicalRules rules;  // one per logical name of the model ("none" where it stays whole)
  double bound_s = 0;            // no step under this layout can be faster (on `hw`)
  std::string splits;            // "batch 4-way over data, mlp 2-way over model"
};

struct SearchCounts {
  int64_t meshes = 0;             // factorizations of N tried
  int64_t assignments = 0;        // logical -> mesh axis assignments looked at
  int64_t indivisible = 0;        // pruned: a mesh axis does not divide a dimension it splits
  int64_t idle_axis = 0;          // pruned: a mesh axis splits nothing (a layout of fewer devices)
  int64_t too_big = 0;            // pruned: its parameters alone exceed a device's capacity
  int64_t duplicates = 0;         // the same layout reached twice (mesh axes of one size swapped)
  std::vector<std::string> axes;  // the logical axes searched (the rest stay whole)
};

// The surviving layouts for `report`'s model on `devices` devices, in ascending order of bound
// (ties in a fixed order, so the search is deterministic). `max_axes` caps the parameter axes
// searched (the heaviest by parameter bytes and FLOPs they index).
std::vector<SearchedLayout> search_layouts(const project::Project& p, const graph::GraphReport& report, int64_t devices, const Hardware& hw,
                                           double capacity_per_device, SearchCounts& counts, int max_axes = 5);

// A key equal for two layouts that split every logical axis over the same mesh axis sizes in the
// same positions, whatever the mesh axes are called ("data=8" with embed=data is "fsdp=8" with
// embed=fsdp).
std::string layout_key(const sharding::Mesh& mesh, const sharding::LogicalRules& rules);

// "batch 4-way over data, mlp 2-way over model" ("nothing split" for one device).
std::string describe_splits(const sharding::Mesh& mesh, const sharding::LogicalRules& rules);

}  // namespace shardlab::advisor
