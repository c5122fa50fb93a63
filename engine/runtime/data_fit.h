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
#include "engine/util/diagnostic.h"

namespace shardlab::runtime {

// Every mismatch, one problem each (code "data"): a sentence naming the split, the node and both
// shapes; the node at fault (the Input for examples, the loss's output node for labels and
// targets; none for a batch larger than the data, whose field is training.batch_size); and a fix.
// `input` and `output` are the model's global shapes (batch first) of its Input and of the loss's
// output node.
std::vector<Diagnostic> data_fit_problems(const project::Project& p, const data::SourceShape& data, const Shape& input,
                                          const Shape& output);

// The folder a project's relative data paths resolve against: its file's folder, else ".".
std::filesystem::path data_base_dir(const project::Project& p);

}  // namespace shardlab::runtime
