#include "engine/data/data_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace shardlab::data {
namespace {

using nlohmann::ordered_json;

// Keys each type accepts; "type" is implied for all. Keeping them in one table makes the
// "not used by type" and "unknown key" errors list exactly what is allowed.
struct TypeKeys {
  const char* type;
  std::vector<std::string> keys;
};

const std::vector<TypeKeys>& type_table() {
  static const std::vector<TypeKeys> table = {
      {"fashion_mnist", {"dir", "scale"}},
      {"idx", {"train_images", "train_labels", "test_images", "test_labels", "scale"}},
      {"npy", {"features", "targets", "test_fraction", "scale", "seed"}},
      {"npz", {"file", "features", "targets", "test_features", "test_targets", "test_fraction", "scale", "seed"}},
      {"synthetic",
       {"kind", "feature_shape", "target_shape", "classes", "examples", "test_fraction", "scale", "seed"}},
  };
  return table;
}

std::string join(const std::vector<std::string>& v, const std::string& last_sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += i + 1 == v.size() ? last_sep : ", ";
    out += v[i];
  }
  return out;
}

class Parser {
 public:
  Parser(const ordered_json& j, const std::string& where) : j_(j), where_(where) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw Error(where_ + (key.empty() ? "" : "." + key) + ": " + why);
  }

  bool has(const char* key) const { return j_.contains(key); }

  std::string str(const char* key) const {
    const auto& v = j_.at(key);
    if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
    std::string s = v.get<std::string>();
    if (s.empty()) fail(key, "must not be empty");
    return s;
  }

  int64_t integer(const char* key, int64_t min) const {
    const auto& v = j_.at(key);
    if (!v.is_number_integer()) fail(key, "expected an integer, got " + v.dump());
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) fail(key, "value too large");
    const int64_t n = v.get<int64_t>();
    if (n < min) fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(n));
    return n;
  }

  uint64_t unsigned_integer(const char* key) const {
    const auto& v = j_.at(key);
    if (!v.is_number_unsigned()) fail(key, "expected a non-negative integer, got " + v.dump());
    return v.get<uint64_t>();
  }

  double number(const char* key) const {
    const auto& v = j_.at(key);
    if (!v.is_number()) fail(key, "expected a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(key, "must be finite");
    return d;
  }

  Shape shape(const char* key) const {
    const auto& v = j_.at(key);
    if (!v.is_array()) fail(key, "expected an array of positive integers such as [784], got " + v.dump());
    Shape s;
    for (const auto& d : v) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        fail(key, "expected an array of positive integers such as [784], got " + v.dump());
      s.push_back(d.get<int64_t>());
    }
    return s;
  }

  // `context` says who needs the field, e.g. "type 'npy'".
  void require(const char* key, const std::string& context) const {
    if (!has(key)) fail("", "missing required field '" + std::string(key) + "' for " + context);
  }

 private:
  const ordered_json& j_;
  const std::string& where_;
};

}  // namespace

DataSpec parse_data_spec(const ordered_json& j, const std::string& where) {
  Parser p(j, where);
  if (!j.is_object()) p.fail("", "expected an object, got " + j.dump());

  std::vector<std::string> type_names;
  for (const auto& t : type_table()) type_names.push_back(t.type);
  if (!p.has("type")) p.fail("", "missing required field 'type' (expected " + join(type_names, " or ") + ")");
  DataSpec s;
  s.type = p.str("type");
  const auto it = std::find_if(type_table().begin(), type_table().end(),
                               [&](const TypeKeys& t) { return s.type == t.type; });
  if (it == type_table().end())
    p.fail("type", "unknown data type '" + s.type + "' (expected " + join(type_names, " or ") + ")");

  // Key checks come before value checks so a misspelt key is reported as such, not as a missing field.
  for (const auto& item : j.items()) {
    const std::string& key = item.key();  // a plain name, not a structured binding: clang 14 (the fuzz build) cannot capture those
    if (key == "type" || std::count(it->keys.begin(), it->keys.end(), key)) continue;
    const bool other_type = std::any_of(type_table().begin(), type_table().end(), [&](const TypeKeys& t) {
      return std::count(t.keys.begin(), t.keys.end(), key) > 0;
    });
    if (other_type)
      p.fail(key, "not used by data type '" + s.type + "' (it takes: " + join(it->keys, " and ") + ")");
    std::vector<std::string> all = {"type"};
    all.insert(all.end(), it->keys.begin(), it->keys.end());
    p.fail(key, "unknown key (expected one of " + join(all, " or ") + ")");
  }

  if (p.has("scale")) s.scale = p.number("scale");
  if (p.has("seed")) s.seed = p.unsigned_integer("seed");
  if (p.has("test_fraction")) {
    s.test_fraction = p.number("test_fraction");
    if (s.test_fraction < 0 || s.test_fraction >= 1)
      p.fail("test_fraction", "must be in [0, 1), got " + j.at("test_fraction").dump());
  }

  if (s.type == "fashion_mnist") {
    s.dir = p.has("dir") ? p.str("dir") : kFashionMnistDefaultDir;
    if (!p.has("scale")) s.scale = 1.0 / 255.0;
  } else if (s.type == "idx") {
    p.require("train_images", "type 'idx'");
    p.require("train_labels", "type 'idx'");
    s.train_images = p.str("train_images");
    s.train_labels = p.str("train_labels");
    if (p.has("test_images") != p.has("test_labels"))
      p.fail(p.has("test_images") ? "test_images" : "test_labels",
             "test_images and test_labels must be given together");
    if (p.has("test_images")) {
      s.test_images = p.str("test_images");
      s.test_labels = p.str("test_labels");
    }
  } else if (s.type == "npy") {
    p.require("features", "type 'npy'");
    p.require("targets", "type 'npy'");
    s.features = p.str("features");
    s.targets = p.str("targets");
  } else if (s.type == "npz") {
    // The arrays are named within the file; unnamed, the archive's own names decide (x_train,
    // y_train and x_test, y_test as Keras writes them, or x and y).
    p.require("file", "type 'npz'");
    s.file = p.str("file");
    if (p.has("features") != p.has("targets"))
      p.fail(p.has("features") ? "features" : "targets", "features and targets must be named together");
    if (p.has("features")) {
      s.features = p.str("features");
      s.targets = p.str("targets");
    }
    if (p.has("test_features") != p.has("test_targets"))
      p.fail(p.has("test_features") ? "test_features" : "test_targets", "test_features and test_targets must be named together");
    if (p.has("test_features")) {
      s.test_features = p.str("test_features");
      s.test_targets = p.str("test_targets");
      if (s.test_fraction > 0) p.fail("test_fraction", "not used with test arrays named (test_features, test_targets)");
    }
  } else {  // synthetic
    p.require("kind", "type 'synthetic'");
    s.kind = p.str("kind");
    if (s.kind != "ones" && s.kind != "normal" && s.kind != "blobs" && s.kind != "copy")
      p.fail("kind", "unknown synthetic kind '" + s.kind + "' (expected ones, normal, blobs or copy)");
    p.require("feature_shape", "type 'synthetic'");
    p.require("examples", "type 'synthetic'");
    s.feature_shape = p.shape("feature_shape");
    s.examples = p.integer("examples", 1);
    if (s.kind == "blobs" || s.kind == "copy") {
      if (p.has("target_shape"))
        p.fail("target_shape", "not used by synthetic kind '" + s.kind + "' (its targets are integer labels; set classes)");
      p.require("classes", "synthetic kind '" + s.kind + "'");
      s.classes = p.integer("classes", s.kind == "copy" ? 2 : 1);
      if (s.kind == "copy" && (s.feature_shape.size() != 1 || s.feature_shape[0] % 2 || s.feature_shape[0] < 2))
        p.fail("feature_shape", "synthetic kind 'copy' makes token sequences: one even length, e.g. [16]");
    } else {
      if (p.has("classes"))
        p.fail("classes", "not used by synthetic kind '" + s.kind + "' (set target_shape instead)");
      p.require("target_shape", "synthetic kind '" + s.kind + "'");
      s.target_shape = p.shape("target_shape");
    }
    if (int64_t(std::llround(double(s.examples) * s.test_fraction)) >= s.examples)
      p.fail("test_fraction", "leaves no training examples out of " + std::to_string(s.examples));
  }
  return s;
}

}  // namespace shardlab::data
