// The project's "data" object: which dataset to load and how, parsed and validated from JSON.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/tensor/tensor.h"

namespace shardlab::data {

inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

struct DataSpec {
  std::string type;  // "fashion_mnist" | "idx" | "npy" | "npz" | "synthetic"
  std::string dir;   // fashion_mnist: folder with the four IDX files; default kFashionMnistDefaultDir
  std::string train_images, train_labels, test_images, test_labels;  // idx (relative to the project dir allowed)
  std::string features, targets;  // npy: features [N,...]; targets [N] integer dtype = labels, float dtype = regression
  // npz: the archive, and the names of the arrays in it (features and targets as for npy; optional
  // test arrays; unnamed: x_train/y_train (+ x_test/y_test) or x/y, whichever the archive has)
  std::string file, test_features, test_targets;
  // synthetic: "ones" | "normal" | "blobs" | "copy" (token sequences: tokens then as many blanks (0)
  // in, 0s then the same tokens out)
  std::string kind;
  Shape feature_shape;            // synthetic: per-example shape, e.g. [1024]
  Shape target_shape;             // synthetic ones/normal: per-example target shape, e.g. [10]
  int64_t classes = 0;            // synthetic blobs: number of classes (targets are integer labels)
  int64_t examples = 0;           // synthetic: number of examples
  double test_fraction = 0;       // npy/npz/synthetic: fraction held out as the test split (last after a seeded shuffle)
  double scale = 1.0;             // features are multiplied by this; fashion_mnist defaults to 1/255
  uint64_t seed = 0;              // synthetic data and split seed
};

// Parses and validates the JSON object. `where` prefixes every error, e.g. with where = "p.shardlab.json: data":
//   "p.shardlab.json: data.kind: unknown synthetic kind 'zeros' (expected ones, normal, blobs or copy)".
// Unknown keys, keys that the chosen type does not use, wrong value types and missing required fields
// are all errors (shardlab::Error) naming the key.
DataSpec parse_data_spec(const nlohmann::ordered_json& j, const std::string& where);

}  // namespace shardlab::data
