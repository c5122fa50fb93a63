#include "engine/backends/collectives.h"

#include "engine/util/error.h"

namespace shardlab::backends {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "float32";
    case DType::F64:
      return "float64";
  }
  return "unknown";
}

namespace {
[[noreturn]] void no_buffered(const char* what, int device) {
  throw Error(std::string("collectives: ") + what + " on device " + std::to_string(device) +
              ": this transport has no buffered point-to-point messages, which pipeline stages need "
              "(they run on the CPU backend's devices within one process)");
}
}  // namespace

void Collectives::post(int device, int, int64_t, const void*, int64_t, DType) { no_buffered("post", device); }
void Collectives::take(int device, int, int64_t, void*, int64_t, DType) { no_buffered("take", device); }

}  // namespace shardlab::backends
