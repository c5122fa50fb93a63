#include "engine/backends/collectives.h"

#include <algorithm>

#include "engine/tensor/convert.h"
#include "engine/util/error.h"

namespace shardlab::backends {

void sum_in_order_16bit(DType t, void* acc, const void* const* src, int n, int64_t count) {
  constexpr int64_t kChunk = 2048;  // two float buffers on the stack, in L1
  float sum[kChunk], x[kChunk];
  const size_t es = dtype_size(t);
  for (int64_t off = 0; off < count; off += kChunk) {
    const int64_t len = std::min(kChunk, count - off);
    to_float(static_cast<const char*>(src[0]) + size_t(off) * es, t, sum, size_t(len));
    for (int r = 1; r < n; ++r) {
      to_float(static_cast<const char*>(src[r]) + size_t(off) * es, t, x, size_t(len));
      for (int64_t i = 0; i < len; ++i) sum[i] += x[i];
    }
    from_float(sum, static_cast<char*>(acc) + size_t(off) * es, t, size_t(len));
  }
}

namespace {
[[noreturn]] void no_buffered(const char* what, int device) {
  throw Error(std::string("collectives: ") + what + " on device " + std::to_string(device) +
              ": this transport has no buffered point-to-point messages, which pipeline stages need "
              "(the CPU backend's devices have them, in one process or over MPI)");
}
}  // namespace

void Collectives::post(int device, int, int64_t, const void*, int64_t, DType) { no_buffered("post", device); }
void Collectives::take(int device, int, int64_t, void*, int64_t, DType) { no_buffered("take", device); }

}  // namespace shardlab::backends
