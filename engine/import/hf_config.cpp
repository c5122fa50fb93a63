#include "engine/import/hf_config.h"

#include "engine/checkpoint/regular_file.h"
#include "engine/util/error.h"

namespace shardlab::importer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr uint64_t kMaxConfigBytes = 16 << 20;

// A positive integer setting of config.json, or `fallback` (0: required) where it is absent.
int64_t config_integer(const Json& c, const std::string& where, const char* key, int64_t fallback) {
  if (!c.contains(key) || c[key].is_null()) {
    if (fallback > 0) return fallback;
    throw Error(where + ": " + key + ": missing (a positive integer is required)");
  }
  if (!c[key].is_number_integer() || c[key].get<int64_t>() <= 0)
    throw Error(where + ": " + key + ": bad value " + c[key].dump() + " (expected a positive integer)");
  return c[key].get<int64_t>();
}

}  // namespace

Json read_json(const fs::path& file) {
  try {
    return Json::parse(checkpoint::read_small_file(file, kMaxConfigBytes));
  } catch (const Json::exception& e) {
    throw Error(file.string() + ": not valid JSON: " + e.what());
  }
}

LlamaConfig llama_config(const Json& c, const fs::path& file) {
  const std::string where = file.string();
  auto integer = [&](const char* key, int64_t fallback) { return config_integer(c, where, key, fallback); };
  auto number = [&](const char* key, double fallback) {
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_number() || c[key].get<double>() <= 0)
      throw Error(where + ": " + key + ": bad value " + c[key].dump() + " (expected a positive number)");
    return c[key].get<double>();
  };
  auto flag = [&](const char* key) { return c.contains(key) && c[key].is_boolean() && c[key].get<bool>(); };
  // What the layers do not model is refused by name rather than imported wrong.
  if (c.contains("hidden_act") && c["hidden_act"] != "silu")
    throw Error(where + ": hidden_act: " + c["hidden_act"].dump() + " is not supported (Llama's MLP gate is \"silu\")");
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null())
    throw Error(where + ": rope_scaling: " + c["rope_scaling"].dump() +
                " is not supported (Shardlab's rotary embedding has no scaling; only rope_theta)");
  if (flag("attention_bias")) throw Error(where + ": attention_bias: true is not supported (Llama's projections have no bias)");
  if (flag("mlp_bias")) throw Error(where + ": mlp_bias: true is not supported (Llama's MLP has no bias)");
  LlamaConfig l;
  l.vocab = integer("vocab_size", 0);
  l.hidden = integer("hidden_size", 0);
  l.intermediate = integer("intermediate_size", 0);
  l.layers = integer("num_hidden_layers", 0);
  l.heads = integer("num_attention_heads", 0);
  l.kv_heads = integer("num_key_value_heads", l.heads);
  if (l.heads % l.kv_heads)
    throw Error(where + ": num_key_value_heads: " + std::to_string(l.kv_heads) + " does not divide num_attention_heads " +
                std::to_string(l.heads));
  if (l.hidden % l.heads && !c.contains("head_dim"))
    throw Error(where + ": num_attention_heads: " + std::to_string(l.heads) + " does not divide hidden_size " + std::to_string(l.hidden));
  l.head_dim = integer("head_dim", l.hidden / l.heads);
  l.max_positions = integer("max_position_embeddings", 2048);
  l.eps = number("rms_norm_eps", 1e-6);
  l.theta = number("rope_theta", 10000.0);
  l.tied = flag("tie_word_embeddings");
  return l;
}


Gpt2Config gpt2_config(const Json& c, const fs::path& file) {
  const std::string where = file.string();
  auto integer = [&](const char* key, int64_t fallback) { return config_integer(c, where, key, fallback); };
  const std::string act = c.value("activation_function", std::string("gelu_new"));
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    throw Error(where + ": activation_function: '" + act + "' is not supported (Shardlab's GELU is the tanh approximation, gelu_new)");
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"})
    if (c.contains(key) && c[key].is_boolean() && c[key].get<bool>()) throw Error(where + ": " + key + ": true is not supported");
  if (c.contains("scale_attn_weights") && c["scale_attn_weights"] == false)
    throw Error(where + ": scale_attn_weights: false is not supported (attention scores are scaled by 1/sqrt(head size))");
  Gpt2Config g;
  g.vocab = integer("vocab_size", 0);
  g.embed = integer("n_embd", 0);
  g.layers = integer("n_layer", 0);
  g.heads = integer("n_head", 0);
  g.positions = integer("n_positions", 1024);
  g.inner = integer("n_inner", 4 * g.embed);
  if (g.embed % g.heads) throw Error(where + ": n_head: " + std::to_string(g.heads) + " does not divide n_embd " + std::to_string(g.embed));
  if (c.contains("layer_norm_epsilon") && c["layer_norm_epsilon"].is_number()) g.eps = c["layer_norm_epsilon"].get<double>();
  return g;
}

}  // namespace shardlab::importer
