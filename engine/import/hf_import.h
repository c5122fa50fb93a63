// A Hugging Face model folder as a Shardlab project: config.json says the architecture, and
// model.safetensors (or the shards a model.safetensors.index.json names) holds its weights under
// PyTorch's names and layouts. The Llama family (LlamaForCausalLM: RMSNorm, rotary embedding,
// grouped-query attention, SwiGLU) and GPT-2 (GPT2LMHeadModel: learned positions, pre-LayerNorm
// blocks, GELU MLP, the LM head tied to the embedding) map onto Shardlab's layers; their weights
// become the project's parameters (renamed, (out, in) matrices transposed to (in, out), heads split
// out, layers stacked for the Repeat), in float32.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/project/project.h"
#include "engine/tensor/tensor.h"

namespace shardlab::importer {

struct ImportedModel {
  project::Project project;
  std::map<std::string, Tensor> params;  // by Shardlab path ("blocks/attn/query/kernel")
  std::vector<std::string> notes;        // what was converted on the way (a dtype, tied embeddings)
  graph::Json hf_config;                 // the folder's config.json, kept beside the checkpoints for export --format hf
};

struct ImportOptions {
  std::string name;     // the project's name (default: the folder's)
  int64_t seq = 0;      // tokens per example (0: max_position_embeddings, at most 256)
};

// Throws Error naming the file, and the field or tensor, at fault: a missing config.json or
// weights file, an architecture or setting it cannot map (naming it), a missing tensor or one of
// the wrong shape.
ImportedModel import_hf_folder(const std::filesystem::path& folder, const ImportOptions& options = {});

// Writes the project to `project_file` and the weights beside it as a step-0 checkpoint in
// "<project stem>.init/", which the project names as its checkpoint folder, so that
// `train PROJECT --continue` starts from them and `export` reads them; the model's config.json goes
// there too (hf_config.json), for `export --format hf`. Returns the checkpoint's
// step folder. An existing project file is replaced only where `overwrite_project` says so (the
// window's save dialog asked); an existing checkpoint there never is.
std::filesystem::path write_imported(ImportedModel model, const std::filesystem::path& project_file, bool overwrite_project = false);

}  // namespace shardlab::importer
