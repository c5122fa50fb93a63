// What a killed checkpoint writer leaves behind, and putting it right. Beside step_NNNNNN/ a writer
// uses temporary names (all holding ".tmp-", so listing.h never takes one for a step):
//   step_N.tmp-<pid>      a save being built, or, after an atomic swap, the replaced checkpoint on its
//                         way out; never committed under this name, never restored
//   step_N.tmp-old-<pid>  step N's committed checkpoint, moved aside whole while its replacement is
//                         renamed in (only where the file system cannot swap two directories)
//   step_N.tmp-del-<pid>  a checkpoint being deleted, possibly half gone; never restored
// and <file>.saving-<pid>-<n> for a file being replaced (util::write_file_atomically).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace shardlab::checkpoint {

enum class TempKind { Building, Displaced, Deleting };

// <step_dir>.tmp-<pid>, .tmp-old-<pid> or .tmp-del-<pid>, with this process's pid.
std::filesystem::path temp_path(const std::filesystem::path& step_dir, TempKind kind);

struct Leftover {
  std::filesystem::path path;
  int64_t step = -1;        // -1 for a file that is no step's (run.json.saving-...)
  TempKind kind = TempKind::Building;
  bool restorable = false;  // a displaced committed checkpoint whose step has no committed directory
};

// Everything under `root` that an interrupted writer left, by name; reads only. A missing root has none.
std::vector<Leftover> leftovers(const std::filesystem::path& root);

// Why a restorable leftover matters, for listings and loaders: names it, its step and what to do.
std::string describe_restorable(const Leftover& l);

// Puts `root` right after a writer died: renames each restorable displaced checkpoint back to its
// step (the newest one by name when there are several), removes every other leftover. Call only
// under the directory's lock (run_identity.h) with no save of this process in flight: every
// temporary is then a dead writer's. Returns one line per restored step; throws Error naming the
// path when a rename or removal fails.
std::vector<std::string> recover(const std::filesystem::path& root);

}  // namespace shardlab::checkpoint
