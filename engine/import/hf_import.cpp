#include "engine/import/hf_import.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/safetensors.h"
#include "engine/import/hf_config.h"
#include "engine/runtime/trainer.h"
#include "engine/util/atomic_file.h"
#include "engine/util/error.h"

namespace shardlab::importer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

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
                            // A tied LM head is the embedding's table, shared (as the model trains it).
                            l.tied ? Json{{"name", "head"}, {"type", "Attend"}, {"params", {{"embed", "embed"}}}}
                                   : dense("head", l.vocab, {"embed", "vocab"})});
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

// tokens -> Embed + learned positions -> Repeat of pre-norm blocks (LayerNorm, attention with
// biases, LayerNorm, GELU MLP) -> LayerNorm -> LM head.
Json gpt2_project(const Gpt2Config& g, const std::string& name, int64_t seq, const std::string& source) {
  Json ln = {{"epsilon", g.eps}};
  Json body = {
      {"nodes", Json::array({{{"name", "ln1"}, {"type", "LayerNorm"}, {"params", ln}},
                             {{"name", "attn"}, {"type", "MultiHeadAttention"}, {"params", {{"num_heads", g.heads}, {"causal", true}}}},
                             {{"name", "res1"}, {"type", "Add"}},
                             {{"name", "ln2"}, {"type", "LayerNorm"}, {"params", ln}},
                             {{"name", "mlp1"}, {"type", "Dense"}, {"params", {{"features", g.inner}}}, {"param_axes", {{"kernel", {"embed", "mlp"}}, {"bias", {"mlp"}}}}},
                             {{"name", "gelu"}, {"type", "GELU"}},
                             {{"name", "mlp2"}, {"type", "Dense"}, {"params", {{"features", g.embed}}}, {"param_axes", {{"kernel", {"mlp", "embed"}}, {"bias", {"embed"}}}}},
                             {{"name", "res2"}, {"type", "Add"}}})},
      {"edges", Json::array({{{"from", "@in.out"}, {"to", "ln1.in"}}, {{"from", "ln1.out"}, {"to", "attn.in"}},
                             {{"from", "@in.out"}, {"to", "res1.a"}}, {{"from", "attn.out"}, {"to", "res1.b"}},
                             {{"from", "res1.out"}, {"to", "ln2.in"}}, {{"from", "ln2.out"}, {"to", "mlp1.in"}},
                             {{"from", "mlp1.out"}, {"to", "gelu.in"}}, {{"from", "gelu.out"}, {"to", "mlp2.in"}},
                             {{"from", "res1.out"}, {"to", "res2.a"}}, {{"from", "mlp2.out"}, {"to", "res2.b"}}})},
      {"output", "res2"}};
  Json nodes = Json::array({{{"name", "tokens"}, {"type", "Input"}, {"params", {{"shape", {seq}}, {"axes", {"seq"}}}}},
                            {{"name", "embed"}, {"type", "Embed"}, {"params", {{"num_embeddings", g.vocab}, {"features", g.embed}}}},
                            {{"name", "pos"}, {"type", "PositionEmbedding"}},
                            {{"name", "blocks"}, {"type", "Repeat"}, {"params", {{"count", g.layers}}}, {"body", body}},
                            {{"name", "norm"}, {"type", "LayerNorm"}, {"params", ln}},
                            // GPT-2's LM head is its token embedding's table, shared.
                            {{"name", "head"}, {"type", "Attend"}, {"params", {{"embed", "embed"}}}}});
  Json edges = Json::array({{{"from", "tokens.out"}, {"to", "embed.in"}}, {{"from", "embed.out"}, {"to", "pos.in"}},
                            {{"from", "pos.out"}, {"to", "blocks.in"}}, {{"from", "blocks.out"}, {"to", "norm.in"}},
                            {{"from", "norm.out"}, {"to", "head.in"}}});
  return {{"format", "shardlab.project"},
          {"version", 1},
          {"name", name},
          {"description", "Imported from the Hugging Face GPT-2 model in " + source + ": " + std::to_string(g.layers) + " blocks, n_embd " +
                              std::to_string(g.embed) + ", " + std::to_string(g.heads) + " heads, vocabulary " + std::to_string(g.vocab) +
                              ". Its weights are the step-0 checkpoint in the checkpoint folder (train --continue starts from them). "
                              "The data is a synthetic stand-in: set your own."},
          {"graph", {{"nodes", nodes}, {"edges", edges}}},
          {"loss", {{"type", "softmax_cross_entropy"}, {"output", "head"}}},
          {"optimizer", {{"type", "adamw"}, {"learning_rate", 1e-4}, {"weight_decay", 0.0}}},
          {"data", {{"type", "synthetic"}, {"kind", "copy"}, {"feature_shape", {seq}}, {"classes", g.vocab}, {"examples", 256}}},
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
  bool has(const std::string& name) const { return w_.tensors.count(name) > 0; }
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

// Columns [from, from + n) of a (rows, cols) matrix.
Tensor columns(const Tensor& t, int64_t from, int64_t n) {
  const int64_t rows = t.shape.at(0), cols = t.shape.at(1);
  Tensor out({rows, n});
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(t.data.begin() + ptrdiff_t(r * cols + from), n, out.data.begin() + ptrdiff_t(r * n));
  return out;
}

void note_dtypes(ImportedModel& m, const Weights& w) {
  for (checkpoint::StoredDType dt : w.dtypes)
    if (dt != checkpoint::StoredDType::F32)
      m.notes.push_back(std::string("weights stored as ") + dtype_word(dt) + " were converted to float32 (exactly)");
}

// Anything left is a weight the architecture does not use: said, not dropped silently. `buffers`:
// name fragments of non-weights some exports include (recomputed, or masks).
void check_all_used(const Mapper& map, const Weights& w, const std::vector<std::string>& buffers) {
  for (const std::string& n : map.left())
    if (std::none_of(buffers.begin(), buffers.end(), [&](const std::string& b) { return n.find(b) != std::string::npos; }))
      throw Error(w.file_of.at(n).string() + ": tensor '" + n + "' has no place in the layout this config describes");
}

ImportedModel import_llama(const Json& config, const fs::path& config_file, const fs::path& folder, const std::string& name,
                           const ImportOptions& options) {
  const LlamaConfig l = llama_config(config, config_file);
  const int64_t seq = options.seq > 0 ? options.seq : std::min<int64_t>(l.max_positions, 256);
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
    // A checkpoint may carry the tied head's copy of the table: the model reads the embedding's.
    if (map.has("lm_head.weight")) map.take("lm_head.weight", {l.vocab, e});
    m.notes.push_back("tie_word_embeddings: the LM head shares the token embedding's table (an Attend node), as the model trains it");
  } else {
    m.params["head/kernel"] = map.take_linear("lm_head.weight", l.vocab, e);
  }
  note_dtypes(m, w);
  check_all_used(map, w, {"rotary_emb.inv_freq"});
  return m;
}

// GPT-2's Conv1D weights are already (in, out); c_attn holds q, k and v side by side.
ImportedModel import_gpt2(const Json& config, const fs::path& config_file, const fs::path& folder, const std::string& name,
                          const ImportOptions& options) {
  const Gpt2Config g = gpt2_config(config, config_file);
  const int64_t seq = options.seq > 0 ? options.seq : std::min<int64_t>(g.positions, 256);
  if (seq > g.positions)
    throw Error(config_file.string() + ": n_positions: " + std::to_string(g.positions) + " positions, fewer than the " +
                std::to_string(seq) + " tokens asked for (--seq)");
  ImportedModel m;
  m.project = project::parse_project(gpt2_project(g, name, seq, folder.filename().string()).dump(), name + ".shardlab.json");
  Weights w = read_weights(folder);
  Mapper map(w, folder);
  const int64_t e = g.embed, h = g.heads, d = e / h, f = g.inner;
  // Checkpoints saved from GPT2LMHeadModel prefix the body with "transformer."; GPT2Model's do not.
  const std::string t = map.has("transformer.wte.weight") ? "transformer." : "";
  m.params["embed/embedding"] = map.take(t + "wte.weight", {g.vocab, e});
  const Tensor wpe = map.take(t + "wpe.weight", {g.positions, e});
  m.params["pos/embedding"] = Tensor({seq, e}, std::vector<float>(wpe.data.begin(), wpe.data.begin() + seq * e));
  std::map<std::string, std::vector<Tensor>> per_layer;
  for (int64_t i = 0; i < g.layers; ++i) {
    const std::string p = t + "h." + std::to_string(i) + ".";
    per_layer["ln1/scale"].push_back(map.take(p + "ln_1.weight", {e}));
    per_layer["ln1/bias"].push_back(map.take(p + "ln_1.bias", {e}));
    const Tensor qkv = map.take(p + "attn.c_attn.weight", {e, 3 * e}), qkv_bias = map.take(p + "attn.c_attn.bias", {3 * e});
    const char* parts[] = {"query", "key", "value"};
    for (int64_t k = 0; k < 3; ++k) {
      per_layer[std::string("attn/") + parts[k] + "/kernel"].push_back(columns(qkv, k * e, e));
      per_layer[std::string("attn/") + parts[k] + "/bias"].push_back(
          Tensor({e}, std::vector<float>(qkv_bias.data.begin() + k * e, qkv_bias.data.begin() + (k + 1) * e)));
    }
    per_layer["attn/out/kernel"].push_back(map.take(p + "attn.c_proj.weight", {e, e}));
    per_layer["attn/out/bias"].push_back(map.take(p + "attn.c_proj.bias", {e}));
    per_layer["ln2/scale"].push_back(map.take(p + "ln_2.weight", {e}));
    per_layer["ln2/bias"].push_back(map.take(p + "ln_2.bias", {e}));
    per_layer["mlp1/kernel"].push_back(map.take(p + "mlp.c_fc.weight", {e, f}));
    per_layer["mlp1/bias"].push_back(map.take(p + "mlp.c_fc.bias", {f}));
    per_layer["mlp2/kernel"].push_back(map.take(p + "mlp.c_proj.weight", {f, e}));
    per_layer["mlp2/bias"].push_back(map.take(p + "mlp.c_proj.bias", {e}));
  }
  const std::map<std::string, Shape> shapes = {
      {"ln1/scale", {e}},          {"ln1/bias", {e}},           {"attn/query/kernel", {e, h, d}}, {"attn/query/bias", {h, d}},
      {"attn/key/kernel", {e, h, d}}, {"attn/key/bias", {h, d}}, {"attn/value/kernel", {e, h, d}}, {"attn/value/bias", {h, d}},
      {"attn/out/kernel", {h, d, e}}, {"attn/out/bias", {e}},    {"ln2/scale", {e}},              {"ln2/bias", {e}},
      {"mlp1/kernel", {e, f}},     {"mlp1/bias", {f}},          {"mlp2/kernel", {f, e}},         {"mlp2/bias", {e}}};
  for (auto& [path, layers] : per_layer) m.params["blocks/" + path] = stacked(layers, shapes.at(path));
  m.params["norm/scale"] = map.take(t + "ln_f.weight", {e});
  m.params["norm/bias"] = map.take(t + "ln_f.bias", {e});
  // GPT-2 ties its LM head to the token embedding; a checkpoint may still carry the copy.
  if (map.has("lm_head.weight")) map.take("lm_head.weight", {g.vocab, e});
  m.notes.push_back("GPT-2 ties its LM head to the token embedding: the head shares its table (an Attend node), as GPT-2 trains it");
  note_dtypes(m, w);
  check_all_used(map, w, {".attn.bias", ".attn.masked_bias"});  // old checkpoints' causal-mask buffers
  return m;
}

}  // namespace

ImportedModel import_hf_folder(const fs::path& folder, const ImportOptions& options) {
  const fs::path config_file = folder / "config.json";
  if (!fs::is_directory(folder)) throw Error(folder.string() + ": not a folder (expected a Hugging Face model folder)");
  if (!fs::exists(config_file)) throw Error(folder.string() + ": no config.json (expected a Hugging Face model folder)");
  const Json config = read_json(config_file);
  std::string name = options.name.empty() ? fs::absolute(folder).lexically_normal().filename().string() : options.name;
  if (name.empty()) name = "imported";
  const std::string type = config.value("model_type", std::string());
  ImportedModel m;
  if (type == "llama") m = import_llama(config, config_file, folder, name, options);
  else if (type == "gpt2") m = import_gpt2(config, config_file, folder, name, options);
  if (type == "llama" || type == "gpt2") {
    m.hf_config = config;
    return m;
  }
  throw Error(config_file.string() + ": model_type: '" + type +
              "' is not supported (Shardlab imports the Llama family, model_type \"llama\", and GPT-2, \"gpt2\")");
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
  if (!model.hf_config.is_null()) util::write_file_atomically(init / "hf_config.json", model.hf_config.dump(2) + "\n");
  return init / "step_000000";
}

}  // namespace shardlab::importer
