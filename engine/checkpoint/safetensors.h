// Our own reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
//
//   [8 bytes: little-endian u64 N][N bytes: UTF-8 JSON header, starting with '{', space-padded][data buffer]
//
// The header maps each tensor name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// (offsets relative to the start of the data buffer, end exclusive) and may hold a "__metadata__"
// object of string -> string. Tensor data is row-major and little-endian.
//
// The writer puts "__metadata__" first (when non-empty) and the tensors sorted by name, lays their
// data out in that same order, and pads the header with spaces so the data buffer starts at an
// offset that is a multiple of 8 — the layout the reference implementation writes.
//
// The reader is at least as strict as the reference implementation and stricter in a few places
// (unknown keys in an entry, duplicate names or keys, a header not starting with '{' are errors).
// The entries may be listed in any order in the header, but sorted by data_offsets they must tile
// the data buffer exactly: no overlaps, no gaps, no trailing bytes. It never reads out of bounds and
// allocates no more than the size of the input. From a file it reads the 8-byte length and the
// header first and checks them against the file's size (fstat) before reading any tensor data, then
// reads each tensor's bytes alone; FIFOs, devices and directories are refused without blocking.
//
// Integrity (a Shardlab extension other readers ignore): "__metadata__" may hold, per tensor,
// "crc32c.<name>": "<8 lowercase hex digits> <dtype> <shape>", e.g. "e3069283 F32 [2, 3]", the
// CRC32C of the tensor's data bytes and the dtype and shape it was written with. The reader checks
// every tensor that has one (a changed byte, a swapped data_offsets, a changed dtype or shape is
// an error naming the tensor); tensors without one, as in files written elsewhere, load as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace shardlab::checkpoint {

enum class StoredDType { F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL };

// "F32", "F16", ... as spelled in the header.
const char* dtype_name(StoredDType d);
// Bytes per element: 4, 2, 2, 8, 8, 4, 2, 1, 1, 1.
size_t dtype_size(StoredDType d);

struct StoredTensor {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  Shape shape;                 // [] is a scalar (one element), [0] is empty
  std::vector<uint8_t> bytes;  // raw little-endian, row-major; numel(shape) * dtype_size(dtype) bytes
  // Read with a filter that did not want it: its header entry only, no bytes, no checksum checked.
  bool skipped = false;
};

struct SafetensorsFile {
  std::vector<StoredTensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; omitted from the file when empty

  // The tensor called `name`, or nullptr.
  const StoredTensor* find(const std::string& name) const;
};

// The file's bytes. Throws Error on duplicate tensor names, a tensor named "__metadata__", names or
// metadata that are not valid UTF-8, negative dimensions, or bytes.size() != numel * dtype_size.
std::string to_safetensors_bytes(const SafetensorsFile& f);

// Writes to_safetensors_bytes(f) atomically (util::write_file_atomically): on failure the previous
// file, if any, is untouched and no partial file is left. Errors name `path`.
void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& f);

// A tensor as a header lists it, without its bytes.
struct TensorEntry {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  Shape shape;
};
// The file write_safetensors would write for these tensors and metadata (byte for byte), holding
// one tensor's bytes at a time: `tensor(i)` makes entries[i] (its name, dtype and shape), once to
// checksum it where `checksums` (add_checksums' keys replace any in `metadata`) and once to write
// it. For files larger than memory (an export assembling arrays from their blocks one by one).
using TensorMaker = std::function<StoredTensor(size_t i)>;
void write_safetensors_streamed(const std::filesystem::path& path, const std::vector<TensorEntry>& entries,
                                std::map<std::string, std::string> metadata, bool checksums, const TensorMaker& tensor);

inline const std::string kChecksumPrefix = "crc32c.";
// A file written with checksums has one for every tensor it holds and none for a tensor it does
// not: else a name altered in the header (a flipped bit) leaves that tensor unchecked. Error
// "<who>: ..." naming the key or tensor; a file with no checksum at all (another tool's) passes.
void check_checksum_coverage(const std::map<std::string, std::string>& metadata, const std::vector<std::string>& names,
                             const std::string& who);

// The checksum value described above for t.
std::string checksum_of(const StoredTensor& t);

// Sets "crc32c.<name>" for every tensor of f, dropping any other crc32c.* keys (copied metadata of
// another file must not carry checksums of tensors this one does not hold).
void add_checksums(SafetensorsFile& f);

// Reads and validates a file; every problem is an Error naming the file (and the tensor where there
// is one) and the reason. Tensors come back in the order the header lists them.
SafetensorsFile read_safetensors(const std::filesystem::path& path);
// Which tensors a partial read wants (by name and shape); the others come back `skipped`.
using TensorFilter = std::function<bool(const std::string& name, const Shape& shape)>;
// The same, reading (and checking) only the tensors `want` accepts; every header is still checked whole.
SafetensorsFile read_safetensors(const std::filesystem::path& path, const TensorFilter& want);

// CRC32C of the file's header as a whole, the 8-byte length and the JSON text: what the tensor
// checksums leave unguarded (an added metadata key, a reordered entry). Errors as read_safetensors'.
uint32_t header_crc32c(const std::filesystem::path& path);

// The same from bytes in memory; `name_for_errors` starts every error message.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name_for_errors);

// A StoredTensor holding t as F32, or rounded to BF16 or F16 (to nearest, ties to even). Throws
// Error if t.data does not hold numel(t.shape) elements.
StoredTensor from_tensor(const std::string& name, const Tensor& t, StoredDType as = StoredDType::F32);

// Converts any supported dtype to float (F64 and 64/32-bit integers round to nearest float, BOOL is
// 0 or 1). Throws Error naming the tensor if its bytes do not match its shape and dtype, or a BOOL
// byte is neither 0 nor 1.
Tensor to_tensor(const StoredTensor& s);

}  // namespace shardlab::checkpoint
