#include "engine/checkpoint/sharded.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/regular_file.h"
#include "engine/util/atomic_file.h"
#include "engine/util/checked.h"
#include "engine/util/json_limits.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::checkpoint {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::ordered_json;

// A name from the file, cut short for a message.
std::string in_quotes(const std::string& s) { return "'" + util::excerpt(s) + "'"; }

// "model-00001-of-00003.safetensors": a name our writer (and Hugging Face's) gives shards.
bool looks_like_shard(const std::string& n) {
  // model-NNNNN-of-NNNNN.safetensors, with at least five digits each
  const std::string head = "model-", mid = "-of-", tail = ".safetensors";
  if (n.size() < head.size() + 5 + mid.size() + 5 + tail.size()) return false;
  if (n.compare(0, head.size(), head) != 0 || n.compare(n.size() - tail.size(), tail.size(), tail) != 0) return false;
  const std::string core = n.substr(head.size(), n.size() - head.size() - tail.size());
  const size_t m = core.find(mid);
  if (m == std::string::npos || m < 5 || core.size() - m - mid.size() < 5) return false;
  auto digits = [](const std::string& s) {
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  };
  return digits(core.substr(0, m)) && digits(core.substr(m + mid.size()));
}

// An index lists one line per tensor; far more than any model has.
constexpr uint64_t kMaxIndexBytes = 64ull << 20;
// Tensors in one index, and bytes in one name: far more than any model has or uses.
constexpr size_t kMaxTensors = size_t(1) << 20;
constexpr size_t kMaxNameBytes = 4096;

// The index's weight_map in file order, its total_size if given; an Error naming the index for a
// malformed one. Duplicate tensor names are caught here: nlohmann would silently keep one.
struct Index {
  std::vector<std::pair<std::string, std::string>> weight_map;
  bool has_total = false;
  uint64_t total_size = 0;
};

Index parse_index(const fs::path& path) {
  const std::string who = path.string();
  Index out;
  std::vector<std::set<std::string>> open;
  std::vector<std::string> keys;  // the key whose value each open object is
  std::string last_key, duplicate, not_a_string;
  auto too_long = [&](const std::string& what, const std::string& s) {
    return Error(who + ": " + what + " " + in_quotes(s) + " is " + std::to_string(s.size()) + " bytes long (at most " +
                 std::to_string(kMaxNameBytes) + ")");
  };
  // Checked as the parser goes, so an absurd index stops at its first absurd entry. The weight_map's
  // entries are taken here and kept out of the parsed value: an ordered_json object finds each new
  // key by a linear search, which would make a long index quadratic.
  const Json::parser_callback_t note = [&](int depth, Json::parse_event_t ev, Json& parsed) {
    // At depth 2 in the top-level object's "weight_map" object: its keys, their values.
    const bool in_map = depth == 2 && open.size() == 2 && keys.back() == "weight_map";
    switch (ev) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (in_map && not_a_string.empty()) not_a_string = last_key;
        if (ev == Json::parse_event_t::array_start) break;
        open.emplace_back();
        keys.push_back(depth == 0 ? std::string() : last_key);
        break;
      case Json::parse_event_t::object_end:
        open.pop_back();
        keys.pop_back();
        break;
      case Json::parse_event_t::key:
        last_key = parsed.get<std::string>();
        if (last_key.size() > kMaxNameBytes) throw too_long(in_map ? "weight_map: tensor name" : "key", last_key);
        if (in_map && out.weight_map.size() >= kMaxTensors)
          throw Error(who + ": weight_map lists more than " + std::to_string(kMaxTensors) + " tensors");
        if (!open.back().insert(last_key).second && duplicate.empty())
          duplicate = in_map ? "weight_map lists tensor " + in_quotes(last_key) + " twice" : "duplicate key " + in_quotes(last_key);
        return !in_map;
      case Json::parse_event_t::value:
        if (parsed.is_string() && parsed.get_ref<const std::string&>().size() > kMaxNameBytes)
          throw too_long("the string", parsed.get_ref<const std::string&>());
        if (in_map) {
          if (parsed.is_string()) out.weight_map.push_back({last_key, parsed.get<std::string>()});
          else if (not_a_string.empty()) not_a_string = last_key;
          return false;
        }
        break;
      default: break;
    }
    return true;
  };
  const std::string text = read_small_file(path, kMaxIndexBytes);  // a regular file, of sane size
  util::check_json_depth(text, util::kDefaultJsonDepth, who);
  Json j;
  try {
    j = Json::parse(text, note);
  } catch (const Json::exception& e) {
    throw Error(who + ": malformed JSON: " + util::json_error_text(e));
  }
  if (!duplicate.empty()) throw Error(who + ": " + duplicate);
  if (!j.is_object()) throw Error(who + ": not a JSON object");
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(who + ": weight_map: missing or not an object of tensor name -> shard file");
  if (!not_a_string.empty())
    throw Error(who + ": weight_map: tensor " + in_quotes(not_a_string) + ": the shard is not a file name string");
  if (j.contains("metadata")) {
    const Json& m = j["metadata"];
    if (!m.is_object()) throw Error(who + ": metadata: not an object");
    if (m.contains("total_size")) {
      if (!m["total_size"].is_number_unsigned()) throw Error(who + ": metadata.total_size: not a non-negative integer");
      out.has_total = true;
      out.total_size = m["total_size"].get<uint64_t>();
    }
  }
  for (const auto& [tensor, f] : out.weight_map) {
    // Shards lie beside the index: no directories, so an index cannot point outside the checkpoint.
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos || f.find('\\') != std::string::npos ||
        f.find('\0') != std::string::npos)
      throw Error(who + ": weight_map: tensor " + in_quotes(tensor) + ": shard " + in_quotes(f) +
                  " is not a plain file name beside the index");
  }
  return out;
}

}  // namespace

std::string shard_name(size_t index, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", index, count);
  return buf;
}

// ---------------------------------------------------------------------------------------- writing

std::string write_shard(const fs::path& dir, SafetensorsFile part, size_t index, size_t count) {
  const std::string name = shard_name(index, count);
  add_checksums(part);  // each shard checks its own tensors
  write_safetensors(dir / name, part);
  return name;
}

void write_index(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& weight_map, uint64_t total_size) {
  Json map = Json::object();
  for (const auto& [tensor, file] : weight_map) map[tensor] = file;
  Json index = Json::object();
  index["metadata"] = Json{{"total_size", total_size}};
  index["weight_map"] = std::move(map);
  util::write_file_atomically(dir / kIndexFile, index.dump(2) + "\n");
}

std::vector<std::string> write_model(const fs::path& dir, SafetensorsFile f, uint64_t max_shard_bytes) {
  uint64_t total = 0;
  for (const StoredTensor& t : f.tensors) total += t.bytes.size();
  std::vector<std::string> written;
  if (max_shard_bytes == 0 || total <= max_shard_bytes) {
    add_checksums(f);
    write_safetensors(dir / kSingleFile, f);
    written.push_back(kSingleFile);
  } else {
    // Greedy in the given order, as Hugging Face's split_torch_state_dict_into_shards.
    std::vector<SafetensorsFile> shards;
    uint64_t in_current = 0;
    for (StoredTensor& t : f.tensors) {
      const uint64_t size = t.bytes.size();
      if (shards.empty() || (in_current + size > max_shard_bytes && !shards.back().tensors.empty())) {
        shards.emplace_back();
        shards.back().metadata = f.metadata;
        in_current = 0;
      }
      shards.back().tensors.push_back(std::move(t));  // f is this function's own copy
      in_current += size;
    }
    std::vector<std::pair<std::string, std::string>> weight_map;
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::string name = shard_name(i + 1, shards.size());
      for (const StoredTensor& t : shards[i].tensors) weight_map.push_back({t.name, name});
      written.push_back(write_shard(dir, std::move(shards[i]), i + 1, shards.size()));
    }
    write_index(dir, weight_map, total);
    written.push_back(kIndexFile);
  }
  // What an earlier write of the other layout, or of another shard count, left behind.
  const std::set<std::string> keep(written.begin(), written.end());
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (!keep.count(n) && (n == kSingleFile || n == kIndexFile || looks_like_shard(n))) fs::remove(e.path(), ec);
  }
  return written;
}

// ---------------------------------------------------------------------------------------- reading

bool has_model(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kSingleFile, ec) || fs::exists(dir / kIndexFile, ec);
}

SafetensorsFile read_model(const fs::path& dir, ModelFiles* where) { return read_model(dir, where, TensorFilter{}); }

SafetensorsFile read_model(const fs::path& dir, ModelFiles* where, const TensorFilter& want) {
  std::error_code ec;
  const bool single = fs::exists(dir / kSingleFile, ec), indexed = fs::exists(dir / kIndexFile, ec);
  if (single && indexed)
    throw Error(dir.string() + ": holds both " + kSingleFile + " and " + kIndexFile +
                " (one model in two layouts: remove the one that is stale)");
  ModelFiles local;
  ModelFiles& w = where ? *where : local;
  w = ModelFiles{};
  if (!indexed) {
    if (!single) throw Error(dir.string() + ": no " + kSingleFile + " nor " + kIndexFile + " (no tensors saved here)");
    SafetensorsFile f = read_safetensors(dir / kSingleFile, want);
    std::vector<std::string> names;
    for (const StoredTensor& t : f.tensors) names.push_back(t.name);
    check_checksum_coverage(f.metadata, names, (dir / kSingleFile).string());
    w.files = {kSingleFile};
    for (const StoredTensor& t : f.tensors) w.file_of[t.name] = kSingleFile;
    return f;
  }

  const fs::path index_path = dir / kIndexFile;
  const Index index = parse_index(index_path);
  w.sharded = true;
  std::map<std::string, std::string> placed;  // tensor -> shard, from the index
  std::map<std::string, std::vector<std::string>> listed;  // shard -> its tensors
  for (const auto& [tensor, file] : index.weight_map) {
    placed[tensor] = file;
    if (!listed.count(file)) w.files.push_back(file);
    listed[file].push_back(tensor);
  }
  // Every shard-named file beside the index must be one it lists.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (looks_like_shard(n) && !listed.count(n))
      throw Error((dir / n).string() + ": a shard file that " + kIndexFile + " does not list (left from another save?)");
  }

  SafetensorsFile out;
  std::map<std::string, std::string> found_in;
  uint64_t total = 0;
  for (const std::string& file : w.files) {
    const fs::path p = dir / file;
    if (!fs::exists(p, ec)) {
      const auto& names = listed[file];
      throw Error(p.string() + ": missing (" + kIndexFile + " places " + std::to_string(names.size()) + " tensor" +
                  (names.size() == 1 ? "" : "s") + " there, e.g. " + in_quotes(names.front()) + ")");
    }
    SafetensorsFile shard = read_safetensors(p, want);
    if (out.tensors.empty() && out.metadata.empty()) out.metadata = shard.metadata;
    const std::map<std::string, std::string> shard_metadata = shard.metadata;
    std::vector<std::string> names;
    for (StoredTensor& t : shard.tensors) {
      if (auto prev = found_in.find(t.name); prev != found_in.end())
        throw Error(p.string() + ": tensor " + in_quotes(t.name) + " is also in " + (dir / prev->second).string() +
                    " (a tensor may be in one shard only)");
      auto it = placed.find(t.name);
      if (it == placed.end())
        throw Error(p.string() + ": tensor " + in_quotes(t.name) + " is not in " + kIndexFile + "'s weight_map");
      if (it->second != file)
        throw Error(p.string() + ": holds tensor " + in_quotes(t.name) + ", which " + kIndexFile + " places in " +
                    it->second);
      found_in[t.name] = file;
      total += uint64_t(numel(t.shape)) * dtype_size(t.dtype);
      names.push_back(t.name);
      out.tensors.push_back(std::move(t));
    }
    for (const std::string& name : listed[file])
      if (!found_in.count(name))
        throw Error(p.string() + ": has no tensor " + in_quotes(name) + ", which " + kIndexFile + " places there");
    check_checksum_coverage(shard_metadata, names, p.string());
  }
  if (index.has_total && index.total_size != total)
    throw Error(index_path.string() + ": metadata.total_size is " + std::to_string(index.total_size) +
                " but the shards hold " + std::to_string(total) + " bytes of tensor data");
  w.file_of = std::move(found_in);
  return out;
}

// ----------------------------------------------------------------------------------------- sizes

uint64_t parse_size(const std::string& text) {
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "... (" + std::to_string(text.size()) + " characters)" : text;
  auto bad = [&](const std::string& why) {
    return Error("size '" + shown + "': " + why +
                 " (expected bytes, or a number with KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. 500MB, 2GB, 1GiB)");
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  size_t i = 0;
  int64_t whole = 0;
  bool digits = false, too_large = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    digits = true;
    auto next = util::mul<int64_t>(whole, 10);
    if (next) next = util::add<int64_t>(*next, text[i] - '0');
    if (!next) too_large = true;
    else whole = *next;
  }
  std::string fraction;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) fraction += text[i];
  if (!digits && fraction.empty()) throw bad("no number");
  std::string unit;
  for (; i < text.size(); ++i) {
    const char ch = char(std::tolower(static_cast<unsigned char>(text[i])));
    if (ch == ' ' && unit.empty()) continue;
    unit += ch;
  }
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"", 1}, {"k", 1000}, {"m", 1000'000}, {"g", 1000'000'000}, {"t", 1000'000'000'000},
      {"ki", int64_t(1) << 10}, {"mi", int64_t(1) << 20}, {"gi", int64_t(1) << 30}, {"ti", int64_t(1) << 40}};
  int64_t scale = 0;
  for (const auto& [u, f] : kUnits)
    if (unit == u) scale = f;
  if (scale == 0) throw bad("unknown unit '" + unit + "'");
  if (scale == 1 && fraction.find_first_not_of('0') != std::string::npos) throw bad("a fraction of a byte");
  // whole * scale + fraction * scale, the fraction's bytes rounded down.
  auto bytes = too_large ? std::nullopt : util::mul(whole, scale);
  int64_t part = 0, denominator = 1;
  for (char d : fraction) {
    if (denominator > kMax / 10 / scale) break;  // digits beyond a byte's resolution
    part = part * 10 + (d - '0');
    denominator *= 10;
  }
  if (bytes) bytes = util::add(*bytes, part * scale / denominator);
  if (!bytes) throw bad("too large (at most " + std::to_string(kMax) + " bytes)");
  if (*bytes < 1) throw bad("must be at least one byte");
  return uint64_t(*bytes);
}

}  // namespace shardlab::checkpoint
