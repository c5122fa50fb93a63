#include "engine/checkpoint/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace shardlab::checkpoint {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, bit-reversed

// kTables[k][b]: the CRC of byte b followed by k zero bytes, for slicing-by-8.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}

constexpr auto kTables = make_tables();

uint32_t update_portable(uint32_t c, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian load: the first byte is the low one
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
        kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^ kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFFu];
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHARDLAB_CRC32C_HW 1
__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t c, const uint8_t* p, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = uint32_t(c64);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  return ~update_portable(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
#ifdef SHARDLAB_CRC32C_HW
  if (has_sse42()) return ~update_sse42(~crc, static_cast<const uint8_t*>(data), size);
#endif
  return crc32c_portable(data, size, crc);
}

}  // namespace shardlab::checkpoint
