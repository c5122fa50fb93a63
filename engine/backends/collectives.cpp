#include "engine/backends/collectives.h"

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

}  // namespace shardlab::backends
