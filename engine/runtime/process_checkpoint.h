// Checkpoints of a run over several processes, as Orbax saves them: each process writes only the
// blocks its own devices hold (checkpoint/blocks.h), into a tensor file of its own, and restores
// by reading only the blocks that overlap its devices' parts under the mesh it runs now (any
// process count, mesh or rules). No array is ever gathered whole, so save and restore traffic and
// host memory grow with a process's share of the model, not with the model. Every process must
// see the checkpoint directory (a shared file system), as every process writes into it.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backends/processes.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/runtime/spmd_session.h"

namespace shardlab::runtime {

// One array of the training state as a checkpoint names it ("params/...", "opt_state/..."): the
// session's global value and the dtype it is stored in.
struct StateArray {
  std::string name;
  int value = 0;
  checkpoint::StoredDType stored = checkpoint::StoredDType::F32;
};

// Saves step `step` in two phases: process 0 begins it, every process writes its blocks, process 0
// commits (the index, checkpoint.json with "blocks", COMMITTED) and then runs `after_commit` with
// the step's directory. Any process's failure abandons the save, leaving the previous checkpoint the
// newest, and every process throws the same Error naming the process at fault.
void save_blocks(SpmdSession& session, backends::Processes& procs, const std::vector<StateArray>& arrays,
                 const std::filesystem::path& root, int64_t step, nlohmann::ordered_json meta,
                 const std::function<void(const std::filesystem::path&)>& after_commit);

// True where `dir`'s checkpoint.json lists blocks (a checkpoint saved over processes); false for
// one of whole arrays, or where it cannot be read (load() then says why).
bool holds_blocks(const std::filesystem::path& dir);

// Restores every array of `arrays` onto this process's devices from a checkpoint of blocks,
// reading only the blocks its devices need. Every process throws the same Error when one fails (a
// missing array, another shape, a corrupt block). Returns what was read, without the blocks.
checkpoint::LoadedBlocks restore_blocks(SpmdSession& session, backends::Processes& procs, const std::vector<StateArray>& arrays,
                                        const std::filesystem::path& dir);

}  // namespace shardlab::runtime
