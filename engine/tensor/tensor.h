// Host tensors: a shape and owned row-major storage. Parameters, datasets and batches live here;
// the executor works on views into its arena instead (engine/backends/cpu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// "(128, 784)"
std::string shape_str(const Shape& s);

template <class T>
struct TensorT {
  Shape shape;
  std::vector<T> data;

  TensorT() = default;
  explicit TensorT(Shape s, T fill = T(0)) : shape(std::move(s)), data(size_t(numel(shape)), fill) {}
  TensorT(Shape s, std::vector<T> d) : shape(std::move(s)), data(std::move(d)) {}

  int64_t size() const { return int64_t(data.size()); }
  int64_t rank() const { return int64_t(shape.size()); }
  T* ptr() { return data.data(); }
  const T* ptr() const { return data.data(); }
};

using Tensor = TensorT<float>;

}  // namespace shardlab
