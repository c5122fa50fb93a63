// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum iSCSI, ext4 and Btrfs use:
// crc32c("123456789") == 0xE3069283. The SSE4.2 instruction computes it when the CPU has it
// (checked at run time), else slicing-by-8 tables; both give the same value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardlab::checkpoint {

// `crc` continues an earlier value: crc32c(b, nb, crc32c(a, na)) == crc32c(a ++ b).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The portable path alone, so tests can check both paths agree.
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);

}  // namespace shardlab::checkpoint
