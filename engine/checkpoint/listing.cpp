#include "engine/checkpoint/listing.h"

#include <algorithm>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"

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

std::vector<Entry> list(const fs::path& root) {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& [step, dir] : committed(root)) {
    Entry x;
    x.dir = dir;
    x.step = step;
    std::ifstream in(dir / kMetaFile);
    x.meta = nlohmann::ordered_json::parse(in, nullptr, false);
    if (x.meta.is_discarded() || !x.meta.is_object()) x.meta = {{"error", (dir / kMetaFile).string() + ": not readable JSON"}};
    for (const auto& f : fs::directory_iterator(dir, ec))
      if (f.is_regular_file(ec)) x.bytes += double(f.file_size(ec));
    x.written = fs::last_write_time(dir / kCommitFile, ec);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace shardlab::checkpoint
