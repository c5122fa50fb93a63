#include "engine/checkpoint/recovery.h"

#include <algorithm>
#include <fcntl.h>
#include <map>
#include <unistd.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/util/error.h"

namespace shardlab::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffixes[] = {".tmp-", ".tmp-old-", ".tmp-del-"};

// "step_000002.tmp-old-77" -> step 2, Displaced; false for any other name.
bool parse_temp_name(const std::string& name, int64_t& step, TempKind& kind) {
  const size_t at = name.find(".tmp-");
  if (at == std::string::npos) return false;
  step = step_of(name.substr(0, at));
  if (step < 0) return false;
  const std::string rest = name.substr(at);
  kind = rest.rfind(".tmp-old-", 0) == 0   ? TempKind::Displaced
         : rest.rfind(".tmp-del-", 0) == 0 ? TempKind::Deleting
                                           : TempKind::Building;
  return true;
}

bool is_committed_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::exists(dir / kCommitFile, ec) && fs::exists(dir / kMetaFile, ec);
}

void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

fs::path temp_path(const fs::path& step_dir, TempKind kind) {
  fs::path p = step_dir;
  p += kSuffixes[int(kind)] + std::to_string(::getpid());
  return p;
}

std::vector<Leftover> leftovers(const fs::path& root) {
  std::vector<Leftover> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    Leftover l;
    l.path = e.path();
    if (parse_temp_name(n, l.step, l.kind)) out.push_back(l);
    else if (n.find(".saving-") != std::string::npos) out.push_back(l);  // step -1
  }
  std::sort(out.begin(), out.end(), [](const Leftover& a, const Leftover& b) { return a.path < b.path; });
  // A displaced checkpoint is only worth restoring when nothing committed holds its step now.
  std::map<int64_t, bool> step_taken;
  for (Leftover& l : out) {
    if (l.kind != TempKind::Displaced || l.step < 0 || !is_committed_dir(l.path)) continue;
    bool& taken = step_taken.try_emplace(l.step, is_committed_dir(step_dir(root, l.step))).first->second;
    if (!taken) l.restorable = taken = true;  // the first by name; any other one of the step is stale
  }
  return out;
}

std::string describe_restorable(const Leftover& l) {
  return l.path.string() + ": step " + std::to_string(l.step) +
         "'s committed checkpoint, moved aside by a save that was interrupted while replacing it; the next "
         "training run into this directory (e.g. shardlab-cli train --continue) puts it back";
}

std::vector<std::string> recover(const fs::path& root) {
  std::vector<std::string> restored;
  for (const Leftover& l : leftovers(root)) {
    std::error_code ec;
    if (l.restorable) {
      const fs::path dest = step_dir(root, l.step);
      fs::rename(l.path, dest, ec);
      if (ec) throw Error(l.path.string() + ": cannot restore it as " + dest.string() + ": " + ec.message());
      restored.push_back(dest.string() + ": restored step " + std::to_string(l.step) +
                         "'s committed checkpoint, which an interrupted save had moved aside");
      continue;
    }
    fs::remove_all(l.path, ec);
    if (ec) throw Error(l.path.string() + ": cannot remove this leftover of an interrupted save: " + ec.message());
  }
  if (!restored.empty()) sync_dir(root);
  return restored;
}

}  // namespace shardlab::checkpoint
