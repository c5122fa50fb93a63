#include "engine/data/idx.h"

#include <zlib.h>

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

// The whole (decompressed) file. gzread passes plain files through unchanged, so one path serves both.
std::vector<uint8_t> read_all(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, expected an IDX file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  gzbuffer(f, 1 << 20);
  std::vector<uint8_t> out;
  constexpr size_t kChunk = size_t(1) << 22;
  for (;;) {
    const size_t old = out.size();
    out.resize(old + kChunk);
    const int got = gzread(f, out.data() + old, unsigned(kChunk));
    if (got < 0) {
      int code = 0;
      const std::string msg = gzerror(f, &code);
      gzclose(f);
      fail(path, "corrupt gzip stream (" + msg + ")");
    }
    out.resize(old + size_t(got));
    if (got == 0) break;
  }
  // A gzip stream cut short still yields its prefix; zlib only reports it through gzerror.
  int code = Z_OK;
  const std::string msg = gzerror(f, &code);
  gzclose(f);
  if (code != Z_OK) fail(path, "corrupt or truncated gzip stream (" + msg + ")");
  return out;
}

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

Tensor load_idx(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_all(path);
  if (bytes.size() < 4)
    fail(path, "truncated IDX header (expected at least 4 bytes, got " + std::to_string(bytes.size()) + ")");
  if (bytes[0] != 0 || bytes[1] != 0)
    fail(path, "not an IDX file (bad magic " + hex_byte(bytes[0]) + " " + hex_byte(bytes[1]) + " " +
                   hex_byte(bytes[2]) + " " + hex_byte(bytes[3]) + ": the first two bytes must be zero)");

  const unsigned type = bytes[2];
  size_t elem = 0;
  switch (type) {
    case 0x08: case 0x09: elem = 1; break;
    case 0x0B: elem = 2; break;
    case 0x0C: case 0x0D: elem = 4; break;
    case 0x0E: elem = 8; break;
    default:
      fail(path, "bad magic: unsupported IDX data type " + hex_byte(type) +
                     " (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)");
  }
  const size_t rank = bytes[3];
  if (rank == 0) fail(path, "bad IDX header: rank 0 (expected at least one dimension)");

  const size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    fail(path, "truncated IDX header (expected " + std::to_string(header) + " bytes for rank " +
                   std::to_string(rank) + ", got " + std::to_string(bytes.size()) + ")");

  Shape shape(rank);
  // Overflow-checked: a corrupt header must give an error, not a huge allocation.
  uint64_t count = 1;
  bool overflow = false;
  for (size_t d = 0; d < rank; ++d) {
    const uint32_t n = be32(bytes.data() + 4 + 4 * d);
    shape[d] = int64_t(n);
    if (n != 0 && count > std::numeric_limits<uint64_t>::max() / 16 / n) overflow = true;
    count *= n;
  }
  const uint64_t available = bytes.size() - header;
  if (overflow || count * elem > available)
    fail(path, "truncated IDX data (expected " +
                   (overflow ? std::string("an impossibly large number of") : std::to_string(count * elem)) +
                   " bytes for shape " + shape_str(shape) + ", got " + std::to_string(available) + ")");

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
