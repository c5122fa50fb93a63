#include "engine/data/data_probe.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/idx.h"

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
  std::vector<std::string> parts = {s.type, base.string(), std::to_string(s.test_fraction), std::to_string(s.seed)};
  if (s.type == "fashion_mnist")
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
      for (const char* ext : {".gz", ""}) parts.push_back(stamp(base, (std::filesystem::path(s.dir) / (std::string(f) + ext)).string()));
  for (const std::string* f : {&s.train_images, &s.train_labels, &s.test_images, &s.test_labels, &s.features, &s.targets, &s.file})
    parts.push_back(s.type == "npz" && f != &s.file ? *f : stamp(base, *f));  // an npz's features and targets are array names
  parts.push_back(s.test_features + "|" + s.test_targets);
  std::string k;
  for (const std::string& p : parts) k.append(p).append("|");
  return k;
}

// Synthetic data is described by its spec: generating it (maybe gigabytes) only to look is wasteful.
SourceShape synthetic_shape(const DataSpec& s) {
  SplitShape one;
  one.features = s.feature_shape;
  if (s.kind == "blobs" || s.kind == "copy") {
    one.integer_labels = true;
    one.num_classes = s.classes;
    if (s.kind == "copy") one.targets = s.feature_shape;  // a label per token
  } else {
    one.targets = s.target_shape;
  }
  SourceShape out{one, one};
  out.test.examples = test_split_size(s.examples, s.test_fraction, "synthetic data");
  out.train.examples = s.examples - out.test.examples;
  return out;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& p) {
  const std::filesystem::path q(p);
  return q.is_absolute() ? q : base / q;
}

// The bytes an IDX file of this type and these dimensions holds, or 0 for an unknown type code.
uint64_t idx_bytes(unsigned char type, const Shape& dims) {
  const uint64_t element = idx_element_bytes(type);
  if (element == 0) return 0;
  uint64_t bytes = 4 + 4 * uint64_t(dims.size()), count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > UINT64_MAX / uint64_t(d))) return 0;
    count *= uint64_t(d);
  }
  if (count > (UINT64_MAX - bytes) / element) return 0;
  return bytes + count * element;
}

// The size a file holds once decompressed: its own size, or for gzip the size its trailer records
// (modulo 2^32, as gzip keeps it). A truncated gzip file ends in compressed bytes, not its trailer,
// so its answer is almost never the expected size.
struct StoredSize {
  uint64_t bytes = 0;
  bool gzip = false;  // bytes is modulo 2^32
};
std::optional<StoredSize> stored_size(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[2] = {};
  if (!in.read(reinterpret_cast<char*>(head), 2)) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return std::nullopt;
  if (head[0] != 0x1f || head[1] != 0x8b) return StoredSize{uint64_t(size), false};
  if (size < 18) return std::nullopt;
  unsigned char trailer[4];
  in.seekg(size - 4);
  if (!in.read(reinterpret_cast<char*>(trailer), 4)) return std::nullopt;
  return StoredSize{uint64_t(trailer[0]) | uint64_t(trailer[1]) << 8 | uint64_t(trailer[2]) << 16 | uint64_t(trailer[3]) << 24, true};
}

// An IDX file's dimensions from its header alone (gzip or plain: gzread reads both), or none when
// the header is not a plain IDX one or the file may not hold the data its header declares
// (truncated); the full reader then says what is wrong.
std::optional<Shape> idx_dims(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  unsigned char magic[4] = {};
  std::optional<Shape> dims;
  if (gzread(f, magic, 4) == 4 && magic[0] == 0 && magic[1] == 0 && magic[3] >= 1) {
    Shape d;
    unsigned char b[4];
    for (int i = 0; i < magic[3] && gzread(f, b, 4) == 4; ++i)
      d.push_back(int64_t(b[0]) << 24 | int64_t(b[1]) << 16 | int64_t(b[2]) << 8 | int64_t(b[3]));
    if (d.size() == magic[3]) dims = d;
  }
  gzclose(f);
  if (!dims) return std::nullopt;
  const uint64_t expected = idx_bytes(magic[2], *dims);
  const std::optional<StoredSize> stored = stored_size(path);
  // Trailing bytes are allowed, as load_idx allows them; a gzip file must match, or is read in full.
  if (expected == 0 || !stored || (stored->gzip ? stored->bytes != (expected & 0xffffffffu) : stored->bytes < expected))
    return std::nullopt;
  return dims;
}

// One IDX split from its images' header and its labels (small: read whole), or none when anything
// is unusual (missing, mismatched counts): load_dataset then gives the answer or the error.
std::optional<SplitShape> idx_split(const std::filesystem::path& images, const std::filesystem::path& labels) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(images, ec) || !std::filesystem::is_regular_file(labels, ec)) return std::nullopt;
  const std::optional<Shape> dims = idx_dims(images);
  if (!dims) return std::nullopt;
  Tensor targets;
  try {
    targets = load_idx(labels);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (targets.shape.empty() || targets.shape[0] != dims->front()) return std::nullopt;
  SplitShape s;
  s.examples = dims->front();
  s.features.assign(dims->begin() + 1, dims->end());
  s.targets.assign(targets.shape.begin() + 1, targets.shape.end());
  // As load_dataset: rank-1 non-negative whole numbers are class labels.
  const bool labels_only = targets.rank() == 1 && std::all_of(targets.data.begin(), targets.data.end(), [](float v) {
                             return v >= 0 && v == std::floor(v);
                           });
  s.integer_labels = labels_only;
  s.num_classes = labels_only && !targets.data.empty() ? int64_t(*std::max_element(targets.data.begin(), targets.data.end())) + 1 : 0;
  return s;
}

std::filesystem::path fashion_file(const std::filesystem::path& dir, const std::string& name) {
  std::error_code ec;
  return std::filesystem::exists(dir / (name + ".gz"), ec) ? dir / (name + ".gz") : dir / name;
}

// IDX sources (Fashion-MNIST included) from headers and labels: the images, 47 M floats for
// Fashion-MNIST, are not decoded. None when load_dataset must decide.
std::optional<SourceShape> idx_shape(const DataSpec& spec, const std::filesystem::path& base) {
  std::optional<SplitShape> train, test;
  if (spec.type == "fashion_mnist") {
    const std::filesystem::path dir = resolve(base, spec.dir);
    train = idx_split(fashion_file(dir, "train-images-idx3-ubyte"), fashion_file(dir, "train-labels-idx1-ubyte"));
    test = idx_split(fashion_file(dir, "t10k-images-idx3-ubyte"), fashion_file(dir, "t10k-labels-idx1-ubyte"));
  } else if (spec.type == "idx") {
    train = idx_split(resolve(base, spec.train_images), resolve(base, spec.train_labels));
    test = spec.test_images.empty() ? SplitShape{} : idx_split(resolve(base, spec.test_images), resolve(base, spec.test_labels));
  }
  if (!train || !test || train->examples == 0 || (test->examples > 0 && test->features != train->features)) return std::nullopt;
  if (test->examples > 0 && test->integer_labels != train->integer_labels) {
    train->integer_labels = test->integer_labels = false;  // as load_dataset: labels only if every split has them
  }
  if (train->integer_labels) {
    const int64_t classes = std::max(train->num_classes, test->num_classes);
    train->num_classes = test->num_classes = classes;
  } else {
    train->num_classes = test->num_classes = 0;
  }
  if (test->examples == 0) test->features = train->features;
  return SourceShape{*train, *test};
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
  SourceShape shape;
  if (const std::optional<SourceShape> headers = idx_shape(spec, base_dir)) {
    shape = *headers;
  } else {
    const DataSplits splits = load_dataset(spec, base_dir);  // throws, naming the file at fault
    shape = {shape_of(splits.train), shape_of(splits.test)};
  }
  std::lock_guard<std::mutex> lock(mutex);
  known[key] = shape;
  return shape;
}

}  // namespace shardlab::data
