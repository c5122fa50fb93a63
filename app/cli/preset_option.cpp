// --preset NAME: one of the engine's ready-made strategies (sharding/presets, the same the GUI's
// rules table offers), turned into the --mesh and --rules it stands for, so every command then
// plans exactly as if the user had typed them.
#include "app/cli/commands.h"
#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/presets.h"
#include "engine/util/error.h"

namespace shardlab::cli {

void resolve_preset(const std::string& project_path, const std::string& preset, std::string& mesh, std::string& rules) {
  if (preset.empty()) return;
  if (!rules.empty())
    throw Error("--preset " + preset + " and --rules both set the logical axis rules: give one of them");
  project::Project p = project::load_project(project_path);
  // A mesh given beside the preset sets the device count (and keeps its axes where the preset can).
  if (!mesh.empty()) p.mesh = sharding::mesh_to_json(sharding::parse_mesh(mesh));
  sharding::apply_preset(preset, sharding::logical_names_of(project::analyze_project(p)), p);
  mesh = sharding::project_mesh(p).str();
  rules = sharding::rules_str(sharding::project_rules(p));
}

}  // namespace shardlab::cli
