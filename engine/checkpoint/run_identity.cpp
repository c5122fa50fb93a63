#include "engine/checkpoint/run_identity.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/regular_file.h"
#include "engine/util/atomic_file.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"
#include "engine/util/json_limits.h"
#include "engine/util/strings.h"

namespace shardlab::checkpoint {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// run.json holds an identity and an optimizer section: a few hundred bytes.
constexpr uint64_t kMaxRunFileBytes = uint64_t(1) << 20;

std::string hex64(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", (unsigned long long)v);
  return s;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return s;
}

// Fields read from run.json, cut short: a message must not carry a megabyte "run_id".
std::string describe(const RunIdentity& id) {
  return "run " + util::excerpt(id.run_id) + " of project '" + util::excerpt(id.project) + "' (model " +
         util::excerpt(id.model_hash) + ", started " + util::excerpt(id.created) + ")";
}

// The old run's steps, identity and leftovers of its interrupted saves go into old-run-<id>/ (a
// fresh name if that exists): a user's checkpoints are moved, never deleted.
fs::path move_aside(const fs::path& root, const std::optional<RunIdentity>& old) {
  const std::string base = "old-run-" + (old ? old->run_id : std::string("unknown"));
  fs::path dest = root / base;
  for (int i = 2; fs::exists(dest); ++i) dest = root / (base + "-" + std::to_string(i));
  std::error_code ec;
  fs::create_directory(dest, ec);
  if (ec) throw Error(dest.string() + ": cannot create it to move the old run's checkpoints into: " + ec.message());
  std::vector<fs::path> moving;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 || n == kRunFile) moving.push_back(e.path());
  }
  if (ec) throw Error(root.string() + ": cannot list it: " + ec.message());
  for (const fs::path& p : moving) {
    fs::rename(p, dest / p.filename(), ec);
    if (ec) throw Error(p.string() + ": cannot move it into " + dest.string() + ": " + ec.message());
  }
  return dest;
}

}  // namespace

RunIdentity identity_of(const project::Project& p) {
  RunIdentity id;
  std::random_device rd;
  id.run_id = hex64((uint64_t(rd()) << 32) ^ uint64_t(rd()));
  id.project = p.name.empty() ? p.display_name() : p.name;
  // The graph and the loss decide which arrays a checkpoint holds and what they mean; the editor's
  // layout, the data and the training settings do not.
  const Json j = Json::parse(project::to_json_string(p));
  id.model_hash = hex64(util::hash_name(j.value("graph", Json()).dump() + "\n" + j.value("loss", Json()).dump()));
  id.seed = p.training.seed;
  id.optimizer = p.optimizer_json;
  id.created = utc_now();
  return id;
}

std::optional<RunIdentity> read_identity(const fs::path& root) {
  const fs::path file = root / kRunFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  // As every loader: a regular file of sane size and nesting (a FIFO in its place never blocks).
  Json j;
  try {
    j = util::parse_json_limited(read_small_file(file, kMaxRunFileBytes), file.string());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (move it aside to use this directory)");
  }
  if (!j.is_object()) throw Error(file.string() + ": not a JSON object (move it aside to use this directory)");
  auto text = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string()) throw Error(file.string() + ": " + key + ": missing or not a string");
    return j[key].get<std::string>();
  };
  if (text("format") != "shardlab.run") throw Error(file.string() + ": format: expected \"shardlab.run\"");
  RunIdentity id;
  id.run_id = text("run_id");
  // It names old-run-<id>/ on --start-over and appears in messages: a name, not arbitrary text.
  const bool plain = !id.run_id.empty() && id.run_id.size() <= 64 &&
                     std::all_of(id.run_id.begin(), id.run_id.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '-' || c == '_'; });
  if (!plain)
    throw Error(file.string() + ": run_id: '" + util::excerpt(id.run_id) + "' is not a run id (16 hex digits; move the file aside to use this directory)");
  id.project = text("project");
  id.model_hash = text("model_hash");
  id.created = text("created");
  if (!j.contains("seed") || !j["seed"].is_number_unsigned()) throw Error(file.string() + ": seed: missing or not a whole number >= 0");
  id.seed = j["seed"].get<uint64_t>();
  id.optimizer = j.value("optimizer", Json());
  return id;
}

void write_identity(const fs::path& root, const RunIdentity& id) {
  Json j;
  j["format"] = "shardlab.run";
  j["version"] = 1;
  j["run_id"] = id.run_id;
  j["project"] = id.project;
  j["model_hash"] = id.model_hash;
  j["seed"] = id.seed;
  j["optimizer"] = id.optimizer;
  j["created"] = id.created;
  util::write_file_atomically(root / kRunFile, j.dump(2) + "\n");
}

DirectoryLock::DirectoryLock(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(root.string() + ": cannot create the checkpoint directory: " + ec.message());
  const fs::path file = root / kLockFile;
  file_ = file;
  for (int attempt = 0;; ++attempt) {
    // O_NOFOLLOW: a link in the lock file's place would lock whatever it leads to.
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(file.string() + ": cannot open the lock file: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) break;  // held by another run: said below, with errno
    struct stat mine {}, there {};
    if (::fstat(fd_, &mine) == 0 && ::stat(file.c_str(), &there) == 0 && mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
      break;  // locked, and still the file of that name
    ::close(fd_);
    fd_ = -1;
    if (attempt >= 10) throw Error(file.string() + ": the lock file keeps being replaced; another program is renaming over it");
  }
  // Taking it again on the same descriptor succeeds where the loop took it; else errno says why not.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw Error(file.string() + ": cannot lock: " + std::strerror(err));
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    throw Error(root.string() + ": another training run" + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                " is writing checkpoints into this directory; wait for it to end or choose another checkpoint directory");
  }
  // Only for the message above: the lock itself is the flock, which dies with the process.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // An unrecorded pid only makes the other process's message less specific.
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

void DirectoryLock::check_held() const {
  struct stat mine {}, there {};
  if (::fstat(fd_, &mine) != 0 || ::lstat(file_.c_str(), &there) != 0 || mine.st_dev != there.st_dev || mine.st_ino != there.st_ino)
    throw Error(file_.string() + ": the lock file this run holds was replaced or removed, so another run may be writing "
                "checkpoints here too; stopped before removing anything");
}

std::string Occupant::describe() const {
  return owner ? shardlab::checkpoint::describe(*owner) : std::string("a run without a run.json (written by an older Shardlab?)");
}

Occupant occupant(const fs::path& root) { return Occupant{read_identity(root), list(root)}; }

Claim claim_directory(const fs::path& root, const RunIdentity& mine, ExistingRun what) {
  Claim c;
  const Occupant here = occupant(root);
  const std::optional<RunIdentity>& old = here.owner;
  const std::vector<Entry>& steps = here.steps;
  const bool has_steps = !steps.empty();
  const std::string other = here.describe();
  if (what == ExistingRun::Continue) what = has_steps ? ExistingRun::Resume : ExistingRun::Refuse;

  if (what == ExistingRun::Refuse && has_steps)
    throw Error(root.string() + ": the directory holds checkpoints of " + other + ", newest step " +
                std::to_string(steps.back().step) + "; continue that run (--continue or --resume), move its steps into old-run-" +
                (old ? old->run_id : std::string("unknown")) + "/ and start a new one (--start-over), or choose another checkpoint directory");
  if (what == ExistingRun::StartOver && (has_steps || old)) c.moved_to = move_aside(root, old);
  if (what == ExistingRun::Resume) {
    if (!has_steps) throw Error(root.string() + ": no committed checkpoint to resume from");
    c.resume = true;
    if (old) {
      if (old->model_hash != mine.model_hash)
        throw Error(root.string() + ": its checkpoints are from " + describe(*old) + ", whose model differs from project '" +
                    mine.project + "' (model " + mine.model_hash + "); resume with the project that wrote them, or start over (--start-over)");
      if (old->seed != mine.seed)
        c.warnings.push_back(root.string() + ": continuing run " + old->run_id + " with seed " + std::to_string(mine.seed) +
                             " (it started with seed " + std::to_string(old->seed) + ")");
      if (!old->optimizer.is_null() && old->optimizer != mine.optimizer)
        c.warnings.push_back(root.string() + ": continuing run " + old->run_id + " with optimizer " + mine.optimizer.dump() +
                             " (it started with " + old->optimizer.dump() + ")");
      return c;  // the run goes on under its own identity
    }
  }
  write_identity(root, mine);
  return c;
}

}  // namespace shardlab::checkpoint
