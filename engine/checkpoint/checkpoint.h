// Checkpoint directories: <root>/step_000123/ holding model.safetensors, or its shards and their
// index (engine/checkpoint/sharded.h) when saved with a maximum shard size (parameters as
// "params/<path>", optimizer state as "opt_state/<mu|nu|trace>/<path>", always as whole global
// arrays, so they load onto any mesh) and checkpoint.json (project, step, data position, mesh,
// rules, every array's PartitionSpec). A save is written under a temporary name, flushed, marked
// committed, and renamed; a step that already exists is swapped with its replacement in one
// rename (recovery.h names the temporaries): a process killed at any point leaves the newest
// committed checkpoint loadable, under its own name, and no half-written one that loads.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded.h"
#include "engine/tensor/tensor.h"

namespace shardlab::checkpoint {

inline constexpr const char* kTensorsFile = "model.safetensors";
inline constexpr const char* kMetaFile = "checkpoint.json";
inline constexpr const char* kCommitFile = "COMMITTED";

std::filesystem::path step_dir(const std::filesystem::path& root, int64_t step);

// The dtype each tensor is written in where it is not F32 (a bfloat16 parameter is kept as BF16).
using StoredDTypes = std::map<std::string, StoredDType>;

// Writes <root>/step_<step>/ atomically. `meta` gets "step" added (and "format" and "version" when
// absent) and is checked against checkpoint.json's schema (checkpoint_meta.h) before anything is
// written; every tensor file gets per-tensor CRC32C checksums and the step in its __metadata__. max_shard_bytes > 0 splits the
// tensors over model-0000K-of-0000N.safetensors files of at most that much tensor data each, plus
// model.safetensors.index.json (one model.safetensors when everything fits in one).
std::filesystem::path save(const std::filesystem::path& root, int64_t step,
                           const std::vector<std::pair<std::string, Tensor>>& arrays, nlohmann::ordered_json meta,
                           uint64_t max_shard_bytes = 0, const StoredDTypes& dtypes = {});

// The same for tensors already as stored (tensor_file(), which checked them): nothing is copied again.
std::filesystem::path save(const std::filesystem::path& root, int64_t step, SafetensorsFile tensors,
                           nlohmann::ordered_json meta, uint64_t max_shard_bytes = 0);

// save() in phases, for a checkpoint several processes write (two-phase, like Orbax): process 0
// begins it (meta completed and checked, the temporary directory made, whose path it returns),
// every process writes its part of the tensors into that directory (sharded.h: write_shard), and
// process 0 commits it once all have (the index, checkpoint.json, COMMITTED, the rename) or
// abandons it, which leaves the previous checkpoint the newest.
std::filesystem::path begin_save(const std::filesystem::path& root, int64_t step, nlohmann::ordered_json& meta);
std::filesystem::path commit_save(const std::filesystem::path& root, int64_t step, const std::filesystem::path& tmp,
                                  const nlohmann::ordered_json& meta);
void abandon_save(const std::filesystem::path& tmp);
// The arrays as the tensor file of a checkpoint of `step` holds them (before checksums).
SafetensorsFile tensor_file(const std::vector<std::pair<std::string, Tensor>>& arrays, int64_t step,
                            const StoredDTypes& dtypes = {});

// The newest committed checkpoint under `root`, if any.
std::optional<std::filesystem::path> latest(const std::filesystem::path& root);

struct Loaded {
  std::filesystem::path dir;
  int64_t step = 0;
  int64_t data_position = 0;  // checkpoint.json's, or `step` when it has none
  nlohmann::ordered_json meta;
  std::map<std::string, Tensor> arrays;     // widened to float32 whatever they were stored as
  std::map<std::string, StoredDType> dtypes;  // what each was stored as
};
// Reads a committed checkpoint directory in either layout; errors name the directory or file, the
// field or tensor, and the reason. Refused: a file changed since COMMITTED recorded its checksum,
// checkpoint.json off its schema (checkpoint_meta.h) or with a key twice, a step differing from the
// directory's name or the tensor files' __metadata__, a tensor failing its checksum or without one
// where the others have theirs, and a NaN or infinity in any array (a diverged run is not resumed
// silently).
Loaded load(const std::filesystem::path& dir);

// The same checks, the tensors kept as stored: what inspect and export read, so that they refuse
// whatever resume refuses.
struct CheckedModel {
  int64_t step = 0;
  int64_t data_position = 0;
  nlohmann::ordered_json meta;
  SafetensorsFile model;
  ModelFiles where;  // which file holds each tensor
  // A checkpoint of blocks (saved over processes): per array, its blocks and the files they are in.
  struct Blocks {
    int blocks = 0, files = 0;
  };
  std::map<std::string, Blocks> blocks;
};
CheckedModel read_checked(const std::filesystem::path& dir);

// A checkpoint saved over several processes holds blocks (blocks.h): its arrays and their global
// shapes, in the order checkpoint.json lists them; empty for a checkpoint of whole arrays. load()
// and read_checked() assemble such a checkpoint's whole arrays.
std::vector<std::pair<std::string, Shape>> block_arrays(const nlohmann::ordered_json& meta);

// What one process of a run restores from a checkpoint of blocks: only the blocks it wants (those
// overlapping its devices' parts), read and checked as load() checks everything, and the tiling of
// all of them checked from the files' headers.
struct LoadedBlocks {
  std::filesystem::path dir;
  int64_t step = 0;
  int64_t data_position = 0;
  nlohmann::ordered_json meta;
  std::vector<std::pair<std::string, Shape>> arrays;  // every array and its global shape
  std::vector<StoredTensor> blocks;                   // the blocks read
  std::map<std::string, StoredDType> dtypes;          // every array's stored dtype (its blocks share it)
  ModelFiles where;                                   // the files, and which holds each block
};
using BlockFilter = std::function<bool(const std::string& array, const Shape& start, const Shape& size)>;
LoadedBlocks load_blocks(const std::filesystem::path& dir, const BlockFilter& want);

// Whether the step directory holds a checkpoint saved over processes (its checkpoint.json lists
// blocks); false for one of whole arrays, and for one whose checkpoint.json cannot be read (the
// ordinary readers name what is wrong with it).
bool saved_over_processes(const std::filesystem::path& dir);

// A checkpoint as inspect lists it: every tensor read and checked as read_checked() checks it, but
// held one at a time (a checkpoint of blocks: one array's blocks at a time) and none kept.
struct ArraySummary {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  Shape shape;
  double bytes = 0;
  std::string file;           // the file holding it, where a checkpoint of whole arrays is sharded
  int blocks = 0, files = 0;  // a checkpoint of blocks: its blocks, and the files they are in
};
struct CheckpointSummary {
  int64_t step = 0;
  nlohmann::ordered_json meta;
  ModelFiles where;
  bool blocks = false;
  std::vector<ArraySummary> arrays;  // in the files' order, or (blocks) in checkpoint.json's
};
CheckpointSummary summarize(const std::filesystem::path& dir);

// Removes all but the newest `keep` committed checkpoints, and puts leftovers of interrupted saves
// right (recovery.h: recover()); call it as the directory's lock holder, with no save in flight.
void prune(const std::filesystem::path& root, int keep);

}  // namespace shardlab::checkpoint
