#include "engine/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "engine/data/idx.h"
#include "engine/data/npy.h"
#include "engine/data/npz.h"
#include "engine/util/error.h"

namespace shardlab::data {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t hash64(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

double hash_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  // Two uniforms in (0, 1) from consecutive counters; the +0.5 keeps log() away from zero.
  const double u1 = (double(hash64(seed, stream, 2 * index) >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = (double(hash64(seed, stream, 2 * index + 1) >> 11) + 0.5) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    // Modulo bias is below n / 2^64: irrelevant here, and simpler than rejection sampling.
    const int64_t j = int64_t(hash64(seed, 0x7065726dULL, uint64_t(i)) % uint64_t(i + 1));
    std::swap(p[size_t(i)], p[size_t(j)]);
  }
  return p;
}

namespace {

// Streams keep the different random quantities of one seed independent.
constexpr uint64_t kStreamFeatures = 1, kStreamTargets = 2, kStreamCentres = 3, kStreamSplit = 4;
constexpr double kBlobCentreSpread = 3.0;  // centre coordinates ~ N(0, 3^2) against unit noise: well separated

int64_t row_size(const Shape& s) {
  int64_t n = 1;
  for (size_t d = 1; d < s.size(); ++d) n *= s[d];
  return n;
}

Shape with_batch(int64_t n, const Shape& per_example) {
  Shape s{n};
  s.insert(s.end(), per_example.begin(), per_example.end());
  return s;
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& p) {
  const std::filesystem::path q(p);
  return q.is_absolute() ? q : base / q;
}

void require_file(const std::filesystem::path& p, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) throw Error(what + ": " + p.string() + ": no such file");
}

void scale_features(Dataset& ds, double scale) {
  if (scale == 1.0) return;
  const float s = float(scale);
  for (float& v : ds.features.data) v *= s;
}

// Class labels are rank-1 tensors of non-negative integers; returns max label + 1, or -1 if not labels.
int64_t label_classes(const Tensor& t) {
  if (t.rank() != 1) return -1;
  float mx = -1;
  for (float v : t.data) {
    if (!(v >= 0) || v != std::floor(v)) return -1;
    mx = std::max(mx, v);
  }
  return int64_t(mx) + 1;
}

Dataset pair(Tensor features, Tensor targets, const std::string& fname, const std::string& tname) {
  if (features.rank() < 1) throw Error(fname + ": features must have shape [N, ...], got a scalar");
  if (targets.rank() < 1) throw Error(tname + ": targets must have shape [N, ...], got a scalar");
  if (features.shape[0] != targets.shape[0])
    throw Error(tname + ": " + std::to_string(targets.shape[0]) + " targets for " +
                std::to_string(features.shape[0]) + " examples in " + fname);
  // A NaN or an infinity would train into NaN weights, which a checkpoint then refuses to resume:
  // refused here, naming the file and the first example that has one.
  for (const auto& [t, name] : {std::pair<const Tensor*, const std::string*>{&features, &fname}, {&targets, &tname}}) {
    const int64_t per = t->shape[0] > 0 ? t->size() / t->shape[0] : 0;
    for (int64_t i = 0; i < t->size(); ++i)
      if (!std::isfinite(t->data[size_t(i)]))
        throw Error(*name + ": example " + std::to_string(i / std::max<int64_t>(per, 1)) + " holds " +
                    (std::isnan(t->data[size_t(i)]) ? "NaN" : "an infinity") + " (value " + std::to_string(i % std::max<int64_t>(per, 1)) +
                    " of the example); every value must be a finite number");
  }
  Dataset ds;
  ds.features = std::move(features);
  ds.targets = std::move(targets);
  return ds;
}

// Marks both splits as labelled (sharing one class count) when every target tensor holds class labels.
void detect_labels(DataSplits& s) {
  const int64_t a = label_classes(s.train.targets);
  const int64_t b = s.test.size() > 0 ? label_classes(s.test.targets) : 0;
  if (a < 0 || b < 0) return;
  for (Dataset* d : {&s.train, &s.test}) {
    d->integer_labels = true;
    d->num_classes = std::max(a, b);
  }
}

DataSplits split(Dataset all, double test_fraction, uint64_t seed, const std::string& what) {
  const int64_t n = all.size();
  const int64_t n_test = test_split_size(n, test_fraction, what);
  if (n_test == 0) {
    DataSplits s;
    s.test = select_examples(all, {});
    s.train = std::move(all);
    return s;
  }
  const std::vector<int64_t> perm = seeded_permutation(n, hash64(seed, kStreamSplit, 0));
  std::vector<int64_t> train(perm.begin(), perm.end() - n_test), test(perm.end() - n_test, perm.end());
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());
  return {select_examples(all, train), select_examples(all, test)};
}

std::filesystem::path fashion_file(const std::filesystem::path& dir, const std::string& name) {
  for (const std::string& candidate : {name + ".gz", name}) {
    std::error_code ec;
    if (std::filesystem::exists(dir / candidate, ec)) return dir / candidate;
  }
  throw Error("fashion_mnist: missing " + (dir / (name + ".gz")).string() +
              " (install the Debian package dataset-fashion-mnist, or set data.dir to a folder holding the "
              "Fashion-MNIST IDX files)");
}

Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels) {
  return pair(load_idx(images), load_idx(labels), images.string(), labels.string());
}

DataSplits load_synthetic(const DataSpec& spec) {
  const int64_t n = spec.examples;
  const int64_t d = numel(spec.feature_shape);
  Dataset ds;
  if (spec.kind == "ones") {
    ds.features = Tensor(with_batch(n, spec.feature_shape), 1.0f);
    ds.targets = Tensor(with_batch(n, spec.target_shape), 1.0f);
  } else if (spec.kind == "normal") {
    ds.features = Tensor(with_batch(n, spec.feature_shape));
    for (int64_t i = 0; i < n * d; ++i)
      ds.features.data[size_t(i)] = float(hash_normal(spec.seed, kStreamFeatures, uint64_t(i)));
    ds.targets = Tensor(with_batch(n, spec.target_shape));
    for (int64_t i = 0; i < ds.targets.size(); ++i)
      ds.targets.data[size_t(i)] = float(hash_normal(spec.seed, kStreamTargets, uint64_t(i)));
  } else if (spec.kind == "copy") {
    // First half: tokens in [1, classes), targets 0. Second half: blanks (0) in, the first half's
    // tokens out, so the answer is only in the past and a causal model must look half a sequence back.
    const int64_t half = d / 2;
    ds.features = Tensor(with_batch(n, spec.feature_shape), 0.0f);
    ds.targets = Tensor(with_batch(n, spec.feature_shape), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = 0; t < half; ++t) {
        const uint64_t h = hash64(spec.seed, kStreamFeatures, uint64_t(i * d + t));
        const float token = float(1 + int64_t(h % uint64_t(spec.classes - 1)));
        ds.features.data[size_t(i * d + t)] = token;
        ds.targets.data[size_t(i * d + t + half)] = token;
      }
    ds.integer_labels = true;
    ds.num_classes = spec.classes;
  } else {  // blobs
    const int64_t k = spec.classes;
    std::vector<double> centres(size_t(k * d));
    for (size_t i = 0; i < centres.size(); ++i)
      centres[i] = kBlobCentreSpread * hash_normal(spec.seed, kStreamCentres, i);
    ds.features = Tensor(with_batch(n, spec.feature_shape));
    float* x = ds.features.ptr();
    ds.targets = Tensor(Shape{n});
    // Round-robin labels keep the classes balanced; the split and the batch loader shuffle them.
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i % k;
      ds.targets.data[size_t(i)] = float(c);
      for (int64_t j = 0; j < d; ++j)
        x[i * d + j] = float(centres[size_t(c * d + j)] + hash_normal(spec.seed, kStreamFeatures, uint64_t(i * d + j)));
    }
    ds.integer_labels = true;
    ds.num_classes = k;
  }
  scale_features(ds, spec.scale);
  DataSplits s = split(std::move(ds), spec.test_fraction, spec.seed, "synthetic data");
  // Blobs declare their class count; it must not shrink if a split happens to miss the last class.
  if (spec.kind == "blobs" || spec.kind == "copy") s.test.num_classes = s.train.num_classes = spec.classes;
  return s;
}

// Integer targets (an npy or npz integer dtype) are class labels: one per example, none negative.
void mark_labels(Dataset& ds, const std::string& name) {
  if (ds.targets.rank() != 1)
    throw Error(name + ": integer targets are class labels and must have shape [N], got " + shape_str(ds.targets.shape) +
                " (save float targets for regression)");
  const int64_t k = label_classes(ds.targets);
  if (k < 0) throw Error(name + ": class labels must be non-negative");
  ds.integer_labels = true;
  ds.num_classes = k;
}

// An .npz archive: its named arrays, or those its names say are the splits (Keras's x_train,
// y_train, x_test, y_test; else x and y, split by test_fraction).
DataSplits load_npz_source(const DataSpec& spec, const std::filesystem::path& base_dir) {
  const std::filesystem::path file = resolve(base_dir, spec.file);
  require_file(file, "data.file");
  const std::vector<std::string> keys = npz_keys(file);
  auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  std::string fx = spec.features, fy = spec.targets, tx = spec.test_features, ty = spec.test_targets;
  if (fx.empty()) {
    if (has("x_train") && has("y_train")) {
      fx = "x_train", fy = "y_train";
      if (has("x_test") && has("y_test") && spec.test_fraction == 0) tx = "x_test", ty = "y_test";
    } else if (has("x") && has("y")) {
      fx = "x", fy = "y";
    } else {
      std::string held;
      for (const std::string& k : keys) held += (held.empty() ? "" : ", ") + k;
      throw Error(file.string() + ": it holds " + (held.empty() ? std::string("no arrays") : held) +
                  ", neither x_train and y_train nor x and y: name its arrays with data.features and data.targets");
    }
  }
  auto load_pair = [&](const std::string& x, const std::string& y) {
    const std::string xs = file.string() + ": array '" + x + "'", ys = file.string() + ": array '" + y + "'";
    Dataset d = pair(load_npz(file, x), load_npz(file, y), xs, ys);
    if (read_npz_header(file, y).is_integer()) mark_labels(d, ys);
    scale_features(d, spec.scale);
    return d;
  };
  DataSplits s;
  if (tx.empty()) {
    s = split(load_pair(fx, fy), spec.test_fraction, spec.seed, "data " + file.string());
  } else {
    s.train = load_pair(fx, fy);
    s.test = load_pair(tx, ty);
    if (Shape(s.test.features.shape.begin() + 1, s.test.features.shape.end()) !=
        Shape(s.train.features.shape.begin() + 1, s.train.features.shape.end()))
      throw Error(file.string() + ": test examples ('" + tx + "') have shape " + shape_str(s.test.features.shape) +
                  " but training examples ('" + fx + "') " + shape_str(s.train.features.shape));
    if (s.test.integer_labels != s.train.integer_labels)
      throw Error(file.string() + ": '" + fy + "' and '" + ty + "' must both be class labels (integers) or both targets (floats)");
  }
  s.test.num_classes = s.train.num_classes = std::max(s.train.num_classes, s.test.num_classes);
  if (s.train.size() == 0) throw Error(file.string() + ": no training examples");
  return s;
}

}  // namespace

int64_t test_split_size(int64_t n, double test_fraction, const std::string& what) {
  const int64_t n_test = int64_t(std::llround(double(n) * test_fraction));
  if (n_test > 0 && n_test >= n)
    throw Error(what + ": test_fraction " + std::to_string(test_fraction) + " leaves no training examples out of " +
                std::to_string(n));
  return n_test;
}

Dataset select_examples(const Dataset& ds, const std::vector<int64_t>& indices) {
  Dataset out;
  out.integer_labels = ds.integer_labels;
  out.num_classes = ds.num_classes;
  const int64_t n = ds.size();
  const int64_t n_out = int64_t(indices.size());
  auto gather = [&](const Tensor& src, Tensor& dst) {
    Shape s = src.shape;
    if (s.empty()) s.push_back(0);
    s[0] = n_out;
    dst = Tensor(s);
    const int64_t row = row_size(src.shape);
    for (int64_t r = 0; r < n_out; ++r) {
      const int64_t i = indices[size_t(r)];
      if (i < 0 || i >= n) throw Error("select_examples: index " + std::to_string(i) + " out of range [0, " +
                                       std::to_string(n) + ")");
      if (row) std::memcpy(dst.ptr() + r * row, src.ptr() + i * row, size_t(row) * sizeof(float));
    }
  };
  gather(ds.features, out.features);
  gather(ds.targets, out.targets);
  return out;
}

DataSplits load_dataset(const DataSpec& spec, const std::filesystem::path& base_dir) {
  DataSplits s;
  if (spec.type == "fashion_mnist") {
    const std::filesystem::path dir = resolve(base_dir, spec.dir);
    // Check all four first so a partial install reports the first missing file, before any slow decoding.
    const auto tri = fashion_file(dir, "train-images-idx3-ubyte");
    const auto trl = fashion_file(dir, "train-labels-idx1-ubyte");
    const auto tei = fashion_file(dir, "t10k-images-idx3-ubyte");
    const auto tel = fashion_file(dir, "t10k-labels-idx1-ubyte");
    s.train = load_idx_pair(tri, trl);
    s.test = load_idx_pair(tei, tel);
  } else if (spec.type == "idx") {
    const auto tri = resolve(base_dir, spec.train_images), trl = resolve(base_dir, spec.train_labels);
    require_file(tri, "data.train_images");
    require_file(trl, "data.train_labels");
    s.train = load_idx_pair(tri, trl);
    if (!spec.test_images.empty()) {
      const auto tei = resolve(base_dir, spec.test_images), tel = resolve(base_dir, spec.test_labels);
      require_file(tei, "data.test_images");
      require_file(tel, "data.test_labels");
      s.test = load_idx_pair(tei, tel);
    } else {
      s.test = select_examples(s.train, {});
    }
  } else if (spec.type == "npy") {
    const auto fp = resolve(base_dir, spec.features), tp = resolve(base_dir, spec.targets);
    require_file(fp, "data.features");
    require_file(tp, "data.targets");
    const NpyHeader th = read_npy_header(tp);
    Dataset all = pair(load_npy(fp), load_npy(tp), fp.string(), tp.string());
    if (th.is_integer()) mark_labels(all, tp.string());
    scale_features(all, spec.scale);
    s = split(std::move(all), spec.test_fraction, spec.seed, "data " + fp.string());
    s.test.num_classes = s.train.num_classes = std::max(s.train.num_classes, s.test.num_classes);
    if (s.train.size() == 0) throw Error(fp.string() + ": no examples");
    return s;
  } else if (spec.type == "npz") {
    return load_npz_source(spec, base_dir);
  } else if (spec.type == "synthetic") {
    return load_synthetic(spec);
  } else {
    throw Error("data.type: unknown data type '" + spec.type + "'");
  }
  // IDX sources: labels are recognised from the values (IDX has no separate label type).
  scale_features(s.train, spec.scale);
  scale_features(s.test, spec.scale);
  detect_labels(s);
  if (s.test.size() > 0 &&
      Shape(s.test.features.shape.begin() + 1, s.test.features.shape.end()) !=
          Shape(s.train.features.shape.begin() + 1, s.train.features.shape.end()))
    throw Error("data: test examples have shape " + shape_str(s.test.features.shape) + " but training examples " +
                shape_str(s.train.features.shape));
  if (s.train.size() == 0) throw Error("data: the training set has no examples");
  return s;
}

}  // namespace shardlab::data
