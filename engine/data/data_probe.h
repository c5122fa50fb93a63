// What a project's data source holds, per example, without keeping the data: enough to check a
// model against it before a run (the CLI's check, the editor's design check on every edit).
#pragma once

#include <cstdint>
#include <filesystem>

#include "engine/data/data_spec.h"
#include "engine/data/dataset.h"

namespace shardlab::data {

// One split: its example count and the shapes of one example's features and targets.
struct SplitShape {
  int64_t examples = 0;
  Shape features;  // per example, e.g. [28, 28]
  Shape targets;   // per example: [] for class labels
  bool integer_labels = false;
  int64_t num_classes = 0;  // when integer_labels
};

struct SourceShape {
  SplitShape train, test;  // test.examples == 0: no test split
};

SplitShape shape_of(const Dataset& ds);

// The shapes of the source `spec` names, as load_dataset would give them. Synthetic sources are
// described from the spec alone; IDX sources (Fashion-MNIST's too) from their images' headers and
// their labels, without decoding the images; npy sources are loaded once. Answers are remembered
// per process (keyed by the spec and its files' sizes and times). Throws Error as load_dataset
// does: a missing or unreadable file named, with the Debian package for Fashion-MNIST. Thread-safe.
SourceShape probe_dataset(const DataSpec& spec, const std::filesystem::path& base_dir);

}  // namespace shardlab::data
