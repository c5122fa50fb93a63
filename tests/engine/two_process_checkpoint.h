// A checkpoint of blocks written as two processes write one (engine/checkpoint/blocks.h), for the
// tests that read such a checkpoint without running processes: "process 1" writes the upper blocks
// of an array, "process 2" the lower ones and a bias, then the index and the commit.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/blocks.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/sharded.h"
#include "engine/tensor/tensor.h"

namespace shardlab::testing {

// A 6x8 array with element (r, c) = r * 8 + c + 0.5.
inline Tensor counting(int64_t rows, int64_t cols) {
  Tensor t({rows, cols});
  for (int64_t i = 0; i < t.size(); ++i) t.data[size_t(i)] = float(i) + 0.5f;
  return t;
}

inline Tensor slice(const Tensor& t, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  Tensor out({rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out.data[size_t(r * cols + c)] = t.data[size_t((r0 + r) * t.shape[1] + c0 + c)];
  return out;
}

// The array cut into a 2x2 grid of blocks (rows at 0 and 3, columns at 0 and 5: unequal sizes).
inline std::vector<std::pair<std::string, Tensor>> grid(const std::string& name, const Tensor& t) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (int64_t r0 : {0, 3})
    for (int64_t c0 : {0, 5}) {
      const int64_t rows = r0 == 0 ? 3 : t.shape[0] - 3, cols = c0 == 0 ? 5 : t.shape[1] - 5;
      out.push_back({checkpoint::block_name(name, {r0, c0}), slice(t, r0, c0, rows, cols)});
    }
  return out;
}

inline nlohmann::ordered_json blocks_meta(const Tensor& w) {
  nlohmann::ordered_json meta;
  meta["format"] = "shardlab.checkpoint";
  meta["version"] = 2;
  meta["blocks"] = {{"params/w", w.shape}, {"params/b", Shape{8}}};
  return meta;
}

// A step written as two processes write it: "process 1" the upper blocks, "process 2" the lower
// ones and the bias, then the index and the commit.
inline std::filesystem::path write_two_process_step(const std::filesystem::path& root, const Tensor& w, const Tensor& b, int64_t step) {
  nlohmann::ordered_json meta = blocks_meta(w);
  const std::filesystem::path tmp = checkpoint::begin_save(root, step, meta);
  const auto blocks = grid("params/w", w);
  const std::vector<std::pair<std::string, Tensor>> first{blocks[0], blocks[1]};
  const std::vector<std::pair<std::string, Tensor>> second{blocks[2], blocks[3], {checkpoint::block_name("params/b", {0}), b}};
  std::vector<std::pair<std::string, std::string>> weight_map;
  const std::string file1 = checkpoint::write_shard(tmp, checkpoint::tensor_file(first, step), 1, 2);
  const std::string file2 = checkpoint::write_shard(tmp, checkpoint::tensor_file(second, step), 2, 2);
  for (const auto& [n, t] : first) weight_map.push_back({n, file1});
  for (const auto& [n, t] : second) weight_map.push_back({n, file2});
  checkpoint::write_index(tmp, weight_map, uint64_t(w.size() + b.size()) * 4);
  return checkpoint::commit_save(root, step, tmp, meta);
}

}  // namespace shardlab::testing
