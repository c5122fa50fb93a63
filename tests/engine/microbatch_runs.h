// What the microbatch tests (accumulation, pipelines) share: seeded batches of 24 normal features
// and 4 classes, and how far one tensor is from another (the relative norm of the difference).
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/tensor/tensor.h"

namespace shardlab::testing {

struct Batch {
  Tensor x, y;
};

inline std::vector<Batch> batches(int n, int64_t batch) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) {
    Batch b{Tensor({batch, 24}), Tensor({batch})};
    for (int64_t k = 0; k < b.x.size(); ++k) b.x.ptr()[k] = normal(rng);
    for (int64_t k = 0; k < batch; ++k) b.y.ptr()[k] = float(rng() % 4);
    out.push_back(std::move(b));
  }
  return out;
}

inline double relative_difference(const Tensor& a, const Tensor& b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    diff += std::pow(double(a.ptr()[i]) - double(b.ptr()[i]), 2);
    norm += std::pow(double(b.ptr()[i]), 2);
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace shardlab::testing
