// Which mesh and rules to use for a project on N devices, ranked before anything runs: every
// factorization of N into a mesh, under each strategy (data parallel, FSDP, Megatron tensor
// parallel, seed 002's 2-D rules, pipeline stages over a Repeat's layers with data parallelism
// beside them, and the project's own), partitioned for real. A candidate's memory
// per device is its partitioned step's buffer plan (the same report the design check reads), so the
// advisor and a run cannot disagree on what fits; its step time is predicted (advisor/step_cost).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/advisor/hardware.h"
#include "engine/advisor/step_cost.h"
#include "engine/project/project.h"

namespace shardlab::advisor {

struct Candidate {
  // What it does: "data parallel", "FSDP", "Megatron", "2-D (hidden -> model)", "pipeline", "the
  // project's own", "one device"; "Megatron (60 of 64 devices)" where the model's heads or widths
  // divide by no model-axis size that divides the devices, and a mesh of fewer devices does.
  std::string strategy;
  std::string mesh;      // "data=2,model=4" (as --mesh takes it; "" for one device)
  std::string rules;     // "batch=data,mlp=model,..." (as --rules takes it)
  // A pipeline (rules with layer=stage) runs each batch as this many microbatches, which applying
  // the candidate sets as training.accumulate; 0 for every other strategy (the project's own).
  int64_t microbatches = 0;
  std::string error;     // why this layout cannot run (a dimension its mesh does not divide); "" when it can
  bool fits = false;               // its plan fits each device's memory
  double bytes_per_device = 0;     // the plan's: parameters, optimizer state and step arena
  double capacity_bytes = 0;       // what each of its devices can hold
  Prediction prediction;           // when it can run
  bool runs() const { return error.empty(); }
};

// Ranked best first: candidates that fit by predicted step time, then those that do not fit, then
// those that cannot run, each group in its own order. `capacity_per_device` is what one device of
// an N-device mesh can hold.
std::vector<Candidate> advise(const project::Project& p, int64_t devices, const Hardware& hw, double capacity_per_device);

}  // namespace shardlab::advisor
