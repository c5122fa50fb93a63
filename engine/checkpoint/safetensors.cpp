#include "engine/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/regular_file.h"
#include "engine/tensor/convert.h"
#include "engine/util/atomic_file.h"
#include "engine/util/json_limits.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::checkpoint {
namespace {

using Json = nlohmann::ordered_json;

// The reference implementation's limit on the header length.
constexpr uint64_t kMaxHeaderSize = 100'000'000;

constexpr StoredDType kAllDTypes[] = {StoredDType::F32, StoredDType::F16, StoredDType::BF16, StoredDType::F64, StoredDType::I64,
                                StoredDType::I32, StoredDType::I16,  StoredDType::I8,  StoredDType::U8,  StoredDType::BOOL};

// Dtypes the format defines but Shardlab does not handle, so that they get a clearer message.
constexpr const char* kUnsupportedDTypes[] = {"U16",     "U32",    "U64",      "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                              "F6_E2M3", "F6_E3M2", "F4",      "C64",     "C128"};

bool dtype_from_name(std::string_view s, StoredDType& out) {
  for (StoredDType d : kAllDTypes) {
    if (s == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

std::string shape_list(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// A name from the file, cut short for a message (a header may hold a name of megabytes).
std::string in_quotes(const std::string& s) { return "'" + util::excerpt(s) + "'"; }

// More dimensions than any array has; a shape of a million ones must not become a million-entry message.
constexpr size_t kMaxRank = 64;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// A JSON value for a message, cut short if long.
std::string brief(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// The offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points past
// U+10FFFF included), or npos if `s` is valid.
size_t invalid_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;       // overlong
      else if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;       // overlong
      else if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

void store_le(uint8_t* p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(v >> (8 * i));
}

// numel(shape) * elem_size with overflow checks; false on a negative dimension or overflow.
bool checked_nbytes(const Shape& shape, size_t elem_size, uint64_t& out) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  return !__builtin_mul_overflow(uint64_t(n), uint64_t(elem_size), &out);
}

struct Entry {
  std::string name;
  StoredDType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

const char* dtype_name(StoredDType d) {
  switch (d) {
    case StoredDType::F32: return "F32";
    case StoredDType::F16: return "F16";
    case StoredDType::BF16: return "BF16";
    case StoredDType::F64: return "F64";
    case StoredDType::I64: return "I64";
    case StoredDType::I32: return "I32";
    case StoredDType::I16: return "I16";
    case StoredDType::I8: return "I8";
    case StoredDType::U8: return "U8";
    case StoredDType::BOOL: return "BOOL";
  }
  return "?";
}

size_t dtype_size(StoredDType d) {
  switch (d) {
    case StoredDType::F64:
    case StoredDType::I64: return 8;
    case StoredDType::F32:
    case StoredDType::I32: return 4;
    case StoredDType::F16:
    case StoredDType::BF16:
    case StoredDType::I16: return 2;
    case StoredDType::I8:
    case StoredDType::U8:
    case StoredDType::BOOL: return 1;
  }
  return 0;
}

const StoredTensor* SafetensorsFile::find(const std::string& name) const {
  for (const StoredTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// ---------------------------------------------------------------------------------------- writing

namespace {

// The file's pieces in order: the 8-byte length and header, then every tensor's bytes (views of
// f's). `who` starts every error message: the file being written, or "safetensors" for bytes in
// memory.
struct Pieces {
  std::string head;
  std::vector<std::string_view> all;  // head first
};
// Checks every entry and the metadata as a writer must (names, shapes, UTF-8) and returns each
// tensor's byte size.
std::vector<uint64_t> checked_sizes(const std::vector<TensorEntry>& entries, const std::map<std::string, std::string>& metadata,
                                    const std::string& who) {
  auto fail = [&](const std::string& why) { throw Error(who + ": " + why); };
  std::set<std::string_view> names;
  std::vector<uint64_t> sizes(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry& t = entries[i];
    if (t.name == "__metadata__") fail("a tensor may not be called '__metadata__'");
    if (invalid_utf8_at(t.name) != std::string_view::npos) fail("tensor name " + in_quotes(t.name) + " is not valid UTF-8");
    if (!names.insert(t.name).second) fail("duplicate tensor name " + in_quotes(t.name));
    const std::string ctx = "tensor " + in_quotes(t.name) + ": ";
    for (int64_t d : t.shape)
      if (d < 0) fail(ctx + "shape " + shape_list(t.shape) + " has a negative dimension");
    if (!checked_nbytes(t.shape, dtype_size(t.dtype), sizes[i])) fail(ctx + "the byte size of shape " + shape_list(t.shape) + " overflows");
  }
  for (const auto& [k, v] : metadata) {
    if (invalid_utf8_at(k) != std::string_view::npos) fail("metadata key " + in_quotes(k) + " is not valid UTF-8");
    if (invalid_utf8_at(v) != std::string_view::npos) fail("metadata value for key " + in_quotes(k) + " is not valid UTF-8");
  }
  return sizes;
}

// The indices of `entries` in the order their bytes follow the header: by name.
std::vector<size_t> file_order(const std::vector<TensorEntry>& entries) {
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return entries[a].name < entries[b].name; });
  return order;
}

// The 8-byte length and the header text, padded so that the data buffer after it is 8-byte aligned.
std::string head_of(const std::vector<TensorEntry>& entries, const std::vector<uint64_t>& sizes,
                    const std::map<std::string, std::string>& metadata, const std::vector<size_t>& order) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const TensorEntry& t = entries[i];
    Json entry = Json::object();
    entry["dtype"] = dtype_name(t.dtype);
    Json shape = Json::array();
    for (int64_t d : t.shape) shape.push_back(d);
    entry["shape"] = std::move(shape);
    Json offsets = Json::array();
    offsets.push_back(offset);
    offsets.push_back(offset + sizes[i]);
    entry["data_offsets"] = std::move(offsets);
    header[t.name] = std::move(entry);
    offset += sizes[i];
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string head(8, '\0');
  store_le(reinterpret_cast<uint8_t*>(head.data()), text.size(), 8);
  return head + text;
}

std::vector<TensorEntry> entries_of(const SafetensorsFile& f) {
  std::vector<TensorEntry> out;
  out.reserve(f.tensors.size());
  for (const StoredTensor& t : f.tensors) out.push_back({t.name, t.dtype, t.shape});
  return out;
}

void serialise(const SafetensorsFile& f, const std::string& who, Pieces& out) {
  const std::vector<TensorEntry> entries = entries_of(f);
  const std::vector<uint64_t> sizes = checked_sizes(entries, f.metadata, who);
  for (size_t i = 0; i < f.tensors.size(); ++i)
    if (f.tensors[i].bytes.size() != sizes[i])
      throw Error(who + ": tensor " + in_quotes(f.tensors[i].name) + ": holds " + std::to_string(f.tensors[i].bytes.size()) +
                  " bytes but shape " + shape_list(f.tensors[i].shape) + " of " + dtype_name(f.tensors[i].dtype) + " needs " +
                  std::to_string(sizes[i]));
  const std::vector<size_t> order = file_order(entries);
  out.head = head_of(entries, sizes, f.metadata, order);
  out.all.push_back(out.head);
  for (size_t i : order) {
    const auto& b = f.tensors[i].bytes;
    out.all.push_back(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  }
}

}  // namespace

std::string to_safetensors_bytes(const SafetensorsFile& f) {
  Pieces p;
  serialise(f, "safetensors", p);
  std::string out(p.head);
  for (size_t i = 1; i < p.all.size(); ++i) out.append(p.all[i]);
  return out;
}

void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& f) {
  // Streamed piece by piece: a checkpoint's file is never held twice in memory.
  Pieces p;
  serialise(f, path.string(), p);
  util::write_file_atomically(path, p.all);
}

void write_safetensors_streamed(const std::filesystem::path& path, const std::vector<TensorEntry>& entries,
                                std::map<std::string, std::string> metadata, bool checksums, const TensorMaker& tensor) {
  const std::string who = path.string();
  auto made = [&](size_t i) {
    StoredTensor t = tensor(i);
    const TensorEntry& e = entries[i];
    if (t.name != e.name || t.dtype != e.dtype || t.shape != e.shape)
      throw Error(who + ": tensor " + in_quotes(e.name) + " was made as " + in_quotes(t.name) + " " + dtype_name(t.dtype) + " " +
                  shape_list(t.shape) + ", not " + dtype_name(e.dtype) + " " + shape_list(e.shape));
    return t;
  };
  if (checksums) {  // the header holds every tensor's checksum: a first pass makes them
    for (auto it = metadata.begin(); it != metadata.end();)
      it = it->first.rfind(kChecksumPrefix, 0) == 0 ? metadata.erase(it) : std::next(it);
    for (size_t i = 0; i < entries.size(); ++i) metadata[kChecksumPrefix + entries[i].name] = checksum_of(made(i));
  }
  const std::vector<uint64_t> sizes = checked_sizes(entries, metadata, who);
  const std::vector<size_t> order = file_order(entries);
  const std::string head = head_of(entries, sizes, metadata, order);
  util::write_file_atomically(path, [&](const util::ByteSink& sink) {
    sink(head);
    for (size_t i : order) {
      const StoredTensor t = made(i);
      if (t.bytes.size() != sizes[i])
        throw Error(who + ": tensor " + in_quotes(t.name) + ": holds " + std::to_string(t.bytes.size()) + " bytes, needs " +
                    std::to_string(sizes[i]));
      sink(std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
    }
  });
}

// ---------------------------------------------------------------------------------------- reading

namespace {

using Fail = std::function<void(const std::string&)>;

// The header length from the first 8 bytes, checked against the file size before anything else
// is read or allocated.
uint64_t header_length(const uint8_t* first8, uint64_t file_size, const Fail& fail) {
  if (file_size < 8)
    fail("file is only " + std::to_string(file_size) +
         " bytes, too short for the 8-byte header length that starts a safetensors file");
  const uint64_t n = load_le(first8, 8);
  if (n > kMaxHeaderSize)
    fail("header length " + std::to_string(n) + " is over the limit of " + std::to_string(kMaxHeaderSize) + " bytes");
  if (n > file_size - 8)
    fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file_size - 8) +
         " bytes follow the length field)");
  return n;
}

struct Header {
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;  // in header order
};

// Parses and checks the header text against a data buffer of `buffer_size` bytes: when it returns,
// every entry lies inside the buffer and they tile it exactly, so reading them cannot go astray.
Header parse_header(std::string_view text, uint64_t buffer_size, const std::string& who, const Fail& fail) {
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    fail("header is not valid UTF-8 (bad byte at header offset " + std::to_string(bad) + ")");
  if (text.empty() || text.front() != '{') fail("header does not start with '{'");
  // nlohmann's lexer takes a NUL byte for the end of input, which would let "{}\0garbage" through;
  // JSON allows no raw NUL anywhere.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail("header is not valid JSON: NUL byte at header offset " + std::to_string(nul));
  // A header is three levels deep; a `shape` nested 100,000 deep must not reach the recursive
  // parts of nlohmann (dump, destruction) at all.
  util::check_json_depth(text, util::kDefaultJsonDepth, who + ": header");

  // Parsed in time linear in its length (a header of 300,000 tensors is 24 MB), a key repeated
  // within one object refused: nlohmann would silently keep one.
  const util::DuplicateKeyMessage duplicate = [](const std::vector<std::string>& path, const std::string& key) {
    if (path.empty()) return key == "__metadata__" ? std::string("duplicate '__metadata__'") : "duplicate tensor name " + in_quotes(key);
    if (path.front() == "__metadata__") return "__metadata__: duplicate key " + in_quotes(key);
    return "tensor " + in_quotes(path.front()) + ": duplicate key " + in_quotes(key);
  };
  Json header;
  try {
    header = util::parse_json_limited(text, who, util::kDefaultJsonDepth, duplicate);
  } catch (const util::JsonSyntaxError& e) {
    fail("header is not valid JSON: " + e.reason);
  }
  if (!header.is_object()) fail("header is not a JSON object");

  Header out;
  std::vector<Entry>& entries = out.entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;  // as the reference implementation: same as absent
      if (!value.is_object()) fail("__metadata__ is not an object of string to string");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail("__metadata__ value for key " + in_quotes(mk) + " is not a string (metadata must map string to string)");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string ctx = "tensor " + in_quotes(key) + ": ";
    if (!value.is_object()) fail(ctx + "entry is not an object");
    for (const auto& [k, unused] : value.items()) {
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        fail(ctx + "unknown key " + in_quotes(k) + " (an entry has only dtype, shape and data_offsets)");
    }
    for (const char* required : {"dtype", "shape", "data_offsets"})
      if (!value.contains(required)) fail(ctx + "missing '" + required + "'");

    Entry e;
    e.name = key;
    const Json& dt = value["dtype"];
    if (!dt.is_string()) fail(ctx + "dtype is not a string");
    const std::string& dts = dt.get_ref<const std::string&>();
    if (!dtype_from_name(dts, e.dtype)) {
      for (const char* u : kUnsupportedDTypes)
        if (dts == u) fail(ctx + "unsupported dtype " + in_quotes(dts) + " (Shardlab reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
      fail(ctx + "unknown dtype " + in_quotes(dts));
    }

    const Json& sh = value["shape"];
    if (!sh.is_array()) fail(ctx + "shape is not a list of non-negative integers");
    if (sh.size() > kMaxRank)
      fail(ctx + "shape has " + std::to_string(sh.size()) + " dimensions (at most " + std::to_string(kMaxRank) + ")");
    e.shape.reserve(sh.size());
    for (size_t i = 0; i < sh.size(); ++i) {
      if (!sh[i].is_number_unsigned())
        fail(ctx + "shape is not a list of non-negative integers (element " + std::to_string(i) + " is " + brief(sh[i]) +
             ")");
      const uint64_t d = sh[i].get<uint64_t>();
      if (d > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(ctx + "shape dimension " + std::to_string(d) + " overflows a 64-bit signed integer");
      e.shape.push_back(int64_t(d));
    }

    const Json& off = value["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(ctx + "data_offsets " + brief(off) + " is not a pair [begin, end] of non-negative integers");
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin > e.end) fail(ctx + "data_offsets " + range + " have begin > end");

    int64_t count = 1;
    for (int64_t d : e.shape)
      if (__builtin_mul_overflow(count, d, &count))
        fail(ctx + "the element count of shape " + shape_list(e.shape) + " overflows");
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(uint64_t(count), uint64_t(dtype_size(e.dtype)), &nbytes))
      fail(ctx + "the byte size of shape " + shape_list(e.shape) + " of " + dts + " overflows");
    if (e.end - e.begin != nbytes)
      fail(ctx + "data_offsets " + range + " span " + std::to_string(e.end - e.begin) + " bytes but shape " +
           shape_list(e.shape) + " of " + dts + " needs " + std::to_string(nbytes));
    entries.push_back(std::move(e));
  }

  // In data_offsets order, the entries must tile the data buffer exactly.
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(entries[a].begin, entries[a].end) < std::pair(entries[b].begin, entries[b].end);
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (size_t i : order) {
    const Entry& e = entries[i];
    const std::string ctx = "tensor " + in_quotes(e.name) + ": ";
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin < pos)
      fail(ctx + "data_offsets " + range + " overlap those of tensor " + in_quotes(prev->name) + " [" +
           std::to_string(prev->begin) + ", " + std::to_string(prev->end) + "]");
    if (e.end > buffer_size)
      fail(ctx + "data_offsets " + range + " run past the end of the data buffer (" + std::to_string(buffer_size) +
           " bytes)");
    if (e.begin > pos)
      fail(ctx + "gap of " + std::to_string(e.begin - pos) + " bytes in the data buffer before data_offsets " + range +
           " (no tensor covers [" + std::to_string(pos) + ", " + std::to_string(e.begin) + "])");
    pos = e.end;
    prev = &e;
  }
  if (pos != buffer_size)
    fail("trailing bytes after the last tensor's data: the data buffer is " + std::to_string(buffer_size) +
         " bytes, the tensors cover " + std::to_string(pos));
  return out;
}

// The tensors' data, read by `read(entry, destination)`, then checked against their checksums.
template <typename ReadData>
SafetensorsFile assemble(Header h, const Fail& fail, ReadData read, const TensorFilter& want = {}) {
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  out.tensors.reserve(h.entries.size());
  for (Entry& e : h.entries) {
    StoredTensor t;
    t.name = std::move(e.name);
    t.dtype = e.dtype;
    t.shape = std::move(e.shape);
    t.skipped = want && !want(t.name, t.shape);
    if (!t.skipped) {
      t.bytes.resize(size_t(e.end - e.begin));
      read(e, t.bytes.data());
    }
    out.tensors.push_back(std::move(t));
  }
  for (const StoredTensor& t : out.tensors) {
    if (t.skipped) continue;
    auto it = out.metadata.find(kChecksumPrefix + t.name);
    if (it == out.metadata.end()) continue;  // written before checksums, or by another tool (see check_checksum_coverage)
    const std::string& v = it->second;
    const std::string ctx = "tensor " + in_quotes(t.name) + ": ";
    uint32_t stored = 0;
    bool hex_ok = v.size() > 9 && v[8] == ' ';
    for (size_t i = 0; hex_ok && i < 8; ++i) {
      const char c = v[i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) hex_ok = false;
      stored = stored << 4 | uint32_t(d);
    }
    if (!hex_ok)
      fail(ctx + "__metadata__ " + in_quotes(kChecksumPrefix + t.name) + " is " + in_quotes(v) +
           ", not '<8 hex digits> <dtype> <shape>'");
    const std::string described = std::string(dtype_name(t.dtype)) + " " + shape_list(t.shape);
    if (v.substr(9) != described)
      fail(ctx + "the header says " + described + " but its checksum was written for " + v.substr(9) +
           " (the header was altered)");
    const uint32_t actual = crc32c(t.bytes.data(), t.bytes.size());
    if (actual != stored)
      fail(ctx + "CRC32C mismatch: the data has " + hex32(actual) + ", __metadata__ records " + hex32(stored) +
           " (the tensor data is corrupt)");
  }
  return out;
}

}  // namespace

void check_checksum_coverage(const std::map<std::string, std::string>& metadata, const std::vector<std::string>& names,
                             const std::string& who) {
  size_t with_checksum = 0;
  const std::set<std::string> held(names.begin(), names.end());
  for (const auto& [key, value] : metadata)
    if (key.rfind(kChecksumPrefix, 0) == 0) {
      ++with_checksum;
      if (!held.count(key.substr(kChecksumPrefix.size())))
        throw Error(who + ": __metadata__ " + in_quotes(key) +
                    " is the checksum of a tensor the file does not hold (a tensor's name was altered?)");
    }
  if (with_checksum == 0) return;  // written before checksums, or by another tool
  for (const std::string& n : names)
    if (!metadata.count(kChecksumPrefix + n))
      throw Error(who + ": tensor " + in_quotes(n) + " has no checksum where the file's other tensors have theirs (its name was altered?)");
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name_for_errors) {
  const Fail fail = [&](const std::string& why) { throw Error(name_for_errors + ": " + why); };
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint64_t n = header_length(p, bytes.size(), fail);
  const uint64_t buffer_start = 8 + n;
  Header h = parse_header(std::string_view(bytes.data() + 8, size_t(n)), bytes.size() - buffer_start, name_for_errors,
                          fail);
  return assemble(std::move(h), fail,
                  [&](const Entry& e, uint8_t* dst) {
                    if (e.end > e.begin) std::memcpy(dst, p + buffer_start + e.begin, e.end - e.begin);  // dst is null when empty
                  });
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) { return read_safetensors(path, TensorFilter{}); }

SafetensorsFile read_safetensors(const std::filesystem::path& path, const TensorFilter& want) {
  const std::string who = path.string();
  const Fail fail = [&](const std::string& why) { throw Error(who + ": " + why); };
  const RegularFile file(path);  // refuses FIFOs, devices and directories without blocking
  // Only the header is read before it is checked against the file's size; then each tensor's own
  // bytes, straight into its buffer.
  uint8_t first8[8] = {};
  if (file.size() >= 8) file.read_at(0, first8, 8);
  const uint64_t n = header_length(first8, file.size(), fail);
  std::string text(size_t(n), '\0');
  file.read_at(8, text.data(), n);
  const uint64_t buffer_start = 8 + n;
  Header h = parse_header(text, file.size() - buffer_start, who, fail);
  return assemble(std::move(h), fail,
                  [&](const Entry& e, uint8_t* dst) { file.read_at(buffer_start + e.begin, dst, e.end - e.begin); }, want);
}

uint32_t header_crc32c(const std::filesystem::path& path) {
  const std::string who = path.string();
  const Fail fail = [&](const std::string& why) { throw Error(who + ": " + why); };
  const RegularFile file(path);
  uint8_t first8[8] = {};
  if (file.size() >= 8) file.read_at(0, first8, 8);
  const uint64_t n = header_length(first8, file.size(), fail);
  std::string text(size_t(n), '\0');
  file.read_at(8, text.data(), n);
  return crc32c(text.data(), text.size(), crc32c(first8, 8));
}

// ---------------------------------------------------------------------------------------- checksums

std::string checksum_of(const StoredTensor& t) {
  return hex32(crc32c(t.bytes.data(), t.bytes.size())).substr(2) + " " + dtype_name(t.dtype) + " " + shape_list(t.shape);
}

void add_checksums(SafetensorsFile& f) {
  for (auto it = f.metadata.begin(); it != f.metadata.end();)
    it = it->first.rfind(kChecksumPrefix, 0) == 0 ? f.metadata.erase(it) : std::next(it);
  for (const StoredTensor& t : f.tensors) f.metadata[kChecksumPrefix + t.name] = checksum_of(t);
}

// ----------------------------------------------------------------------------------- conversions

StoredTensor from_tensor(const std::string& name, const Tensor& t, StoredDType as) {
  if (as != StoredDType::F32 && as != StoredDType::BF16 && as != StoredDType::F16)
    throw Error("tensor " + in_quotes(name) + ": internal: written as " + dtype_name(as) + ", not F32, BF16 or F16");
  const size_t es = dtype_size(as);
  uint64_t nbytes = 0;
  if (!checked_nbytes(t.shape, es, nbytes) || nbytes != uint64_t(t.data.size()) * es)
    throw Error("tensor " + in_quotes(name) + ": shape " + shape_list(t.shape) + " does not match its " +
                std::to_string(t.data.size()) + " elements");
  StoredTensor s;
  s.name = name;
  s.dtype = as;
  s.shape = t.shape;
  s.bytes.resize(size_t(nbytes));
  if (as == StoredDType::F32) {
    for (size_t i = 0; i < t.data.size(); ++i) store_le(&s.bytes[4 * i], std::bit_cast<uint32_t>(t.data[i]), 4);
  } else {
    std::vector<uint16_t> h(t.data.size());
    from_float(t.data.data(), h.data(), as == StoredDType::BF16 ? DType::BF16 : DType::F16, h.size());
    for (size_t i = 0; i < h.size(); ++i) store_le(&s.bytes[2 * i], h[i], 2);
  }
  return s;
}

Tensor to_tensor(const StoredTensor& s) {
  const size_t es = dtype_size(s.dtype);
  uint64_t nbytes = 0;
  if (!checked_nbytes(s.shape, es, nbytes))
    throw Error("tensor " + in_quotes(s.name) + ": shape " + shape_list(s.shape) + " is negative or overflows");
  if (nbytes != s.bytes.size())
    throw Error("tensor " + in_quotes(s.name) + ": holds " + std::to_string(s.bytes.size()) + " bytes but shape " +
                shape_list(s.shape) + " of " + dtype_name(s.dtype) + " needs " + std::to_string(nbytes));
  const size_t n = s.bytes.size() / es;
  Tensor t;
  t.shape = s.shape;
  t.data.resize(n);
  const uint8_t* p = s.bytes.data();
  for (size_t i = 0; i < n; ++i, p += es) {
    const uint64_t v = load_le(p, es);
    float x = 0;
    switch (s.dtype) {
      case StoredDType::F32: x = std::bit_cast<float>(uint32_t(v)); break;
      case StoredDType::F16: x = f16_to_float(uint16_t(v)); break;
      case StoredDType::BF16: x = bf16_to_float(uint16_t(v)); break;
      case StoredDType::F64: x = float(std::bit_cast<double>(v)); break;
      case StoredDType::I64: x = float(int64_t(v)); break;
      case StoredDType::I32: x = float(int32_t(uint32_t(v))); break;
      case StoredDType::I16: x = float(int16_t(uint16_t(v))); break;
      case StoredDType::I8: x = float(int8_t(uint8_t(v))); break;
      case StoredDType::U8: x = float(uint8_t(v)); break;
      case StoredDType::BOOL:
        if (v > 1)
          throw Error("tensor " + in_quotes(s.name) + ": BOOL element " + std::to_string(i) + " is " + std::to_string(v) +
                      ", not 0 or 1");
        x = float(v);
        break;
    }
    t.data[i] = x;
  }
  return t;
}

}  // namespace shardlab::checkpoint
