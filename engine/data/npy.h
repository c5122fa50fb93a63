// NumPy .npy files: read any common numeric dtype into float (or double) tensors, write float32.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace shardlab::data {

// What a .npy header says. `descr` is normalised to "<kind><bytes>", e.g. "f4", "i8", "u1", "b1",
// with `big_endian` telling the byte order (single-byte types are never big-endian).
struct NpyHeader {
  std::string descr;
  bool big_endian = false;
  bool fortran_order = false;
  Shape shape;
  int64_t data_offset = 0;  // bytes from the start of the file to the array data
  bool is_integer() const { return !descr.empty() && (descr[0] == 'i' || descr[0] == 'u' || descr[0] == 'b'); }
};

// Reads and validates only the header (versions 1.0, 2.0, 3.0). Supported dtypes: f2 f4 f8 i1 i2 i4 i8
// u1 u2 u4 u8 b1, either byte order. Fortran order is accepted only where it equals C order (rank <= 1).
// Throws shardlab::Error naming the file: missing, not npy magic, bad header, unsupported dtype.
NpyHeader read_npy_header(const std::filesystem::path& path);

// Reads the whole array, converted to float / double. Also throws on truncated data (expected vs got bytes).
Tensor load_npy(const std::filesystem::path& path);
// The same for an npy image already in memory (a member of an .npz archive); `name` leads each error.
NpyHeader parse_npy_header(const std::string& name, const std::vector<unsigned char>& bytes);
Tensor decode_npy(const std::string& name, const std::vector<unsigned char>& bytes);
TensorT<double> load_npy_double(const std::filesystem::path& path);

// Writes a little-endian float32 ('<f4'), version 1.0 file, as numpy.save would.
// Throws if t.data does not match t.shape or the file cannot be written.
void save_npy(const std::filesystem::path& path, const Tensor& t);

}  // namespace shardlab::data
