// What a checkpoint browser shows: the committed checkpoints under a root, newest last, each with
// its step, the metrics and mesh its metadata recorded, its size on disk and when it was written.
// Reads only checkpoint.json, never the tensors. A step that cannot be read is listed with the
// reason, never skipped: a resume must not fall back silently to an older step.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace shardlab::checkpoint {

struct Entry {
  std::filesystem::path dir;
  int64_t step = 0;
  nlohmann::ordered_json meta;  // checkpoint.json; {"error": ...} when it could not be read
  std::string error;            // why the step cannot be read; empty when it can
  double bytes = 0;             // every file of the directory
  std::filesystem::file_time_type written{};
};

// Committed checkpoints under `root`, by step, and step directories that cannot be examined or whose
// checkpoint.json or tensor files are unreadable (with `error` set), and committed steps that an
// interrupted save left under a temporary name (`error` says so; recovery.h); an unreadable root
// gives an empty list.
std::vector<Entry> list(const std::filesystem::path& root);

// (step, directory) of every committed checkpoint under `root`, by step; a missing root gives none.
std::vector<std::pair<int64_t, std::filesystem::path>> committed(const std::filesystem::path& root);

// "step_000123" -> 123; -1 for anything else (temporaries of interrupted saves included).
int64_t step_of(const std::filesystem::path& dir);

}  // namespace shardlab::checkpoint
