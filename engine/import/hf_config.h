// A Hugging Face config.json as the importer and the exporter read it: the Llama family's and
// GPT-2's settings, each checked where it is read (errors name the file and the field), and what
// Shardlab's layers cannot model refused by name rather than mapped wrong.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace shardlab::importer {

// A small JSON file (config.json, an index), read whole; errors name it.
nlohmann::json read_json(const std::filesystem::path& file);

struct LlamaConfig {
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, max_positions = 0;
  double eps = 1e-6, theta = 10000.0;
  bool tied = false;
};
LlamaConfig llama_config(const nlohmann::json& c, const std::filesystem::path& file);

struct Gpt2Config {
  int64_t vocab = 0, embed = 0, layers = 0, heads = 0, positions = 0, inner = 0;
  double eps = 1e-5;
};
Gpt2Config gpt2_config(const nlohmann::json& c, const std::filesystem::path& file);

}  // namespace shardlab::importer
