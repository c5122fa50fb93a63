#include "engine/export/hf_export.h"

#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/import/hf_config.h"
#include "engine/util/atomic_file.h"
#include "engine/util/error.h"

namespace shardlab::exporter {

namespace fs = std::filesystem;
using importer::Gpt2Config;
using importer::LlamaConfig;
using importer::gpt2_config;
using importer::llama_config;
using importer::read_json;
using Json = nlohmann::json;

namespace {

const std::string kParamPrefix = "params/";

// The checkpoint's parameters by Shardlab path, each checked against the shape the config gives.
class Params {
 public:
  Params(std::map<std::string, Tensor> arrays, fs::path dir) : dir_(std::move(dir)) {
    for (auto& [name, t] : arrays)
      if (name.rfind(kParamPrefix, 0) == 0) params_[name.substr(kParamPrefix.size())] = std::move(t);
  }
  const Tensor& get(const std::string& path, const Shape& shape) const {
    const auto it = params_.find(path);
    if (it == params_.end())
      throw Error(dir_.string() + ": parameter '" + path + "' is missing (is this a project `import` made of the config's architecture?)");
    if (it->second.shape != shape)
      throw Error(dir_.string() + ": parameter '" + path + "' is " + shape_str(it->second.shape) + ", the config needs " + shape_str(shape));
    return it->second;
  }
  bool has(const std::string& path) const { return params_.count(path) > 0; }

 private:
  std::map<std::string, Tensor> params_;
  fs::path dir_;
};

// Layer `i` of a stacked (layers, ...) array, reshaped to `shape`.
Tensor layer(const Tensor& stacked, int64_t i, const Shape& shape) {
  const size_t n = size_t(numel(shape));
  if (stacked.data.size() != n * size_t(stacked.shape.at(0))) throw Error("layer " + std::to_string(i) + ": size mismatch");
  return Tensor(shape, std::vector<float>(stacked.data.begin() + ptrdiff_t(size_t(i) * n), stacked.data.begin() + ptrdiff_t(size_t(i + 1) * n)));
}

// Shardlab's (in, out) kernel as PyTorch's Linear weight (out, in).
Tensor linear(const Tensor& kernel, int64_t in, int64_t out) {
  Tensor w({out, in});
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) w.data[size_t(o * in + i)] = kernel.data[size_t(i * out + o)];
  return w;
}

// (rows, a) | (rows, b) | ... side by side.
Tensor side_by_side(const std::vector<Tensor>& parts) {
  const int64_t rows = parts.front().shape.size() == 1 ? 1 : parts.front().shape.at(0);
  int64_t cols = 0;
  for (const Tensor& p : parts) cols += p.size() / rows;
  Tensor out = parts.front().shape.size() == 1 ? Tensor({cols}) : Tensor({rows, cols});
  int64_t at = 0;
  for (const Tensor& p : parts) {
    const int64_t w = p.size() / rows;
    for (int64_t r = 0; r < rows; ++r) std::copy_n(p.data.begin() + ptrdiff_t(r * w), w, out.data.begin() + ptrdiff_t(r * cols + at));
    at += w;
  }
  return out;
}

using Tensors = std::vector<std::pair<std::string, Tensor>>;

Tensors llama_tensors(const LlamaConfig& l, const Params& p) {
  const int64_t e = l.hidden, h = l.heads, kv = l.kv_heads, d = l.head_dim, f = l.intermediate, n = l.layers;
  Tensors out;
  out.emplace_back("model.embed_tokens.weight", p.get("embed/embedding", {l.vocab, e}));
  const Tensor &q = p.get("blocks/attn/query/kernel", {n, e, h, d}), &k = p.get("blocks/attn/key/kernel", {n, e, kv, d}),
               &v = p.get("blocks/attn/value/kernel", {n, e, kv, d}), &o = p.get("blocks/attn/out/kernel", {n, h, d, e}),
               &gate = p.get("blocks/gate/kernel", {n, e, f}), &up = p.get("blocks/up/kernel", {n, e, f}),
               &down = p.get("blocks/down/kernel", {n, f, e}), &ln1 = p.get("blocks/ln1/scale", {n, e}),
               &ln2 = p.get("blocks/ln2/scale", {n, e});
  for (int64_t i = 0; i < n; ++i) {
    const std::string pre = "model.layers." + std::to_string(i) + ".";
    // In LlamaDecoderLayer's registration order, as its state dict lists them.
    out.emplace_back(pre + "self_attn.q_proj.weight", linear(layer(q, i, {e, h * d}), e, h * d));
    out.emplace_back(pre + "self_attn.k_proj.weight", linear(layer(k, i, {e, kv * d}), e, kv * d));
    out.emplace_back(pre + "self_attn.v_proj.weight", linear(layer(v, i, {e, kv * d}), e, kv * d));
    out.emplace_back(pre + "self_attn.o_proj.weight", linear(layer(o, i, {h * d, e}), h * d, e));
    out.emplace_back(pre + "mlp.gate_proj.weight", linear(layer(gate, i, {e, f}), e, f));
    out.emplace_back(pre + "mlp.up_proj.weight", linear(layer(up, i, {e, f}), e, f));
    out.emplace_back(pre + "mlp.down_proj.weight", linear(layer(down, i, {f, e}), f, e));
    out.emplace_back(pre + "input_layernorm.weight", layer(ln1, i, {e}));
    out.emplace_back(pre + "post_attention_layernorm.weight", layer(ln2, i, {e}));
  }
  out.emplace_back("model.norm.weight", p.get("norm/scale", {e}));
  // A tied head is the embedding (transformers ties it on load); an untied one is its own. A head of
  // its own under a tying config would be dropped on the way: refused instead.
  if (l.tied && p.has("head/kernel"))
    throw Error("config.json ties the LM head to the embedding (tie_word_embeddings), but the checkpoint has a head of its own "
                "('head/kernel'), which the folder would lose: export with a config where tie_word_embeddings is false (--hf-config)");
  if (!l.tied) out.emplace_back("lm_head.weight", linear(p.get("head/kernel", {e, l.vocab}), e, l.vocab));
  return out;
}

Tensors gpt2_tensors(const Gpt2Config& g, const Params& p, int64_t positions) {
  const int64_t e = g.embed, h = g.heads, d = e / h, f = g.inner, n = g.layers;
  Tensors out;
  out.emplace_back("transformer.wte.weight", p.get("embed/embedding", {g.vocab, e}));
  out.emplace_back("transformer.wpe.weight", p.get("pos/embedding", {positions, e}));
  auto stacked = [&](const std::string& path, const Shape& per_layer) {
    Shape s{n};
    s.insert(s.end(), per_layer.begin(), per_layer.end());
    return p.get("blocks/" + path, s);
  };
  const Tensor &ln1s = stacked("ln1/scale", {e}), &ln1b = stacked("ln1/bias", {e}), &ln2s = stacked("ln2/scale", {e}),
               &ln2b = stacked("ln2/bias", {e}), &qk = stacked("attn/query/kernel", {e, h, d}), &kk = stacked("attn/key/kernel", {e, h, d}),
               &vk = stacked("attn/value/kernel", {e, h, d}), &qb = stacked("attn/query/bias", {h, d}), &kb = stacked("attn/key/bias", {h, d}),
               &vb = stacked("attn/value/bias", {h, d}), &ok = stacked("attn/out/kernel", {h, d, e}), &ob = stacked("attn/out/bias", {e}),
               &m1k = stacked("mlp1/kernel", {e, f}), &m1b = stacked("mlp1/bias", {f}), &m2k = stacked("mlp2/kernel", {f, e}),
               &m2b = stacked("mlp2/bias", {e});
  for (int64_t i = 0; i < n; ++i) {
    const std::string pre = "transformer.h." + std::to_string(i) + ".";
    out.emplace_back(pre + "ln_1.weight", layer(ln1s, i, {e}));
    out.emplace_back(pre + "ln_1.bias", layer(ln1b, i, {e}));
    out.emplace_back(pre + "attn.c_attn.weight", side_by_side({layer(qk, i, {e, e}), layer(kk, i, {e, e}), layer(vk, i, {e, e})}));
    out.emplace_back(pre + "attn.c_attn.bias", side_by_side({layer(qb, i, {e}), layer(kb, i, {e}), layer(vb, i, {e})}));
    out.emplace_back(pre + "attn.c_proj.weight", layer(ok, i, {e, e}));
    out.emplace_back(pre + "attn.c_proj.bias", layer(ob, i, {e}));
    out.emplace_back(pre + "ln_2.weight", layer(ln2s, i, {e}));
    out.emplace_back(pre + "ln_2.bias", layer(ln2b, i, {e}));
    out.emplace_back(pre + "mlp.c_fc.weight", layer(m1k, i, {e, f}));
    out.emplace_back(pre + "mlp.c_fc.bias", layer(m1b, i, {f}));
    out.emplace_back(pre + "mlp.c_proj.weight", layer(m2k, i, {f, e}));
    out.emplace_back(pre + "mlp.c_proj.bias", layer(m2b, i, {e}));
  }
  out.emplace_back("transformer.ln_f.weight", p.get("norm/scale", {e}));
  out.emplace_back("transformer.ln_f.bias", p.get("norm/bias", {e}));
  return out;  // the LM head is wte (tied): GPT2LMHeadModel's state dict names it, its files need not
}

void check_out_dir(const fs::path& out) {
  std::error_code ec;
  if (out.empty()) throw Error("export --format hf: no output folder given (--out DIR)");
  if (fs::exists(fs::symlink_status(out, ec)) && (!fs::is_directory(fs::symlink_status(out, ec)) || !fs::is_empty(out, ec)))
    throw Error(out.string() + ": exists and is not an empty folder; give a new folder for the Hugging Face model");
}

}  // namespace

std::string export_hf_folder(const fs::path& step, const fs::path& out_dir, const fs::path& config_file) {
  check_out_dir(out_dir);
  fs::path step_dir = step.lexically_normal();
  if (!step_dir.has_filename()) step_dir = step_dir.parent_path();  // "step_000002/"
  const fs::path config_path = !config_file.empty() ? config_file : step_dir.parent_path() / "hf_config.json";
  if (!fs::exists(config_path))
    throw Error(config_path.string() + ": not found: the Hugging Face config.json the project was imported from is kept there by "
                "`import`; give it with --hf-config");
  Json config = read_json(config_path);
  const checkpoint::Loaded c = checkpoint::load(step_dir);
  const Params params(c.arrays, step_dir);
  const std::string type = config.value("model_type", std::string());
  Tensors tensors;
  std::string note;
  if (type == "llama") {
    tensors = llama_tensors(llama_config(config, config_path), params);
  } else if (type == "gpt2") {
    const Gpt2Config g = gpt2_config(config, config_path);
    const auto pos = c.arrays.find(kParamPrefix + "pos/embedding");
    const int64_t positions = pos == c.arrays.end() || pos->second.shape.size() != 2 ? g.positions : pos->second.shape[0];
    if (positions < g.positions) {
      config["n_positions"] = positions;
      note = "; n_positions " + std::to_string(positions) + " (the project's tokens per example; the import kept no more)";
    }
    tensors = gpt2_tensors(g, params, positions);
  } else {
    throw Error(config_path.string() + ": model_type: '" + type + "' (export --format hf writes the Llama family and GPT-2)");
  }
  checkpoint::SafetensorsFile f;
  f.metadata = {{"format", "pt"}};  // what PyTorch's save_pretrained writes
  int64_t count = 0;
  for (const auto& [name, t] : tensors) {
    f.tensors.push_back(checkpoint::from_tensor(name, t));
    count += t.size();
  }
  fs::create_directories(out_dir);
  checkpoint::write_safetensors(out_dir / "model.safetensors", f);
  util::write_file_atomically(out_dir / "config.json", config.dump(2) + "\n");
  return "wrote " + std::to_string(tensors.size()) + " tensors (" + std::to_string(count) + " parameters, float32, step " +
         std::to_string(c.step) + ") to " + (out_dir / "model.safetensors").string() + " and config.json" + note;
}

}  // namespace shardlab::exporter
