// A Shardlab project (*.shardlab.json): the layer graph, loss, optimizer, data source, training
// settings, and the mesh and logical axis rules. Loading validates everything and reports errors by
// file, node or field, and reason; saving writes back what was loaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/data/data_spec.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph.h"
#include "engine/project/optimizer_spec.h"
#include "engine/project/precision_spec.h"

namespace shardlab::project {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kFormatName = "shardlab.project";

struct LossSpec {
  std::string type;    // softmax_cross_entropy | mean_squared_error
  std::string output;  // the node whose output is the prediction
};

// Where and how often a run saves checkpoints (the training section's optional `checkpoint`).
struct CheckpointSpec {
  std::string dir;         // as written: relative paths are relative to the project file's folder
  int64_t save_every = 0;  // 0: only at the end of the run
  int64_t keep = 3;        // the newest this many are kept
};

struct TrainingSpec {
  int64_t batch_size = 32;
  int64_t epochs = 1;  // used when steps == 0
  int64_t steps = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t prefetch = 2;
  // Gradient accumulation (Optax's MultiSteps): each step runs the batch as this many equal
  // microbatches, one after another, and applies one update with the mean of their gradients.
  int64_t accumulate = 1;
  // How pipeline stages (a rule layer=<mesh axis>) order the microbatches: "1f1b" or "gpipe".
  std::string pipeline_schedule = "1f1b";
  bool eval = true;  // evaluate on the test split after each epoch and at the end
  std::optional<CheckpointSpec> checkpoint;  // absent: runs save no checkpoints unless told to
};

struct Project {
  std::string name;
  std::string description;
  graph::Graph graph;
  LossSpec loss;
  OptimizerSpec optimizer;
  data::DataSpec data;
  TrainingSpec training;
  PrecisionSpec precision;
  // Sections kept as written, so saving gives back the file that was read (precision_json is null
  // when the file has no precision section).
  graph::Json loss_json, optimizer_json, data_json, training_json, precision_json;
  graph::Json mesh = nullptr;                       // filled by the sharding work
  graph::Json logical_axis_rules = graph::Json::array();
  // What a constrained output's logical name without a rule means: "unsharded" (the default),
  // "error" or "no_constraint", as Flax's RulesFallback.
  std::string constraint_fallback;
  // The editor's own state (node positions, ...), kept as written; the engine never reads it.
  graph::Json editor = nullptr;
  std::filesystem::path file;                       // where it was loaded from (relative data paths resolve here)

  // What messages start with: the file's name, else the project's, else "untitled project" (an
  // error never starts with a bare ": ").
  std::string display_name() const {
    return !file.empty() ? file.filename().string() : !name.empty() ? name : std::string("untitled project");
  }
};

// Full: everything must hold, the graph included. Structure: the file must be well formed, but a
// graph with shape errors or a loss output naming no node loads, so an editor can show and fix them.
enum class Validation { Full, Structure };

// Parses and validates; every error starts with `filename`. Malformed JSON reports line and column.
Project parse_project(const std::string& text, const std::string& filename, Validation v = Validation::Full);
Project load_project(const std::filesystem::path& file, Validation v = Validation::Full);

// File > New: no nodes, no loss output yet, Adam, and a small synthetic data set, so that the
// first Input and Dense placed can be trained at once.
Project blank_project();

std::string to_json_string(const Project& p);
// A graph (or a Repeat's body) as the project file writes it, and back; errors start with `where`.
graph::Json graph_to_json(const graph::Graph& g, bool body);
graph::Graph graph_from_json(const graph::Json& j, const std::string& where, bool body);
// Writes atomically (a temporary file renamed over the target), so a failed save loses nothing.
void save_project(const Project& p, const std::filesystem::path& file);

// The checkpoint folder the project names, resolved against the project file's folder (the working
// directory for an unsaved project); empty when it names none.
std::filesystem::path checkpoint_dir(const Project& p);

// Shape inference over the graph at the training batch size; errors name file and node.
graph::GraphReport analyze_project(const Project& p);

}  // namespace shardlab::project
