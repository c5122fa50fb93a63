#include "engine/import/hf_import.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/regular_file.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/runtime/trainer.h"
#include "engine/util/error.h"

namespace shardlab::importer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr uint64_t kMaxConfigBytes = 16 << 20;

Json read_json(const fs::path& file) {
  try {
    return Json::parse(checkpoint::read_small_file(file, kMaxConfigBytes));
  } catch (const Json::exception& e) {
    throw Error(file.string() + ": not valid JSON: " + e.what());
  }
}

// The config's settings, each checked where it is read; errors name config.json and the field.
struct LlamaConfig {
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, max_positions = 0;
  double eps = 1e-6, theta = 10000.0;
  bool tied = false;
};

LlamaConfig llama_config(const Json& c, const fs::path& file) {
  const std::string where = file.string();
  auto integer = [&](const char* key, int64_t fallback) {
    if (!c.contains(key) || c[key].is_null()) {
      if (fallback > 0) return fallback;
      throw Error(where + ": " + key + ": missing (a positive integer is required)");
    }
    if (!c[key].is_number_integer() || c[key].get<int64_t>() <= 0)
      throw Error(where + ": " + key + ": bad value " + c[key].dump() + " (expected a positive integer)");
    return c[key].get<int64_t>();
  };
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

// The project: tokens -> Embed -> Repeat of Llama blocks -> RMSNorm -> LM head, with the logical
// axis names Shardlab's rules use (embed, heads, kv_heads, kv, mlp, vocab).
Json llama_project(const LlamaConfig& l, const std::string& name, int64_t seq, const std::string& source) {
  auto dense = [](const char* n, int64_t features, Json axes) {
    return Json{{"name", n}, {"type", "Dense"}, {"params", {{"features", features}, {"use_bias", false}}}, {"param_axes", {{"kernel", axes}}}};
  };
  Json attn_params = {{"num_heads", l.heads}, {"causal", true}, {"use_bias", false}, {"rope", true}, {"rope_theta", l.theta}};
  if (l.kv_heads != l.heads) attn_params["num_kv_heads"] = l.kv_heads;
  if (l.head_dim * l.heads != l.hidden) attn_params["qkv_features"] = l.head_dim * l.heads;
  Json ln = {{"epsilon", l.eps}};
  Json body = {
      {"nodes", Json::array({{{"name", "ln1"}, {"type", "RMSNorm"}, {"params", ln}},
                             {{"name", "attn"}, {"type", "MultiHeadAttention"}, {"params", attn_params}},
                             {{"name", "res1"}, {"type", "Add"}},
                             {{"name", "ln2"}, {"type", "RMSNorm"}, {"params", ln}},
                             dense("up", l.intermediate, {"embed", "mlp"}),
                             dense("gate", l.intermediate, {"embed", "mlp"}),
                             {{"name", "act"}, {"type", "SiLU"}},
                             {{"name", "gated"}, {"type", "Multiply"}},
                             dense("down", l.hidden, {"mlp", "embed"}),
                             {{"name", "res2"}, {"type", "Add"}}})},
      {"edges", Json::array({{{"from", "@in.out"}, {"to", "ln1.in"}}, {{"from", "ln1.out"}, {"to", "attn.in"}},
                             {{"from", "@in.out"}, {"to", "res1.a"}}, {{"from", "attn.out"}, {"to", "res1.b"}},
                             {{"from", "res1.out"}, {"to", "ln2.in"}}, {{"from", "ln2.out"}, {"to", "gate.in"}},
                             {{"from", "ln2.out"}, {"to", "up.in"}}, {{"from", "gate.out"}, {"to", "act.in"}},
                             {{"from", "act.out"}, {"to", "gated.a"}}, {{"from", "up.out"}, {"to", "gated.b"}},
                             {{"from", "gated.out"}, {"to", "down.in"}}, {{"from", "res1.out"}, {"to", "res2.a"}},
                             {{"from", "down.out"}, {"to", "res2.b"}}})},
      {"output", "res2"}};
  Json nodes = Json::array({{{"name", "tokens"}, {"type", "Input"}, {"params", {{"shape", {seq}}, {"axes", {"seq"}}}}},
                            {{"name", "embed"}, {"type", "Embed"}, {"params", {{"num_embeddings", l.vocab}, {"features", l.hidden}}}},
                            {{"name", "blocks"}, {"type", "Repeat"}, {"params", {{"count", l.layers}}}, {"body", body}},
                            {{"name", "norm"}, {"type", "RMSNorm"}, {"params", ln}},
                            dense("head", l.vocab, {"embed", "vocab"})});
  Json edges = Json::array({{{"from", "tokens.out"}, {"to", "embed.in"}}, {{"from", "embed.out"}, {"to", "blocks.in"}},
                            {{"from", "blocks.out"}, {"to", "norm.in"}}, {{"from", "norm.out"}, {"to", "head.in"}}});
  return {{"format", "shardlab.project"},
          {"version", 1},
          {"name", name},
          {"description", "Imported from the Hugging Face Llama model in " + source + ": " + std::to_string(l.layers) + " blocks, hidden " +
                              std::to_string(l.hidden) + ", " + std::to_string(l.heads) + " heads (" + std::to_string(l.kv_heads) +
                              " key/value heads), vocabulary " + std::to_string(l.vocab) +
                              ". Its weights are the step-0 checkpoint in the checkpoint folder (train --continue starts from them). "
                              "The data is a synthetic stand-in: set your own."},
          {"graph", {{"nodes", nodes}, {"edges", edges}}},
          {"loss", {{"type", "softmax_cross_entropy"}, {"output", "head"}}},
          {"optimizer", {{"type", "adamw"}, {"learning_rate", 1e-4}, {"weight_decay", 0.0}}},
          {"data", {{"type", "synthetic"}, {"kind", "copy"}, {"feature_shape", {seq}}, {"classes", l.vocab}, {"examples", 256}}},
          {"training", {{"batch_size", 8}, {"steps", 10}, {"seed", 0}, {"checkpoint", {{"dir", name + ".init"}}}}}};
}

// Every tensor of the folder, by name, and the file each came from.
struct Weights {
  std::map<std::string, checkpoint::StoredTensor> tensors;
  std::map<std::string, fs::path> file_of;
  std::set<checkpoint::StoredDType> dtypes;
};

Weights read_weights(const fs::path& folder) {
  Weights w;
  std::vector<fs::path> files;
  const fs::path single = folder / "model.safetensors", index = folder / "model.safetensors.index.json";
  if (fs::exists(single)) {
    files.push_back(single);
  } else if (fs::exists(index)) {
    const Json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(index.string() + ": weight_map: missing (expected an object of tensor name -> shard file)");
    std::set<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) throw Error(index.string() + ": weight_map." + it.key() + ": expected a file name");
      const fs::path f(it->get<std::string>());
      if (f.has_parent_path() || f.filename() != f)
        throw Error(index.string() + ": weight_map." + it.key() + ": '" + f.string() + "' is not a file name in the folder");
      shards.insert(f.string());
    }
    for (const std::string& s : shards) files.push_back(folder / s);
  } else {
    throw Error(folder.string() + ": no model.safetensors or model.safetensors.index.json (Shardlab reads safetensors "
                                  "weights; a pytorch_model.bin must be converted first)");
  }
  for (const fs::path& f : files) {
    checkpoint::SafetensorsFile sf = checkpoint::read_safetensors(f);
    for (checkpoint::StoredTensor& t : sf.tensors) {
      if (w.tensors.count(t.name))
        throw Error(f.string() + ": tensor '" + t.name + "' is also in " + w.file_of.at(t.name).string());
      w.dtypes.insert(t.dtype);
      w.file_of[t.name] = f;
      std::string name = t.name;
      w.tensors.emplace(name, std::move(t));
    }
  }
  return w;
}

class Mapper {
 public:
  Mapper(Weights& w, const fs::path& folder) : w_(w), folder_(folder) {}

  // Tensor `name` as float32, checked to be `shape`; taken out of the folder's set.
  Tensor take(const std::string& name, const Shape& shape) {
    auto it = w_.tensors.find(name);
    if (it == w_.tensors.end()) throw Error(folder_.string() + ": tensor '" + name + "' is missing (the config says it should be there)");
    if (it->second.shape != shape)
      throw Error(w_.file_of.at(name).string() + ": tensor '" + name + "' is " + shape_str(it->second.shape) + ", the config needs " +
                  shape_str(shape));
    Tensor t = checkpoint::to_tensor(it->second);
    w_.tensors.erase(it);
    return t;
  }
  // A PyTorch Linear weight (out, in) as Shardlab's kernel (in, out).
  Tensor take_linear(const std::string& name, int64_t out, int64_t in) {
    const Tensor t = take(name, {out, in});
    Tensor k({in, out});
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) k.data[size_t(i * out + o)] = t.data[size_t(o * in + i)];
    return k;
  }
  std::vector<std::string> left() const {
    std::vector<std::string> names;
    for (const auto& [name, t] : w_.tensors) names.push_back(name);
    return names;
  }

 private:
  Weights& w_;
  fs::path folder_;
};

// Layers' tensors stacked on a leading axis, with `shape` per layer.
Tensor stacked(const std::vector<Tensor>& layers, const Shape& shape) {
  Shape s{int64_t(layers.size())};
  s.insert(s.end(), shape.begin(), shape.end());
  Tensor out(s);
  size_t at = 0;
  for (const Tensor& t : layers) {
    std::copy(t.data.begin(), t.data.end(), out.data.begin() + ptrdiff_t(at));
    at += t.data.size();
  }
  return out;
}

const char* dtype_word(checkpoint::StoredDType d) {
  return d == checkpoint::StoredDType::BF16 ? "bfloat16" : d == checkpoint::StoredDType::F16 ? "float16" : checkpoint::dtype_name(d);
}

}  // namespace

ImportedModel import_hf_folder(const fs::path& folder, const ImportOptions& options) {
  const fs::path config_file = folder / "config.json";
  if (!fs::is_directory(folder)) throw Error(folder.string() + ": not a folder (expected a Hugging Face model folder)");
  if (!fs::exists(config_file)) throw Error(folder.string() + ": no config.json (expected a Hugging Face model folder)");
  const Json config = read_json(config_file);
  const std::string type = config.value("model_type", std::string());
  if (type != "llama")
    throw Error(config_file.string() + ": model_type: '" + type +
                "' is not supported (Shardlab imports the Llama family, model_type \"llama\", for now)");
  const LlamaConfig l = llama_config(config, config_file);
  const int64_t seq = options.seq > 0 ? options.seq : std::min<int64_t>(l.max_positions, 256);
  std::string name = options.name.empty() ? fs::absolute(folder).lexically_normal().filename().string() : options.name;
  if (name.empty()) name = "imported";

  ImportedModel m;
  m.project = project::parse_project(llama_project(l, name, seq, folder.filename().string()).dump(), name + ".shardlab.json");
  Weights w = read_weights(folder);
  Mapper map(w, folder);
  const int64_t e = l.hidden, h = l.heads, kv = l.kv_heads, d = l.head_dim, f = l.intermediate;
  m.params["embed/embedding"] = map.take("model.embed_tokens.weight", {l.vocab, e});
  std::map<std::string, std::vector<Tensor>> per_layer;
  for (int64_t i = 0; i < l.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    per_layer["ln1/scale"].push_back(map.take(p + "input_layernorm.weight", {e}));
    per_layer["attn/query/kernel"].push_back(map.take_linear(p + "self_attn.q_proj.weight", h * d, e));
    per_layer["attn/key/kernel"].push_back(map.take_linear(p + "self_attn.k_proj.weight", kv * d, e));
    per_layer["attn/value/kernel"].push_back(map.take_linear(p + "self_attn.v_proj.weight", kv * d, e));
    per_layer["attn/out/kernel"].push_back(map.take_linear(p + "self_attn.o_proj.weight", e, h * d));
    per_layer["ln2/scale"].push_back(map.take(p + "post_attention_layernorm.weight", {e}));
    per_layer["gate/kernel"].push_back(map.take_linear(p + "mlp.gate_proj.weight", f, e));
    per_layer["up/kernel"].push_back(map.take_linear(p + "mlp.up_proj.weight", f, e));
    per_layer["down/kernel"].push_back(map.take_linear(p + "mlp.down_proj.weight", e, f));
  }
  // (in, out) kernels viewed with their heads split out, as the attention layer holds them.
  const std::map<std::string, Shape> shapes = {
      {"ln1/scale", {e}},          {"attn/query/kernel", {e, h, d}}, {"attn/key/kernel", {e, kv, d}}, {"attn/value/kernel", {e, kv, d}},
      {"attn/out/kernel", {h, d, e}}, {"ln2/scale", {e}},            {"gate/kernel", {e, f}},         {"up/kernel", {e, f}},
      {"down/kernel", {f, e}}};
  for (auto& [path, layers] : per_layer) m.params["blocks/" + path] = stacked(layers, shapes.at(path));
  m.params["norm/scale"] = map.take("model.norm.weight", {e});
  if (l.tied) {
    const Tensor& emb = m.params["embed/embedding"];
    Tensor head({e, l.vocab});
    for (int64_t v = 0; v < l.vocab; ++v)
      for (int64_t i = 0; i < e; ++i) head.data[size_t(i * l.vocab + v)] = emb.data[size_t(v * e + i)];
    m.params["head/kernel"] = head;
    m.notes.push_back("tie_word_embeddings: the LM head starts as the embedding's transpose and is trained apart from it "
                      "(Shardlab does not tie parameters yet)");
  } else {
    m.params["head/kernel"] = map.take_linear("lm_head.weight", l.vocab, e);
  }
  for (checkpoint::StoredDType dt : w.dtypes)
    if (dt != checkpoint::StoredDType::F32)
      m.notes.push_back(std::string("weights stored as ") + dtype_word(dt) + " were converted to float32 (exactly)");
  // Anything left is a weight the architecture does not use: say so rather than drop it silently.
  const std::vector<std::string> left = map.left();
  for (const std::string& n : left)
    if (n.find("rotary_emb.inv_freq") == std::string::npos)  // a buffer some exports include; recomputed from rope_theta
      throw Error(w.file_of.at(n).string() + ": tensor '" + n + "' has no place in the Llama layout this config describes");
  return m;
}

fs::path write_imported(ImportedModel model, const fs::path& project_file, bool overwrite_project) {
  std::string stem = project_file.filename().string();  // "llama.shardlab.json" -> "llama"
  for (const std::string suffix : {".json", ".shardlab"})
    if (stem.size() > suffix.size() && stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0)
      stem.resize(stem.size() - suffix.size());
  Json doc = Json::parse(project::to_json_string(model.project));
  doc["training"]["checkpoint"] = {{"dir", stem + ".init"}};
  doc["name"] = stem;
  project::Project p = project::parse_project(doc.dump(), project_file.filename().string());
  const fs::path init = (project_file.has_parent_path() ? project_file.parent_path() : fs::path(".")) / (stem + ".init");
  if (!overwrite_project && fs::exists(project_file))
    throw Error(project_file.string() + ": already exists; write the imported project under another name");
  if (fs::exists(init) && !fs::is_empty(init))
    throw Error(init.string() + ": already holds a checkpoint; remove it or import to another project name");
  project::save_project(p, project_file);
  p.file = project_file;
  runtime::Trainer trainer(p);
  for (const auto& [path, value] : model.params) trainer.set_parameter(path, value);
  trainer.save_checkpoint(init.string(), 0);
  trainer.wait_for_saves();
  return init / "step_000000";
}

}  // namespace shardlab::importer
