// What an editor shows of a project's data source before any model uses it: each split's example
// count, shapes and label kind, read as the trainer would read them (data::probe_dataset), or the
// error that reading gives (a missing folder, a file that is not IDX). It never throws.
#pragma once

#include <string>

#include "engine/data/data_probe.h"
#include "engine/project/project.h"

namespace shardlab::api {

struct DataSummary {
  bool ok = false;
  data::SourceShape shape;  // when ok
  std::string error;        // when not: the message a run would give, naming the file or field
  // One line for people: "60,000 training examples of (28, 28) with class labels 0-9; 10,000 test
  // examples", or the error.
  std::string text;
};

// Relative paths resolve against the project file's folder, as a run's do. Cheap to repeat: the
// probe remembers each source by its spec and its files' sizes and times.
DataSummary describe_data(const project::Project& p);

}  // namespace shardlab::api
