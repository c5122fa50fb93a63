#include "engine/profiler/peak.h"

#include "engine/backends/backend.h"

namespace shardlab::profiler {

double measure_gemm_peak_flops(int threads) {
  return backends::make_backend("cpu", backends::BackendOptions{.threads = threads})->gemm_peak_flops();
}

}  // namespace shardlab::profiler
