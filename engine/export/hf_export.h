// A checkpoint of a project imported from Hugging Face (importer::import_hf_folder), written back as
// a Hugging Face model folder: config.json and model.safetensors under PyTorch's names and layouts
// (Linear weights (out, in), GPT-2's Conv1D (in, out) with q, k and v side by side in c_attn, one
// tensor per layer), in float32, so that transformers' from_pretrained, or `import` again, reads the
// trained weights. The inverse of the import's mapping, checked against it by a round trip.
#pragma once

#include <filesystem>
#include <string>

namespace shardlab::exporter {

// `step_dir`: a committed checkpoint of such a project. The architecture and its settings are the
// config.json the import kept beside its checkpoints (<checkpoint root>/hf_config.json), or
// `config_file` where given. `out_dir` must not exist, or be an empty directory. A GPT-2 whose
// project holds fewer positions than the config (import --seq) is written with that many
// (n_positions). Returns what it wrote; throws Error naming the file, array or field at fault.
std::string export_hf_folder(const std::filesystem::path& step_dir, const std::filesystem::path& out_dir,
                             const std::filesystem::path& config_file = {});

}  // namespace shardlab::exporter
