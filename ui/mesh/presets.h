// Ready-made sharding strategies for the rules table: each sets the logical axis rules (and the
// mesh, where the strategy needs axes the mesh lacks) from the logical names the project uses, so
// applying one leaves no name without a rule.
#pragma once

#include <QString>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

struct MeshPreset {
  QString id;           // "data_parallel"
  QString title;        // "Data parallel", as the menu shows it
  QString description;  // what it shards, for the tooltip
};

const std::vector<MeshPreset>& meshPresets();

// The logical axis names of every parameter and output of `g` (Repeat bodies included), in
// first-use order.
std::vector<std::string> logicalNamesOf(const graph::GraphReport& g);

// Replaces p's rules with preset `id` for a project using `names`; the mesh changes only where the
// preset needs it (a one-axis 'data' mesh, or 'data' x 'model'), keeping the device count when it
// can. Throws Error for an unknown id.
void applyPreset(const QString& id, const std::vector<std::string>& names, project::Project& p);

}  // namespace shardlab::ui
