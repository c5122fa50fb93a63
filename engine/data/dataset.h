// In-memory datasets and the loader that builds them (with their train/test split) from a DataSpec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/data/data_spec.h"
#include "engine/tensor/tensor.h"

namespace shardlab::data {

struct Dataset {
  Tensor features;              // [N, ...] float
  Tensor targets;               // [N] integer class labels stored as float, or [N, ...] float regression targets
  bool integer_labels = false;
  int64_t num_classes = 0;      // when integer_labels: max label + 1 over both splits, or from the spec
  int64_t size() const { return features.shape.empty() ? 0 : features.shape[0]; }  // N
};

struct DataSplits {
  Dataset train;
  Dataset test;  // may be empty (size 0)
};

// Loads per the spec; relative paths resolve against base_dir (the project file's folder).
// A missing file gives an error naming the path (for fashion_mnist, also the Debian package that installs it).
// Labels: IDX targets of rank 1 holding non-negative integers, and npy targets of an integer dtype, are class
// labels; anything else is a float regression target. A test_fraction split holds out the last examples of a
// permutation seeded by spec.seed; each split keeps the original example order.
DataSplits load_dataset(const DataSpec& spec, const std::filesystem::path& base_dir);

// Examples a test_fraction holds out of n (rounded); throws Error under `what` when none would be
// left to train on.
int64_t test_split_size(int64_t n, double test_fraction, const std::string& what);

// The rows `indices` of ds, in that order (labels metadata copied).
Dataset select_examples(const Dataset& ds, const std::vector<int64_t>& indices);

// Counter-based randomness shared by data generation, splitting and batch shuffling. Values depend only on
// the arguments (never on the standard library's distributions), so every platform gets the same data.
uint64_t splitmix64(uint64_t x);
uint64_t hash64(uint64_t seed, uint64_t stream, uint64_t index);
double hash_normal(uint64_t seed, uint64_t stream, uint64_t index);  // standard normal (Box-Muller)
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);   // Fisher-Yates driven by hash64

}  // namespace shardlab::data
