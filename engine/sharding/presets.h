// Ready-made sharding strategies: each sets a project's logical axis rules (and its mesh, where the
// strategy needs axes the mesh lacks) from the logical names the project uses, so applying one
// leaves no name without a rule. The GUI's rules table and `shardlab-cli --preset` share them.
#pragma once

#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"

namespace shardlab::sharding {

struct Preset {
  std::string id;           // "data_parallel", as --preset takes it
  std::string title;        // "Data parallel", as the GUI's menu shows it
  std::string description;  // what it shards
};

const std::vector<Preset>& presets();

// The logical axis names of every parameter, output and array made inside a layer of `g` (Repeat
// bodies included), in first-use order.
std::vector<std::string> logical_names_of(const graph::GraphReport& g);

// Replaces p's rules with preset `id` for a project using `names`; the mesh changes only where the
// preset needs it (a one-axis 'data' mesh, or 'data' x 'model'), keeping the device count when the
// mesh has more than one device (8 otherwise, the 2 x 4 mesh of seed 002). Throws Error for an
// unknown id, naming the presets there are.
void apply_preset(const std::string& id, const std::vector<std::string>& names, project::Project& p);

}  // namespace shardlab::sharding
