// What the microbatch tests (accumulation, pipelines) share: seeded batches of 24 normal features
// and 4 classes, how far one tensor is from another (the relative norm of the difference), and the
// comparison of a run's losses and parameters with a reference run's.
#pragma once

#include <algorithm>
#include <QString>
#include <cmath>
#include <map>
#include <string>
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

// A few training steps' losses, and every parameter after them.
struct Run {
  std::vector<double> losses;
  std::map<std::string, Tensor> params;
};

// The first place `got` differs from `want` by more than 1e-6 relative (a step's loss, or a
// parameter's norm), described; empty when they agree.
inline QString first_difference(const Run& got, const Run& want) {
  if (got.losses.size() != want.losses.size() || got.params.size() != want.params.size())
    return QString("%1 losses and %2 parameters, against %3 and %4")
        .arg(got.losses.size()).arg(got.params.size()).arg(want.losses.size()).arg(want.params.size());
  for (size_t i = 0; i < want.losses.size(); ++i)
    if (!(std::abs(got.losses[i] - want.losses[i]) <= 1e-6 * std::abs(want.losses[i])))
      return QString("step %1: loss %2, against %3").arg(i + 1).arg(got.losses[i], 0, 'g', 10).arg(want.losses[i], 0, 'g', 10);
  for (const auto& [path, value] : want.params) {
    const auto it = got.params.find(path);
    if (it == got.params.end()) return QString("no parameter %1").arg(QString::fromStdString(path));
    const double d = relative_difference(it->second, value);
    if (!(d <= 1e-6)) return QString("%1 differs by %2 (relative norm)").arg(QString::fromStdString(path)).arg(d);
  }
  return {};
}

}  // namespace shardlab::testing
