// Which mesh and rules to use for a project on N devices, ranked before anything runs: every
// factorization of N into a mesh, under each named strategy (data parallel, FSDP, Megatron tensor
// parallel, 2-D rules over 'hidden', pipeline stages over a Repeat's layers with data parallelism
// beside them, and the project's own), and the layouts a search over the model's own logical axes
// finds faster than those (engine/advisor/search.h), partitioned for real. A candidate's memory
// per device is its partitioned step's buffer plan (the same report the design check reads), so the
// advisor and a run cannot disagree on what fits; its step time is predicted (advisor/step_cost).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/advisor/hardware.h"
#include "engine/advisor/search.h"
#include "engine/advisor/step_cost.h"
#include "engine/project/project.h"

namespace shardlab::advisor {

struct Candidate {
  // What it does: "data parallel", "FSDP", "Megatron", "2-D (hidden -> model)", "pipeline", "the
  // project's own", "one device"; "Megatron (60 of 64 devices)" where the model's heads or widths
  // divide by no model-axis size that divides the devices, and a mesh of fewer devices does.
  // "searched" for a layout the search found that no strategy spells.
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
  std::string splits;              // "batch 4-way over data, mlp 2-way over model"
  // What each device sends or receives per step, in all and by collective ("all_reduce", ...).
  double moved_bytes = 0;
  int64_t collectives = 0;
  std::map<std::string, double> moved_by_kind;
  double bound_s = 0;  // a searched layout's lower bound on its step (0 for a strategy's)
  bool runs() const { return error.empty(); }
};

struct AdviseOptions {
  bool search = true;
  int64_t max_partitions = 300;  // the search partitions at most this many layouts
  int64_t shown = 8;             // searched layouts listed beside the strategies (the fastest)
  int max_axes = 5;              // parameter axes the search assigns (the heaviest)
  bool prune_by_bound = true;    // false: partition every survivor (to check the bound prunes nothing better)
  // Called as the search partitions: layouts partitioned so far, and how many passed the pruning.
  std::function<void(int64_t done, int64_t survivors)> progress;
};

// How a search went: what it pruned and why, and how much it partitioned.
struct SearchSummary {
  SearchCounts counts;
  int64_t survivors = 0;         // layouts left after pruning
  int64_t partitioned = 0;       // of them, partitioned and predicted
  int64_t failed = 0;            // of those, refused by the partitioner
  int64_t past_bound = 0;        // not partitioned: their bound was no better than the best step found
  int64_t past_limit = 0;        // not partitioned: AdviseOptions::max_partitions was reached
  int64_t same_as_strategy = 0;  // partitioned layouts a named strategy already is
  double seconds = 0;
};

// Ranked best first: candidates that fit by predicted step time, then those that do not fit, then
// those that cannot run, each group in its own order. `capacity_per_device` is what one device of
// an N-device mesh can hold.
std::vector<Candidate> advise(const project::Project& p, int64_t devices, const Hardware& hw, double capacity_per_device,
                              const AdviseOptions& options = {}, SearchSummary* summary = nullptr);

// Why a candidate is what it is, in a few sentences: what it splits, what it moves per step, what
// bounds its step and its memory per device.
std::string explain(const Candidate& c);
// How a search went, in one line ("Searched batch, mlp on 3 meshes: ...").
std::string describe(const SearchSummary& s);

}  // namespace shardlab::advisor
