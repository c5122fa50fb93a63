// Everything `train` would refuse, found before anything is allocated, in the order a run meets
// it: the graph and its shapes, the loss's output node, the mesh (and the device count asked for),
// the logical axis rules (parsed, naming only axes the mesh has), every array's layout (indivisible
// dimensions, the constraint fallback), the training step's plan per device against the capacity of
// the device it would run on, and, when asked, the data source against the model. The trainer
// throws the first problem; `shardlab-cli check` prints them all; the editor's design check shows
// them: one function, so all three say the same thing.
#pragma once

#include <string>
#include <vector>

#include "engine/backends/backend.h"
#include "engine/project/project.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"
#include "engine/util/diagnostic.h"

namespace shardlab::runtime {

struct PreflightOptions {
  std::string mesh;   // "data=8": overrides the project's mesh
  std::string rules;  // "batch=data": overrides the project's logical axis rules
  int devices = 0;    // > 0: the mesh must have this many devices
  bool data = false;  // also read the data source (once per process) and check it against the model
  // The project's layouts under the same mesh and rules, where the caller has them already (the
  // editor's design check): their plan is used rather than partitioning the step again.
  const sharding::ShardingReport* layouts = nullptr;
};

struct Preflight {
  sharding::Mesh mesh;                // as resolved (the project's or the override), when it parsed
  sharding::LogicalRules rules;       // likewise
  std::vector<std::string> errors;    // each names the node, field, axis, array or file at fault
  std::vector<Diagnostic> problems;   // the same, as data (errors[i] is problems[i].message)
  int out_of_memory = -1;             // index in `errors` of the memory refusal, if any
  bool planned = false;               // the step was partitioned: the sizes below are set
  double need_bytes = 0;              // per device: parameters, optimizer state and the step's arena
  double capacity_bytes = 0;          // what each device of the mesh can hold
  // The training step as checked: built and partitioned for this mesh and rules (null where a
  // problem stopped that). A run hands it to its session rather than compiling it again.
  std::shared_ptr<const runtime::StepProgram> step;
  std::shared_ptr<const sharding::PartitionedStep> plan;
  bool ok() const { return errors.empty(); }
  // Throws the first problem as a run reports it (backends::OutOfMemory for the memory refusal).
  void throw_first() const;
};

// `p` with its batch size and other training overrides already applied; `backend` says what a
// device can hold.
Preflight preflight(const project::Project& p, const backends::Backend& backend, const PreflightOptions& options = {});

}  // namespace shardlab::runtime
