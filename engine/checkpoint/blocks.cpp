#include "engine/checkpoint/blocks.h"

#include <algorithm>
#include <cstring>

#include "engine/util/error.h"

namespace shardlab::checkpoint {

namespace {

// Copies the box [at, at + size) (global coordinates) from `src`, an array of shape `src_shape`
// placed at `src_start`, into `dst`, of shape `dst_shape` placed at `dst_start`: row by row of the
// last dimension, `elem` bytes an element.
void copy_box(const uint8_t* src, const Shape& src_shape, const Shape& src_start, uint8_t* dst, const Shape& dst_shape,
              const Shape& dst_start, const Shape& at, const Shape& size, size_t elem) {
  const size_t rank = at.size();
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  for (int64_t s : size)
    if (s <= 0) return;
  auto offset = [&](const Shape& shape, const Shape& origin, const Shape& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < rank; ++d) o = o * shape[d] + (idx[d] - origin[d]);
    return size_t(o);
  };
  Shape idx = at;
  const size_t run = size_t(size.back()) * elem;
  while (true) {
    std::memcpy(dst + offset(dst_shape, dst_start, idx) * elem, src + offset(src_shape, src_start, idx) * elem, run);
    // The next row: the odometer over every dimension but the last.
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++idx[d] < at[d] + size[d]) break;
      idx[d] = at[d];
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

// The overlap of two boxes; false when they do not meet.
bool intersect(const Shape& a_start, const Shape& a_size, const Shape& b_start, const Shape& b_size, Shape& at, Shape& size) {
  at.resize(a_start.size());
  size.resize(a_start.size());
  for (size_t d = 0; d < a_start.size(); ++d) {
    at[d] = std::max(a_start[d], b_start[d]);
    const int64_t end = std::min(a_start[d] + a_size[d], b_start[d] + b_size[d]);
    if (end <= at[d]) return false;
    size[d] = end - at[d];
  }
  return true;
}

}  // namespace

std::string block_name(const std::string& array, const Shape& start) {
  std::string n = array + "@";
  for (size_t d = 0; d < start.size(); ++d) {
    if (d) n += ',';
    n += std::to_string(start[d]);
  }
  return n;
}

bool parse_block_name(const std::string& name, BlockRef& out) {
  const size_t at = name.rfind('@');
  if (at == std::string::npos || at == 0) return false;
  BlockRef r;
  r.array = name.substr(0, at);
  const std::string rest = name.substr(at + 1);
  size_t i = 0;
  while (i < rest.size()) {
    size_t j = i;
    int64_t v = 0;
    while (j < rest.size() && rest[j] >= '0' && rest[j] <= '9' && j - i < 18) v = v * 10 + (rest[j++] - '0');
    if (j == i || (j < rest.size() && rest[j] != ',')) return false;
    r.start.push_back(v);
    i = j + 1;
    if (j < rest.size() && i == rest.size()) return false;  // a trailing comma
  }
  out = std::move(r);
  return true;
}

bool boxes_overlap(const Shape& start, const Shape& size, const Shape& other_start, const Shape& other_size) {
  Shape at, s;
  return intersect(start, size, other_start, other_size, at, s);
}

void check_tiling(const std::map<std::string, Shape>& shapes, const std::vector<std::pair<std::string, Shape>>& blocks,
                  const std::string& who) {
  std::map<std::string, std::vector<std::pair<Shape, Shape>>> of;  // array -> (start, size) of its blocks
  for (const auto& [name, size] : blocks) {
    BlockRef r;
    if (!parse_block_name(name, r)) throw Error(who + ": tensor '" + name + "' is not a block ('<array>@<start>,...')");
    auto it = shapes.find(r.array);
    if (it == shapes.end()) throw Error(who + ": block '" + name + "' belongs to '" + r.array + "', which checkpoint.json's blocks do not list");
    const Shape& shape = it->second;
    if (r.start.size() != shape.size() || size.size() != shape.size())
      throw Error(who + ": block '" + name + "' of shape " + shape_str(size) + " has not the rank of its array, " + shape_str(shape));
    for (size_t d = 0; d < shape.size(); ++d)
      if (r.start[d] + size[d] > shape[d])
        throw Error(who + ": block '" + name + "' of shape " + shape_str(size) + " reaches past its array's end, " + shape_str(shape));
    for (const auto& [s, z] : of[r.array])
      if (boxes_overlap(s, z, r.start, size))
        throw Error(who + ": block '" + name + "' overlaps " + block_name(r.array, s) + " (written twice?)");
    of[r.array].push_back({r.start, size});
  }
  for (const auto& [array, shape] : shapes) {
    int64_t covered = 0;
    for (const auto& [s, z] : of[array]) covered += numel(z);
    if (covered != numel(shape))
      throw Error(who + ": array '" + array + "' " + shape_str(shape) + " has " + std::to_string(numel(shape) - covered) +
                  " of its " + std::to_string(numel(shape)) + " elements in no block (a process's file is missing part of it)");
  }
}

SafetensorsFile assemble_blocks(SafetensorsFile f, const std::vector<std::pair<std::string, Shape>>& order,
                                const std::string& who) {
  std::map<std::string, std::vector<std::pair<BlockRef, StoredTensor*>>> of;
  for (StoredTensor& t : f.tensors) {
    BlockRef r;
    if (!parse_block_name(t.name, r)) throw Error(who + ": tensor '" + t.name + "' is not a block");
    of[r.array].push_back({r, &t});
  }
  SafetensorsFile out;
  for (const auto& [k, v] : f.metadata)
    if (k.rfind(kChecksumPrefix, 0) != 0) out.metadata[k] = v;
  for (const auto& [array, shape] : order) {
    const auto& blocks = of[array];
    if (blocks.empty()) throw Error(who + ": array '" + array + "' has no blocks");
    StoredTensor whole;
    whole.name = array;
    whole.dtype = blocks.front().second->dtype;
    whole.shape = shape;
    const size_t elem = dtype_size(whole.dtype);
    whole.bytes.resize(size_t(numel(shape)) * elem);
    const Shape origin(shape.size(), 0);
    for (const auto& [ref, t] : blocks) {
      if (t->dtype != whole.dtype)
        throw Error(who + ": block '" + t->name + "' is " + dtype_name(t->dtype) + " where the array's other blocks are " +
                    dtype_name(whole.dtype));
      copy_box(t->bytes.data(), t->shape, ref.start, whole.bytes.data(), shape, origin, ref.start, t->shape, elem);
      std::vector<uint8_t>().swap(t->bytes);
    }
    out.tensors.push_back(std::move(whole));
  }
  return out;
}

Tensor region_from_blocks(const std::string& array, const std::vector<const StoredTensor*>& blocks, const Shape& start,
                          const Shape& size) {
  Tensor out(size);
  int64_t covered = 0;
  for (const StoredTensor* t : blocks) {
    BlockRef r;
    if (!parse_block_name(t->name, r) || r.start.size() != start.size()) continue;
    Shape at, s;
    if (!intersect(r.start, t->shape, start, size, at, s) && !start.empty()) continue;
    const Tensor x = to_tensor(*t);
    copy_box(reinterpret_cast<const uint8_t*>(x.ptr()), t->shape, r.start, reinterpret_cast<uint8_t*>(out.ptr()), size, start, at,
             s, sizeof(float));
    covered += start.empty() ? 1 : numel(s);
  }
  if (covered != numel(size))
    throw Error("array '" + array + "': the checkpoint's blocks cover " + std::to_string(covered) + " of the " +
                std::to_string(numel(size)) + " elements of the region " + shape_str(size) + " at " + shape_str(start) + " this process needs");
  return out;
}

}  // namespace shardlab::checkpoint
