// A zip archive written the way numpy's np.savez (members stored) and np.savez_compressed (members
// deflated) write one, for the tests of .npz data: real archives built byte by byte, since numpy
// itself is not needed to build or test Shardlab.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab::testing {

using Bytes = std::vector<uint8_t>;

// A zip archive as np.savez (stored) or np.savez_compressed (deflated) writes it: each member's
// local header and data, then the central directory and its end record. With `zip64`, sizes and
// offsets go in ZIP64 extra fields and end records, as Python's zipfile writes them for members
// over 4 GiB.
struct ZipMember {
  std::string name;
  Bytes data;
  bool deflate = false;
};
inline Bytes zip_bytes(const std::vector<ZipMember>& members, bool zip64 = false) {
  Bytes out, dir;
  auto put = [](Bytes& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(i < 8 ? uint8_t(v >> (8 * i)) : 0);
  };
  const uint64_t kFull = 0xffffffff;
  for (const ZipMember& m : members) {
    Bytes packed = m.data;
    if (m.deflate) {
      z_stream z{};
      deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      packed.resize(deflateBound(&z, uLong(m.data.size())));
      z.next_in = const_cast<Bytef*>(m.data.data());
      z.avail_in = uInt(m.data.size());
      z.next_out = packed.data();
      z.avail_out = uInt(packed.size());
      deflate(&z, Z_FINISH);
      packed.resize(z.total_out);
      deflateEnd(&z);
    }
    const uint32_t crc = uint32_t(crc32(0, m.data.data(), uInt(m.data.size())));
    const uint64_t offset = out.size();
    for (Bytes* b : {&out, &dir}) {
      const bool central = b == &dir;
      put(*b, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) put(*b, zip64 ? 45 : 20, 2);    // made by
      put(*b, zip64 ? 45 : 20, 2);                 // needed
      put(*b, 0, 2);                               // flags
      put(*b, m.deflate ? 8 : 0, 2);               // method
      put(*b, 0, 4);                               // time, date
      put(*b, crc, 4);
      put(*b, zip64 ? kFull : packed.size(), 4);
      put(*b, zip64 ? kFull : m.data.size(), 4);
      put(*b, m.name.size(), 2);
      const int extra = zip64 ? 4 + (central ? 24 : 16) : 0;
      put(*b, uint64_t(extra), 2);
      if (central) {
        put(*b, 0, 2 + 2 + 2 + 4);                 // comment, disk, internal, external attributes
        put(*b, zip64 ? kFull : offset, 4);
      }
      b->insert(b->end(), m.name.begin(), m.name.end());
      if (zip64) {  // original size, compressed size, (in the directory) local header offset
        put(*b, 0x0001, 2);
        put(*b, uint64_t(extra - 4), 2);
        put(*b, m.data.size(), 8);
        put(*b, packed.size(), 8);
        if (central) put(*b, offset, 8);
      }
    }
    out.insert(out.end(), packed.begin(), packed.end());
  }
  const uint64_t dir_offset = out.size();
  out.insert(out.end(), dir.begin(), dir.end());
  if (zip64) {
    const uint64_t end64 = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);                               // the record's size after this field
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 8);                                // disks
    put(out, members.size(), 8);
    put(out, members.size(), 8);
    put(out, dir.size(), 8);
    put(out, dir_offset, 8);
    put(out, 0x07064b50, 4);                       // the locator
    put(out, 0, 4);
    put(out, end64, 8);
    put(out, 1, 4);
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, zip64 ? 0xffff : members.size(), 2);
  put(out, zip64 ? 0xffff : members.size(), 2);
  put(out, zip64 ? kFull : dir.size(), 4);
  put(out, zip64 ? kFull : dir_offset, 4);
  put(out, 0, 2);
  return out;
}

}  // namespace shardlab::testing
