#include "engine/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/util/error.h"

namespace shardlab::data {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw Error(path.string() + ": " + why);
}

std::string hex_byte(unsigned v) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[(v >> 4) & 15] + digits[v & 15];
}

// A (possibly gzip-compressed) file read in order: gzread passes plain files through unchanged, so
// one path serves both. Only the bytes the header asks for are ever read, so a small file that
// claims a huge shape, or a gzip bomb, costs no more memory than the data it really holds.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
    if (!std::filesystem::is_regular_file(path, ec)) fail(path, "is not a regular file, expected an IDX file");
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) fail(path, std::string("cannot open: ") + std::strerror(errno));
    gzbuffer(f_, 1 << 20);
  }
  ~GzReader() { gzclose(f_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Appends up to `n` more bytes to `out`, fewer only at the end of the data; a corrupt or cut
  // gzip stream is an error (zlib reports a cut one only through gzerror).
  void append(std::vector<uint8_t>& out, uint64_t n) {
    constexpr uint64_t kChunk = uint64_t(1) << 22;
    while (n > 0) {
      const size_t old = out.size();
      const unsigned want = unsigned(std::min(n, kChunk));
      out.resize(old + want);
      const int got = gzread(f_, out.data() + old, want);
      out.resize(old + size_t(std::max(got, 0)));
      int code = Z_OK;
      const char* msg = gzerror(f_, &code);
      if (got < 0 || (code != Z_OK && code != Z_BUF_ERROR))
        fail(path_, "corrupt gzip stream (" + std::string(msg) + ")");
      if (got == 0) {
        if (code == Z_BUF_ERROR) fail(path_, "corrupt or truncated gzip stream (" + std::string(msg) + ")");
        return;
      }
      n -= uint64_t(got);
    }
  }

 private:
  std::filesystem::path path_;
  gzFile f_ = nullptr;
};

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

template <class Int, size_t N>
Int be_int(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < N; ++i) v = (v << 8) | p[i];
  return Int(static_cast<std::make_unsigned_t<Int>>(v));
}

float be_f32(const uint8_t* p) {
  const uint32_t bits = be32(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double be_f64(const uint8_t* p) {
  const uint64_t bits = (uint64_t(be32(p)) << 32) | be32(p + 4);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

}  // namespace

size_t idx_element_bytes(unsigned type) {
  switch (type) {
    case 0x08: case 0x09: return 1;  // unsigned / signed byte
    case 0x0B: return 2;             // short
    case 0x0C: case 0x0D: return 4;  // int, float
    case 0x0E: return 8;             // double
    default: return 0;
  }
}

Tensor load_idx(const std::filesystem::path& path) {
  GzReader in(path);
  std::vector<uint8_t> bytes;
  in.append(bytes, 4);
  if (bytes.size() < 4)
    fail(path, "truncated IDX header (expected at least 4 bytes, got " + std::to_string(bytes.size()) + ")");
  if (bytes[0] != 0 || bytes[1] != 0)
    fail(path, "not an IDX file (bad magic " + hex_byte(bytes[0]) + " " + hex_byte(bytes[1]) + " " +
                   hex_byte(bytes[2]) + " " + hex_byte(bytes[3]) + ": the first two bytes must be zero)");

  const unsigned type = bytes[2];
  const size_t elem = idx_element_bytes(type);
  if (elem == 0)
    fail(path, "bad magic: unsupported IDX data type " + hex_byte(type) + " (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)");
  const size_t rank = bytes[3];
  if (rank == 0) fail(path, "bad IDX header: rank 0 (expected at least one dimension)");

  const size_t header = 4 + 4 * rank;
  in.append(bytes, header - 4);
  if (bytes.size() < header)
    fail(path, "truncated IDX header (expected " + std::to_string(header) + " bytes for rank " +
                   std::to_string(rank) + ", got " + std::to_string(bytes.size()) + ")");

  Shape shape(rank);
  // Overflow-checked dimension by dimension: a corrupt header must give an error, not a huge
  // allocation or a wrapped size.
  uint64_t count = 1;
  bool overflow = false;
  for (size_t d = 0; d < rank; ++d) {
    const uint32_t n = be32(bytes.data() + 4 + 4 * d);
    shape[d] = int64_t(n);
    if (n != 0 && count > (uint64_t(1) << 56) / n) overflow = true;
    if (!overflow) count *= n;
  }
  if (overflow)
    fail(path, "bad IDX header: shape " + shape_str(shape) + " has more than 2^56 elements");
  const uint64_t needed = count * elem;
  in.append(bytes, needed);  // grows only as far as the file really goes; trailing bytes are not read
  const uint64_t available = bytes.size() - header;
  if (needed > available)
    fail(path, "truncated IDX data (expected " + std::to_string(needed) + " bytes for shape " + shape_str(shape) +
                   ", got " + std::to_string(available) + ")");

  Tensor t(shape);
  const uint8_t* p = bytes.data() + header;
  float* out = t.ptr();
  // One loop per type so the per-element work is a plain conversion.
  auto convert = [&](auto read) {
    for (uint64_t i = 0; i < count; ++i) out[i] = float(read(p + i * elem));
  };
  switch (type) {
    case 0x08: convert([](const uint8_t* q) { return *q; }); break;
    case 0x09: convert([](const uint8_t* q) { return int8_t(*q); }); break;
    case 0x0B: convert(be_int<int16_t, 2>); break;
    case 0x0C: convert(be_int<int32_t, 4>); break;
    case 0x0D: convert(be_f32); break;
    case 0x0E: convert(be_f64); break;
  }
  return t;
}

}  // namespace shardlab::data
