// Whether a data source fits a model: each split's examples against the Input node, its targets
// against the loss (class labels within the output's classes for softmax_cross_entropy, the
// output's shape for mean_squared_error), and enough training examples for one batch. The trainer
// refuses a run with these messages; `check` and the editor's design check report the same ones first.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/data/data_probe.h"
#include "engine/project/project.h"

namespace shardlab::runtime {

// Every mismatch, one message each, naming the split, the node and both shapes. `input` and
// `output` are the model's global shapes (batch first) of its Input and of the loss's output node.
std::vector<std::string> data_fit_problems(const project::Project& p, const data::SourceShape& data, const Shape& input,
                                           const Shape& output);

// The folder a project's relative data paths resolve against: its file's folder, else ".".
std::filesystem::path data_base_dir(const project::Project& p);

}  // namespace shardlab::runtime
