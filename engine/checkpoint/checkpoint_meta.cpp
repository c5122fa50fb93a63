#include "engine/checkpoint/checkpoint_meta.h"

#include "engine/checkpoint/regular_file.h"
#include "engine/util/error.h"
#include "engine/util/json_limits.h"

namespace shardlab::checkpoint {

namespace {

using Json = nlohmann::ordered_json;

// checkpoint.json holds the project (a few KB to a few MB); this bounds what a hostile one costs.
constexpr uint64_t kMaxMetaBytes = 64ull << 20;

// A JSON value for a message, cut short if long.
std::string brief(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

const char* type_of(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number_float()) return "a fractional number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  if (j.is_array()) return "a list";
  return "an object";
}

// An integer's value compared with `hi`, whichever way nlohmann stored it (parsed non-negative
// numbers are unsigned, values built in C++ from an int are signed).
bool integer_above(const Json& v, int64_t hi) {
  return v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(hi) : v.get<int64_t>() > hi;
}

bool non_negative_integer(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

class Checker {
 public:
  Checker(const Json& meta, const std::string& file) : meta_(meta), file_(file) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw Error(file_ + ": " + field + ": " + why);
  }

  // An integer in [lo, hi]; 3.5, "3", true and 1e30 are refused, never rounded or clamped.
  int64_t integer(const char* field, int64_t lo, int64_t hi, const std::string& meaning) const {
    const Json& v = meta_[field];
    if (!v.is_number_integer())
      fail(field, brief(v) + " is " + type_of(v) + ", not an integer (" + meaning + ")");
    if (integer_above(v, hi))
      fail(field, brief(v) + " is over the limit of " + std::to_string(hi) + " (" + meaning + ")");
    const int64_t x = v.get<int64_t>();
    if (x < lo) fail(field, std::to_string(x) + (x < 0 ? " is negative" : " is below " + std::to_string(lo)) + " (" + meaning + ")");
    return x;
  }

  // An object whose values all pass `ok`, described by `what` ("string", "number").
  template <typename Pred>
  void object_of(const char* field, Pred ok, const char* what) const {
    const Json& v = meta_[field];
    if (!v.is_object()) fail(field, "is " + std::string(type_of(v)) + ", not an object of name to " + what);
    for (const auto& [k, x] : v.items())
      if (!ok(x)) fail(std::string(field) + "." + k, brief(x) + " is " + type_of(x) + ", not a " + what);
  }

  bool has(const char* field) const { return meta_.contains(field); }

 private:
  const Json& meta_;
  const std::string& file_;
};

}  // namespace

int64_t step_from_dir_name(const std::filesystem::path& dir) {
  std::string n = dir.filename().string();
  if (n.empty()) n = dir.parent_path().filename().string();  // "step_000006/"
  if (n.rfind("step_", 0) != 0 || n.size() == 5 || n.size() > 5 + 18) return -1;
  for (size_t i = 5; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return -1;
  return std::stoll(n.substr(5));
}

MetaFields validate_meta(const Json& meta, const std::string& file, int64_t dir_step) {
  if (!meta.is_object()) throw Error(file + ": is " + type_of(meta) + ", not a JSON object");
  const Checker c(meta, file);

  if (!c.has("format")) c.fail("format", "missing (expected \"" + std::string(kMetaFormat) + "\")");
  if (!meta["format"].is_string() || meta["format"].get<std::string>() != kMetaFormat)
    c.fail("format", brief(meta["format"]) + " is not \"" + kMetaFormat + "\" (not a Shardlab checkpoint?)");
  if (!c.has("version")) c.fail("version", "missing");
  if (!meta["version"].is_number_integer()) c.fail("version", brief(meta["version"]) + " is not an integer");
  if (integer_above(meta["version"], kMetaVersion))
    c.fail("version", meta["version"].dump() + " is newer than this build of Shardlab reads (version " +
                          std::to_string(kMetaVersion) + "); open it with a newer Shardlab");
  c.integer("version", 1, kMetaVersion, "checkpoint format versions start at 1");

  MetaFields out;
  if (!c.has("step")) c.fail("step", "missing");
  out.step = c.integer("step", 0, kMaxStep, "the number of training steps done");
  if (dir_step >= 0 && out.step != dir_step)
    c.fail("step", std::to_string(out.step) + " does not match the directory's step " + std::to_string(dir_step) +
                       " (checkpoint.json or the directory was changed)");
  out.data_position = out.step;
  if (c.has("data_position"))
    out.data_position = c.integer("data_position", 0, kMaxStep, "the position in the batch stream to resume at");
  if (const Json& seed = meta.contains("seed") ? meta["seed"] : Json(0u); !non_negative_integer(seed))
    c.fail("seed", brief(seed) + (seed.is_number_integer() ? std::string(" is negative")
                                                          : " is " + std::string(type_of(seed)) + ", not a non-negative integer"));
  if (c.has("project") && !meta["project"].is_object())
    c.fail("project", "is " + std::string(type_of(meta["project"])) + ", not an object");
  if (c.has("mesh") && !meta["mesh"].is_string())
    c.fail("mesh", brief(meta["mesh"]) + " is " + type_of(meta["mesh"]) + ", not a string");
  if (c.has("shardings")) c.object_of("shardings", [](const Json& x) { return x.is_string(); }, "string");
  if (c.has("metrics")) c.object_of("metrics", [](const Json& x) { return x.is_number(); }, "number");
  if (c.has("blocks")) {
    if (meta["version"].get<int64_t>() < 2) c.fail("blocks", "is a version 2 field, and this file says version 1");
    c.object_of("blocks", [](const Json& x) {
      if (!x.is_array()) return false;
      for (const Json& d : x)
        if (!non_negative_integer(d)) return false;
      return true;
    }, "shape (an array of non-negative integers)");
  } else if (meta["version"].get<int64_t>() == kMetaVersionBlocks) {
    c.fail("blocks", "missing (a version 2 checkpoint lists its arrays' shapes there)");
  }
  if (c.has("loss_scale")) c.object_of("loss_scale", [](const Json& x) { return x.is_number() && x.get<double>() >= 0; }, "non-negative number");
  return out;
}

Json read_meta(const std::filesystem::path& file, int64_t dir_step, MetaFields& fields) {
  const std::string who = file.string();
  const std::string text = read_small_file(file, kMaxMetaBytes);
  Json meta = util::parse_json_limited(text, who);
  fields = validate_meta(meta, who, dir_step);
  return meta;
}

}  // namespace shardlab::checkpoint
