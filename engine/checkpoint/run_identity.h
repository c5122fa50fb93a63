// Who owns a checkpoint directory and who writes into it. The first run into an empty directory
// records its identity in run.json (a random id, the project, a hash of its model, seed and
// optimizer, when it started); a later run must say whether it continues that run or starts over,
// so steps of two runs never mix. A run holds an advisory lock on <dir>/.lock for its lifetime, so
// two processes never write one directory; the kernel drops it when the process exits or dies.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/listing.h"
#include "engine/project/project.h"

namespace shardlab::checkpoint {

inline constexpr const char* kRunFile = "run.json";
inline constexpr const char* kLockFile = ".lock";

struct RunIdentity {
  std::string run_id;      // 16 hex digits, random
  std::string project;     // the project's name
  std::string model_hash;  // of the model-defining JSON (graph and loss): equal hashes, same arrays
  uint64_t seed = 0;
  nlohmann::ordered_json optimizer;  // the project's optimizer section, learning rate included
  std::string created;     // UTC, ISO 8601
};

// A new identity for a run of `p` (a fresh random id).
RunIdentity identity_of(const project::Project& p);
// <root>/run.json, or nothing when there is none; errors name the file and field.
std::optional<RunIdentity> read_identity(const std::filesystem::path& root);
void write_identity(const std::filesystem::path& root, const RunIdentity& id);

// flock(LOCK_EX | LOCK_NB) on <root>/.lock, which records the holder's pid. Throws Error naming the
// directory and the other process when another run holds it. Released by the destructor.
// The lock is on the file's inode, so a lock is only taken once <root>/.lock is still the file
// that was locked (a rename over it between the open and the lock would otherwise let two runs
// each lock a file of that name); and check_held() says whether it still is, before the holder
// deletes anything.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& root);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  // Throws Error naming the lock file when <root>/.lock is no longer the file this run locked
  // (replaced or removed): another run may then be writing here too.
  void check_held() const;

 private:
  std::filesystem::path file_;
  int fd_ = -1;
};

// What a new run into `root` meets: the run that owns it (when run.json says) and its steps,
// unreadable ones included. Both the trainer's claim and the GUI's question go by this.
struct Occupant {
  std::optional<RunIdentity> owner;
  std::vector<Entry> steps;  // by step; empty: the directory is free
  std::string describe() const;  // "run <id> of project '<p>' (model <hash>, started <t>)"
};
Occupant occupant(const std::filesystem::path& root);

// What a run into a directory that may hold another run's steps was told to do.
enum class ExistingRun {
  Refuse,     // a fresh run: refuse a directory holding committed steps
  Resume,     // continue the run there (its steps must exist; the model must match)
  Continue,   // as Resume when there are steps, as a fresh run when there are none
  StartOver,  // move the old run's steps and identity into old-run-<id>/, then start afresh
};

struct Claim {
  bool resume = false;                // continue from the directory's newest step
  std::vector<std::string> warnings;  // settings that differ from the run being continued
  std::filesystem::path moved_to;     // StartOver: where the old run went (empty if nothing moved)
};

// Applies `what` to `root` for a run identified by `mine`, under the caller's DirectoryLock: refuses
// with a message naming the directory, the other run and its newest step; writes run.json for a new
// run; checks a continued run's model hash (refused when it differs) and warns on seed/optimizer.
Claim claim_directory(const std::filesystem::path& root, const RunIdentity& mine, ExistingRun what);

}  // namespace shardlab::checkpoint
