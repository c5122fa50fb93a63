// checkpoint.json's schema, checked on save and on load so that a resumed run never starts from a
// value it cannot use. Fields (types are JSON's):
//
//   format         "shardlab.checkpoint"                          required
//   version        integer 1 .. kMetaVersion                      required; a newer one is refused
//   step           integer 0 .. kMaxStep                          required; equals the directory's
//                                                                 step_NNNNNN and the safetensors
//                                                                 "__metadata__" step
//   data_position  integer 0 .. kMaxStep (the batch stream position to resume at)
//   seed           non-negative integer
//   project        object (the project the checkpoint trained)
//   mesh           string
//   shardings      object of array name -> PartitionSpec string
//   metrics        object of name -> number
//   blocks         object of array name -> its shape (array of non-negative integers); version 2
//                  only: the tensor files hold blocks (blocks.h), written by several processes
//
// Version 1 is a checkpoint of whole arrays; version 2 one of blocks (an older build, which
// would not know what to do with its tensors, refuses it as too new).
//
// Other keys are kept and not checked (a later build of this version may add some). Every error
// names the file and the field: "<dir>/checkpoint.json: data_position: -100 is negative ...".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace shardlab::checkpoint {

inline constexpr const char* kMetaFormat = "shardlab.checkpoint";
inline constexpr int64_t kMetaVersion = 2;
inline constexpr int64_t kMetaVersionWhole = 1;   // whole arrays
inline constexpr int64_t kMetaVersionBlocks = 2;  // blocks written by several processes
// Steps and positions stay exact in a double (JSON readers in other languages), and far from
// overflowing anything that adds to them.
inline constexpr int64_t kMaxStep = int64_t(1) << 53;

struct MetaFields {
  int64_t step = 0;
  int64_t data_position = 0;  // `step` when the file has none
};

// Checks `meta` against the schema; `dir_step` is the step the directory's name says, or -1 when
// its name is not step_NNNNNN. `file` starts every message.
MetaFields validate_meta(const nlohmann::ordered_json& meta, const std::string& file, int64_t dir_step);

// Reads, depth-limits, parses and validates checkpoint.json (a regular file of bounded size).
nlohmann::ordered_json read_meta(const std::filesystem::path& file, int64_t dir_step, MetaFields& fields);

// The step a directory named step_NNNNNN stands for, or -1 for any other name.
int64_t step_from_dir_name(const std::filesystem::path& dir);

}  // namespace shardlab::checkpoint
