#include "engine/data/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/checkpoint/regular_file.h"
#include "engine/util/error.h"

namespace shardlab::data {

namespace {

// Zip record signatures (APPNOTE.TXT 4.3).
constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50, kEnd64 = 0x06064b50,
                   kEnd64Locator = 0x07064b50;
constexpr uint16_t kStored = 0, kDeflate = 8, kZip64Extra = 0x0001;
// The end record sits in the last 22 bytes plus a comment of at most 64 KiB.
constexpr uint64_t kEndSearch = 22 + 0xffff;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) { throw Error(path.string() + ": " + why); }

uint64_t le(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

struct Member {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t packed = 0, size = 0, local_offset = 0;
};

class Archive {
 public:
  explicit Archive(const std::filesystem::path& path) : path_(path), file_(checked(path)) { read_directory(); }

  const std::vector<Member>& members() const { return members_; }

  const Member& member(const std::string& key) const {
    for (const Member& m : members_)
      if (m.name == key + ".npy") return m;
    std::string known;
    for (const Member& m : members_) known += (known.empty() ? "" : ", ") + key_of(m);
    fail(path_, "no array '" + key + "' (it holds " + (known.empty() ? std::string("none") : known) + ")");
  }

  // A member's bytes, inflated where it is deflated, checked against its size and CRC-32.
  std::vector<unsigned char> read(const Member& m) const {
    const std::string where = "array '" + key_of(m) + "': ";
    unsigned char local[30];
    if (m.local_offset > file_.size() || file_.size() - m.local_offset < sizeof local) fail(path_, where + "its entry lies past the end of the file");
    file_.read_at(m.local_offset, local, sizeof local);
    if (le(local, 4) != kLocalHeader) fail(path_, where + "damaged archive (no local header where the directory says)");
    const uint64_t start = m.local_offset + sizeof local + le(local + 26, 2) + le(local + 28, 2);
    if (start > file_.size() || file_.size() - start < m.packed) fail(path_, where + "truncated (its data runs past the end of the file)");
    std::vector<unsigned char> packed(static_cast<size_t>(m.packed));
    file_.read_at(start, packed.data(), m.packed);
    std::vector<unsigned char> out;
    if (m.method == kStored) {
      out = std::move(packed);
    } else if (m.method == kDeflate) {
      out.resize(static_cast<size_t>(m.size));
      inflate_into(packed, out, where);
    } else {
      fail(path_, where + "compression method " + std::to_string(m.method) + " (only stored and deflate, as numpy writes, are read)");
    }
    if (out.size() != m.size) fail(path_, where + "holds " + std::to_string(out.size()) + " bytes, its directory says " + std::to_string(m.size));
    // zlib's crc32 takes a length of at most 4 GiB at a time.
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t at = 0; at < out.size();) {
      const uInt n = uInt(std::min<uint64_t>(out.size() - at, uint64_t(1) << 30));
      crc = crc32(crc, out.data() + at, n);
      at += n;
    }
    if (uint32_t(crc) != m.crc) fail(path_, where + "checksum mismatch: the archive is damaged");
    return out;
  }

  static std::string key_of(const Member& m) {
    return m.name.size() > 4 && m.name.ends_with(".npy") ? m.name.substr(0, m.name.size() - 4) : m.name;
  }

 private:
  static const std::filesystem::path& checked(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
    return path;
  }

  void read_directory() {
    const uint64_t size = file_.size();
    const uint64_t tail = std::min(size, kEndSearch);
    std::vector<unsigned char> end(static_cast<size_t>(tail));
    file_.read_at(size - tail, end.data(), tail);
    int64_t at = -1;
    for (int64_t i = int64_t(tail) - 22; i >= 0 && at < 0; --i)
      if (le(end.data() + i, 4) == kEnd) at = i;
    if (at < 0) fail(path_, "not an .npz file (no zip directory at its end; np.savez writes one)");
    const unsigned char* e = end.data() + at;
    uint64_t count = le(e + 10, 2), dir_size = le(e + 12, 4), dir_offset = le(e + 16, 4);
    // ZIP64: the 64-bit end record, found through its locator just before the end record.
    if (count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
      const uint64_t locator = size - tail + uint64_t(at) - 20;
      unsigned char loc[20], rec[56];
      if (uint64_t(at) + (size - tail) < 20) fail(path_, "damaged ZIP64 archive (no locator)");
      file_.read_at(locator, loc, 20);
      if (le(loc, 4) != kEnd64Locator) fail(path_, "damaged ZIP64 archive (no locator)");
      const uint64_t rec_at = le(loc + 8, 8);
      if (rec_at > size || size - rec_at < sizeof rec) fail(path_, "damaged ZIP64 archive (its end record lies past the file)");
      file_.read_at(rec_at, rec, sizeof rec);
      if (le(rec, 4) != kEnd64) fail(path_, "damaged ZIP64 archive (no end record)");
      count = le(rec + 32, 8);
      dir_size = le(rec + 40, 8);
      dir_offset = le(rec + 48, 8);
    }
    if (dir_offset > size || size - dir_offset < dir_size) fail(path_, "damaged archive (its directory lies past the end of the file)");
    std::vector<unsigned char> dir(static_cast<size_t>(dir_size));
    file_.read_at(dir_offset, dir.data(), dir_size);
    size_t p = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (dir.size() - p < 46 || le(dir.data() + p, 4) != kCentralHeader) fail(path_, "damaged archive directory (entry " + std::to_string(i + 1) + ")");
      const unsigned char* h = dir.data() + p;
      Member m;
      m.method = uint16_t(le(h + 10, 2));
      m.crc = uint32_t(le(h + 16, 4));
      m.packed = le(h + 20, 4);
      m.size = le(h + 24, 4);
      m.local_offset = le(h + 42, 4);
      const size_t name_len = size_t(le(h + 28, 2)), extra_len = size_t(le(h + 30, 2)), comment_len = size_t(le(h + 32, 2));
      if (dir.size() - p - 46 < name_len + extra_len + comment_len) fail(path_, "damaged archive directory (entry " + std::to_string(i + 1) + ")");
      m.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
      // A ZIP64 extra field holds, in this order, whichever of the sizes and offset are 0xffffffff.
      for (size_t x = 0; x + 4 <= extra_len;) {
        const unsigned char* f = h + 46 + name_len + x;
        const size_t id = size_t(le(f, 2)), len = size_t(le(f + 2, 2));
        if (x + 4 + len > extra_len) break;
        if (id == kZip64Extra) {
          size_t q = 4;
          for (uint64_t* v : {&m.size, &m.packed, &m.local_offset})
            if (*v == 0xffffffff && q + 8 <= len + 4) *v = le(f + q, 8), q += 8;
        }
        x += 4 + len;
      }
      members_.push_back(std::move(m));
      p += 46 + name_len + extra_len + comment_len;
    }
  }

  void inflate_into(std::vector<unsigned char>& packed, std::vector<unsigned char>& out, const std::string& where) const {
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(path_, where + "cannot start zlib");
    uint64_t in_at = 0, out_at = 0;
    int rc = Z_OK;
    // zlib counts in 32-bit lengths: large members go through in pieces.
    while (rc == Z_OK) {
      const uInt in_n = uInt(std::min<uint64_t>(packed.size() - in_at, uint64_t(1) << 30));
      const uInt out_n = uInt(std::min<uint64_t>(out.size() - out_at, uint64_t(1) << 30));
      z.next_in = packed.data() + in_at;
      z.avail_in = in_n;
      z.next_out = out.data() + out_at;
      z.avail_out = out_n;
      rc = inflate(&z, Z_NO_FLUSH);
      in_at += in_n - z.avail_in;
      out_at += out_n - z.avail_out;
      if (rc == Z_BUF_ERROR && (out_at == out.size() || in_at == packed.size())) break;
      if (rc == Z_OK && in_n == z.avail_in && out_n == z.avail_out) break;  // no progress
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) fail(path_, where + (rc == Z_DATA_ERROR ? "corrupt deflate data" : "deflate data ends early or runs long"));
    out.resize(static_cast<size_t>(out_at));
  }

  std::filesystem::path path_;
  checkpoint::RegularFile file_;
  std::vector<Member> members_;
};

}  // namespace

std::vector<std::string> npz_keys(const std::filesystem::path& path) {
  const Archive a(path);
  std::vector<std::string> keys;
  for (const Member& m : a.members()) keys.push_back(Archive::key_of(m));
  return keys;
}

Tensor load_npz(const std::filesystem::path& path, const std::string& key) {
  const Archive a(path);
  return decode_npy(path.string() + ": array '" + key + "'", a.read(a.member(key)));
}

NpyHeader read_npz_header(const std::filesystem::path& path, const std::string& key) {
  const Archive a(path);
  return parse_npy_header(path.string() + ": array '" + key + "'", a.read(a.member(key)));
}

}  // namespace shardlab::data
