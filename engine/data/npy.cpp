#include "engine/data/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "engine/checkpoint/regular_file.h"
#include "engine/tensor/convert.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy writes headers of a few hundred bytes (and by default refuses to read any over 10,000);
// a 4 GB header length is a corrupt file, not a header to allocate for.
constexpr uint64_t kMaxHeaderLen = uint64_t(1) << 20;
// More dimensions than numpy allows (64), and more elements than any array this engine can hold.
constexpr size_t kMaxRank = 64;
constexpr uint64_t kMaxElements = uint64_t(1) << 56;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw Error(path.string() + ": " + why);
}

// Parser for the Python dict literal numpy writes, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
// It accepts exactly the value forms numpy produces: strings, True/False and tuples of integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::filesystem::path& path) : s_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, Shape& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') { ++i_; break; }
      const std::string key = string_literal();
      expect(':');
      ws();
      if (key == "descr") {
        if (peek() == '[') bad("structured dtypes (a field list in 'descr') are not supported");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + util::excerpt(key) + "'");
      }
      ws();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      break;
    }
    if (!have_descr) bad("missing 'descr'");
    if (!have_fortran) bad("missing 'fortran_order'");
    if (!have_shape) bad("missing 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string& why) { fail(path_, "bad npy header: " + why); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    ws();
    if (peek() != c) bad(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string string_literal() {
    ws();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string at offset " + std::to_string(i_));
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
    bad("expected True or False at offset " + std::to_string(i_));
  }
  // Rank and element count are checked dimension by dimension, as they are read.
  Shape tuple() {
    expect('(');
    Shape out;
    uint64_t count = 1;
    for (;;) {
      ws();
      if (peek() == ')') { ++i_; return out; }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a dimension at offset " + std::to_string(i_));
      if (out.size() == kMaxRank) bad("shape has more than " + std::to_string(kMaxRank) + " dimensions");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad("dimension too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (peek() == 'L') ++i_;  // Python 2 long literal
      if (v != 0 && count > kMaxElements / uint64_t(v))
        bad("shape " + shape_str(out) + " then " + std::to_string(v) + ": more than 2^56 elements");
      count *= uint64_t(v);
      out.push_back(v);
      ws();
      if (peek() == ',') { ++i_; continue; }
      expect(')');
      return out;
    }
  }

  const std::string& s_;
  const std::filesystem::path& path_;
  size_t i_ = 0;
};

void normalise_descr(const std::filesystem::path& path, const std::string& raw, NpyHeader& h) {
  const std::string unsupported = "unsupported dtype '" + util::excerpt(raw) +
                                  "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, little- or big-endian)";
  if (raw.size() < 3) fail(path, unsupported);
  const char order = raw[0];
  const std::string body = raw.substr(1);
  static const char* kKnown[] = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"};
  bool known = false;
  for (const char* k : kKnown) known |= body == k;
  if (!known || (order != '<' && order != '>' && order != '|' && order != '=')) fail(path, unsupported);
  h.descr = body;
  const bool native_big = std::endian::native == std::endian::big;
  h.big_endian = body[1] != '1' && (order == '>' || (order == '=' && native_big) || (order == '|' && native_big));
}

uint64_t load_le(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// The array an npy header describes, from its `expected` data bytes at `p`.
template <class T>
TensorT<T> decode(const NpyHeader& h, const unsigned char* p) {
  const size_t item = size_t(h.descr[1] - '0');
  const int64_t count = numel(h.shape);
  TensorT<T> t(h.shape);
  T* out = t.ptr();
  // Read every element as little-endian bits; big-endian files are byte-reversed first. One loop per dtype.
  auto bits_at = [&](int64_t i) {
    const unsigned char* q = p + size_t(i) * item;
    if (!h.big_endian) return load_le(q, item);
    unsigned char tmp[8];
    for (size_t b = 0; b < item; ++b) tmp[b] = q[item - 1 - b];
    return load_le(tmp, item);
  };
  auto convert = [&](auto from_bits) {
    for (int64_t i = 0; i < count; ++i) out[i] = T(from_bits(bits_at(i)));
  };
  const std::string& d = h.descr;
  if (d == "f2") convert([](uint64_t b) { return f16_to_float(uint16_t(b)); });
  else if (d == "f4") convert([](uint64_t b) { return std::bit_cast<float>(uint32_t(b)); });
  else if (d == "f8") convert([](uint64_t b) { return std::bit_cast<double>(b); });
  else if (d == "i1") convert([](uint64_t b) { return int8_t(uint8_t(b)); });
  else if (d == "i2") convert([](uint64_t b) { return int16_t(uint16_t(b)); });
  else if (d == "i4") convert([](uint64_t b) { return int32_t(uint32_t(b)); });
  else if (d == "i8") convert([](uint64_t b) { return int64_t(b); });
  else if (d == "b1") convert([](uint64_t b) { return b != 0 ? 1 : 0; });
  else convert([](uint64_t b) { return b; });  // u1 u2 u4 u8
  return t;
}

// The data bytes the header promises, checked against what the source holds past the header.
uint64_t data_bytes(const std::filesystem::path& path, const NpyHeader& h, uint64_t size) {
  const uint64_t expected = uint64_t(numel(h.shape)) * uint64_t(h.descr[1] - '0');
  const uint64_t available = size - std::min<uint64_t>(size, uint64_t(h.data_offset));
  // Size check first, so a corrupt shape is reported instead of attempting a huge allocation.
  if (available < expected)
    fail(path, "truncated npy data (expected " + std::to_string(expected) + " bytes for shape " + shape_str(h.shape) + " of " +
                   h.descr + ", got " + std::to_string(available) + ")");
  return expected;
}

template <class T>
TensorT<T> load_as(const std::filesystem::path& path) {
  const NpyHeader h = read_npy_header(path);
  // A FIFO or a device is refused by RegularFile rather than read without end.
  const checkpoint::RegularFile file(path);
  const uint64_t expected = data_bytes(path, h, file.size());
  std::vector<unsigned char> raw(static_cast<size_t>(expected));
  file.read_at(uint64_t(h.data_offset), raw.data(), expected);
  return decode<T>(h, raw.data());
}

// The header of an npy image of `size` bytes, read through `read_at(offset, buffer, bytes)`.
template <class ReadAt>
NpyHeader parse_header(const std::filesystem::path& path, uint64_t size, ReadAt&& read_at) {
  unsigned char pre[12] = {};
  read_at(0, pre, std::min<uint64_t>(size, 8));
  if (size < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
    fail(path, "not an npy file (missing the \\x93NUMPY magic)");
  if (size < 8) fail(path, "bad npy header: file ends inside the preamble");
  const unsigned major = pre[6], minor = pre[7];
  if (major < 1 || major > 3)
    fail(path, "bad npy header: unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (size < 8 + len_bytes) fail(path, "bad npy header: file ends inside the header length");
  read_at(8, pre + 8, len_bytes);
  const uint64_t header_len = load_le(pre + 8, len_bytes);
  if (header_len > kMaxHeaderLen)
    fail(path, "bad npy header: header length " + std::to_string(header_len) + " is over the limit of " +
                   std::to_string(kMaxHeaderLen) + " bytes");
  if (header_len > size - 8 - len_bytes)
    fail(path, "bad npy header: truncated (expected " + std::to_string(header_len) + " header bytes, got " +
                   std::to_string(size - 8 - len_bytes) + ")");
  std::string text(size_t(header_len), '\0');
  read_at(8 + len_bytes, text.data(), header_len);

  NpyHeader h;
  std::string descr;
  HeaderParser(text, path).parse(descr, h.fortran_order, h.shape);
  normalise_descr(path, descr, h);
  if (h.fortran_order && h.shape.size() > 1)
    fail(path, "fortran_order arrays are not supported (save a C-ordered array, e.g. np.ascontiguousarray)");
  h.data_offset = int64_t(8 + len_bytes + header_len);
  return h;
}

}  // namespace

NpyHeader read_npy_header(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  const checkpoint::RegularFile file(path);  // refuses a FIFO, a directory or a device, naming it
  return parse_header(path, file.size(), [&](uint64_t at, void* into, uint64_t n) { file.read_at(at, into, n); });
}

NpyHeader parse_npy_header(const std::string& name, const std::vector<unsigned char>& bytes) {
  return parse_header(name, bytes.size(), [&](uint64_t at, void* into, uint64_t n) { std::memcpy(into, bytes.data() + at, n); });
}

Tensor decode_npy(const std::string& name, const std::vector<unsigned char>& bytes) {
  const NpyHeader h = parse_npy_header(name, bytes);
  data_bytes(name, h, bytes.size());
  return decode<float>(h, bytes.data() + h.data_offset);
}

Tensor load_npy(const std::filesystem::path& path) { return load_as<float>(path); }

TensorT<double> load_npy_double(const std::filesystem::path& path) { return load_as<double>(path); }

void save_npy(const std::filesystem::path& path, const Tensor& t) {
  if (int64_t(t.data.size()) != numel(t.shape))
    throw Error(path.string() + ": cannot save tensor: shape " + shape_str(t.shape) + " needs " +
                std::to_string(numel(t.shape)) + " values, tensor has " + std::to_string(t.data.size()));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_str(t.shape) + ", }";
  // numpy pads with spaces and a final newline so the data starts 64-byte aligned.
  const size_t preamble = kMagicLen + 2 + 2;
  const size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  if (header.size() > 0xFFFF) throw Error(path.string() + ": cannot save tensor: npy header too long");

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot write: " + std::strerror(errno));
  out.write(kMagic, kMagicLen);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char len[2] = {char(header.size() & 0xFF), char(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), std::streamsize(header.size()));
  if constexpr (std::endian::native == std::endian::little) {
    out.write(reinterpret_cast<const char*>(t.ptr()), std::streamsize(t.data.size() * sizeof(float)));
  } else {
    for (float f : t.data) {
      const uint32_t b = std::bit_cast<uint32_t>(f);
      const char le[4] = {char(b), char(b >> 8), char(b >> 16), char(b >> 24)};
      out.write(le, 4);
    }
  }
  out.close();
  if (!out) throw Error(path.string() + ": write failed: " + std::strerror(errno));
}

}  // namespace shardlab::data
