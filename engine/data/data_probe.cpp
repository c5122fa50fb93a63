#include "engine/data/data_probe.h"

#include <map>
#include <mutex>
#include <string>

namespace shardlab::data {

namespace {

// A file's size and modification time ("-" when it cannot be read), so a replaced file is probed again.
std::string stamp(const std::filesystem::path& base, const std::string& name) {
  if (name.empty()) return "";
  const std::filesystem::path p = std::filesystem::path(name).is_absolute() ? std::filesystem::path(name) : base / name;
  std::error_code ec;
  const auto size = std::filesystem::file_size(p, ec);
  if (ec) return p.string() + ":-";
  const auto time = std::filesystem::last_write_time(p, ec);
  return p.string() + ":" + std::to_string(size) + ":" + std::to_string(ec ? 0 : time.time_since_epoch().count());
}

std::string cache_key(const DataSpec& s, const std::filesystem::path& base) {
  std::string k = s.type + "|" + base.string() + "|" + std::to_string(s.test_fraction) + "|" + std::to_string(s.seed);
  if (s.type == "fashion_mnist") {
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
      for (const char* ext : {".gz", ""}) k += "|" + stamp(base, (std::filesystem::path(s.dir) / (std::string(f) + ext)).string());
  }
  for (const std::string* f : {&s.train_images, &s.train_labels, &s.test_images, &s.test_labels, &s.features, &s.targets})
    k += "|" + stamp(base, *f);
  return k;
}

// Synthetic data is described by its spec: generating it (maybe gigabytes) only to look is wasteful.
SourceShape synthetic_shape(const DataSpec& s) {
  SplitShape one;
  one.features = s.feature_shape;
  if (s.kind == "blobs") {
    one.integer_labels = true;
    one.num_classes = s.classes;
  } else {
    one.targets = s.target_shape;
  }
  SourceShape out{one, one};
  out.test.examples = test_split_size(s.examples, s.test_fraction, "synthetic data");
  out.train.examples = s.examples - out.test.examples;
  return out;
}

}  // namespace

SplitShape shape_of(const Dataset& ds) {
  SplitShape s;
  s.examples = ds.size();
  if (!ds.features.shape.empty()) s.features.assign(ds.features.shape.begin() + 1, ds.features.shape.end());
  if (!ds.targets.shape.empty()) s.targets.assign(ds.targets.shape.begin() + 1, ds.targets.shape.end());
  s.integer_labels = ds.integer_labels;
  s.num_classes = ds.num_classes;
  return s;
}

SourceShape probe_dataset(const DataSpec& spec, const std::filesystem::path& base_dir) {
  if (spec.type == "synthetic") return synthetic_shape(spec);
  static std::mutex mutex;
  static std::map<std::string, SourceShape> known;
  const std::string key = cache_key(spec, base_dir);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const DataSplits splits = load_dataset(spec, base_dir);  // throws, naming the file at fault
  const SourceShape shape{shape_of(splits.train), shape_of(splits.test)};
  std::lock_guard<std::mutex> lock(mutex);
  known[key] = shape;
  return shape;
}

}  // namespace shardlab::data
