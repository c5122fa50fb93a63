// Exporting a checkpoint (either layout: one model.safetensors or shards with an index) for other
// tools: its parameters as one safetensors file that Python's safetensors, PyTorch and Flax load
// ("params/dense1/kernel" is written as "dense1/kernel"), or its project's inference graph with
// those parameters as ONNX where the build has ONNX (engine/export/onnx_export.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/tensor/dtype.h"

namespace shardlab::checkpoint {

// `format`: "safetensors" or "onnx". Returns a one-line summary of what was written; throws Error
// naming the checkpoint, the file or the layer at fault. `out` must be a regular file path (or a new
// name) outside the checkpoint directory: a symlink, a directory, a device node, a FIFO, or a file
// of the checkpoint itself (a hard link included) is refused before anything is read or written.
// The file is written to a temporary name beside `out` and renamed over it.
// `dtype` (float32, bfloat16, float16): the parameters are written in it, converted (to nearest
// even) where the checkpoint holds another; the ONNX graph then computes in it, its input and output
// staying float32 (a Cast at each end). Unset: safetensors keeps each tensor's stored dtype, ONNX is
// float32.
std::string export_checkpoint(const std::filesystem::path& checkpoint_dir, const std::string& format,
                              const std::filesystem::path& out, std::optional<DType> dtype = std::nullopt);

}  // namespace shardlab::checkpoint
