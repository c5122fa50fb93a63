#include "engine/checkpoint/listing.h"

#include "engine/checkpoint/regular_file.h"
#include "engine/util/json_limits.h"

#include <algorithm>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/recovery.h"
#include "engine/checkpoint/sharded.h"

namespace shardlab::checkpoint {

namespace fs = std::filesystem;

int64_t step_of(const fs::path& dir) {
  const std::string n = dir.filename().string();
  if (n.rfind("step_", 0) != 0 || n.size() == 5 || n.size() > 5 + 18) return -1;
  for (size_t i = 5; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return -1;
  return std::stoll(n.substr(5));
}

std::vector<std::pair<int64_t, fs::path>> committed(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const int64_t s = step_of(e.path());
    if (s >= 0 && fs::exists(e.path() / kCommitFile, ec)) out.push_back({s, e.path()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// checkpoint.json holds the project and a few fields: far below this.
constexpr uint64_t kMaxMetaBytes = uint64_t(64) << 20;

// Why the committed step in `dir` cannot be read, from its checkpoint.json and the presence of its
// tensor files; empty when it looks loadable (the tensors themselves are checked by load()).
std::string unreadable_reason(const fs::path& dir, int64_t step, const nlohmann::ordered_json& meta) {
  const fs::path meta_file = dir / kMetaFile;
  if (meta.is_discarded() || !meta.is_object()) return meta_file.string() + ": missing or not readable JSON";
  if (!meta.contains("step") || !meta["step"].is_number_integer()) return meta_file.string() + ": step: missing";
  if (meta["step"].get<int64_t>() != step)
    return meta_file.string() + ": step " + meta["step"].dump() + " differs from the directory's name";
  std::error_code ec;
  if (!fs::exists(dir / kTensorsFile, ec) && !fs::exists(dir / kIndexFile, ec))
    return dir.string() + ": no model.safetensors (nor a shard index)";
  return {};
}

}  // namespace

std::vector<Entry> list(const fs::path& root) {
  std::vector<Entry> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const int64_t step = step_of(e.path());
    if (step < 0) continue;
    Entry x;
    x.dir = e.path();
    x.step = step;
    std::error_code sec;
    const bool is_dir = fs::is_directory(x.dir, sec);
    const bool marked = is_dir && fs::exists(x.dir / kCommitFile, sec);
    if (sec) x.error = x.dir.string() + ": cannot be examined: " + sec.message();
    else if (!is_dir) x.error = x.dir.string() + ": not a directory";
    else if (!marked) continue;  // an interrupted save: never a checkpoint
    if (x.error.empty()) {
      // As the loader reads it: a regular file of sane size and nesting (a FIFO never blocks here).
      try {
        x.meta = util::parse_json_limited(read_small_file(x.dir / kMetaFile, kMaxMetaBytes), (x.dir / kMetaFile).string());
        x.error = unreadable_reason(x.dir, step, x.meta);
      } catch (const std::exception& e) {
        x.error = e.what();
      }
      for (const auto& f : fs::directory_iterator(x.dir, sec))
        if (f.is_regular_file(sec)) x.bytes += double(f.file_size(sec));
      x.written = fs::last_write_time(x.dir / kCommitFile, sec);
    }
    if (!x.error.empty()) x.meta = {{"error", x.error}};
    out.push_back(std::move(x));
  }
  // A committed step that an interrupted replacement left under a temporary name is listed, not
  // skipped: the newest step must never seem to be an older one.
  for (const Leftover& l : leftovers(root))
    if (l.restorable) {
      Entry x;
      x.dir = l.path;
      x.step = l.step;
      x.error = describe_restorable(l);
      x.meta = {{"error", x.error}};
      out.push_back(std::move(x));
    }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.step < b.step; });
  return out;
}

}  // namespace shardlab::checkpoint
