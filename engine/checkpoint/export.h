// Exporting a checkpoint (either layout: one model.safetensors or shards with an index) for other
// tools: its parameters as one safetensors file that Python's safetensors, PyTorch and Flax load
// ("params/dense1/kernel" is written as "dense1/kernel"), or its project's inference graph with
// those parameters as ONNX where the build has ONNX (engine/export/onnx_export.h).
#pragma once

#include <filesystem>
#include <string>

namespace shardlab::checkpoint {

// `format`: "safetensors" or "onnx". Returns a one-line summary of what was written; throws Error
// naming the checkpoint, the file or the layer at fault. `out` must be a regular file path (or a new
// name) outside the checkpoint directory: a symlink, a directory, a device node, a FIFO, or a file
// of the checkpoint itself (a hard link included) is refused before anything is read or written.
// The file is written to a temporary name beside `out` and renamed over it.
std::string export_checkpoint(const std::filesystem::path& checkpoint_dir, const std::string& format,
                              const std::filesystem::path& out);

}  // namespace shardlab::checkpoint
