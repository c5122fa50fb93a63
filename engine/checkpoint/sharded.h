// A model's tensors in a directory, in either layout Hugging Face uses:
//
//   model.safetensors                              everything in one file, or
//   model-00001-of-00003.safetensors ...           shards of at most a given size of tensor data, and
//   model.safetensors.index.json                   {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}
//
// The reader takes either and checks the index against the shards: every shard it names exists and
// holds the tensors it places there, no tensor is in two shards or missing from the index, no shard
// file lies beside the index unlisted, and total_size is the shards' tensor bytes. Every error names
// the file at fault. The index is read as the tensor files are: a regular file only, of bounded
// size and JSON nesting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"

namespace shardlab::checkpoint {

inline constexpr const char* kSingleFile = "model.safetensors";
inline constexpr const char* kIndexFile = "model.safetensors.index.json";

// "model-00002-of-00005.safetensors" (1-based `index`).
std::string shard_name(size_t index, size_t count);

// Writes f's tensors into `dir` (which must exist): one model.safetensors when max_shard_bytes is 0
// or all tensor data fits in it; else shards filled in f's tensor order, each holding at most
// max_shard_bytes of tensor data (a tensor larger than that gets a shard of its own, as Hugging
// Face's split does), every shard with f's metadata, then the index. Every file gets the CRC32C of
// each of its own tensors (add_checksums), which the reader verifies. Each file is written
// atomically; files of the other layout or of an earlier, different shard count left in `dir` are
// removed afterwards. Returns the file names written, index last.
std::vector<std::string> write_model(const std::filesystem::path& dir, SafetensorsFile f, uint64_t max_shard_bytes);

// The pieces write_model is made of, for a model several processes write (each its own shard):
// one shard file (`index` of `count`, 1-based) with its tensors' checksums, and the index naming
// the file of every tensor (in this order: readers list the files in the order they first appear)
// and the total bytes of tensor data. Returns the shard's file name.
std::string write_shard(const std::filesystem::path& dir, SafetensorsFile part, size_t index, size_t count);
void write_index(const std::filesystem::path& dir, const std::vector<std::pair<std::string, std::string>>& weight_map,
                 uint64_t total_size);

// Where read_model found each tensor.
struct ModelFiles {
  bool sharded = false;
  std::vector<std::string> files;               // model.safetensors, or the shards in index order
  std::map<std::string, std::string> file_of;   // tensor -> file name
};

// Reads `dir` in either layout, validating it as described above. Tensors come back file by file in
// `files` order, each file's in header order; the metadata is the first file's.
SafetensorsFile read_model(const std::filesystem::path& dir, ModelFiles* where = nullptr);
// The same, reading the data of only the tensors `want` accepts (the others come back `skipped`).
SafetensorsFile read_model(const std::filesystem::path& dir, ModelFiles* where, const TensorFilter& want);

// True if `dir` holds a model in either layout (it may still be invalid).
bool has_model(const std::filesystem::path& dir);

// "2GB" -> 2'000'000'000, "500MiB" -> 524'288'000, "4096" -> 4096: decimal (KB, MB, GB, TB) and
// binary (KiB, MiB, GiB, TiB) units as Hugging Face's max_shard_size, case-insensitive, optional B;
// a fraction is allowed with a unit ("1.5GB"). Throws Error quoting the text for anything else or 0.
uint64_t parse_size(const std::string& text);

}  // namespace shardlab::checkpoint
