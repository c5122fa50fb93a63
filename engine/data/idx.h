// IDX files (the MNIST container format), read into a float tensor whose shape is the header's.
#pragma once

#include <cstddef>
#include <filesystem>

#include "engine/tensor/tensor.h"

namespace shardlab::data {

// Reads an IDX file, gzip-compressed or plain (detected from the content, not the name).
// Element types: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64 (multi-byte ones big-endian,
// as the format says). Values are converted to float unscaled; bytes after the data are ignored.
// Throws shardlab::Error naming the file and the reason (missing, bad magic, unsupported type,
// truncated header, truncated data with expected vs got bytes, corrupt gzip stream).
Tensor load_idx(const std::filesystem::path& path);

// Bytes per element of IDX data type `type` (the header's third byte), or 0 for a type it lacks.
size_t idx_element_bytes(unsigned type);

}  // namespace shardlab::data
