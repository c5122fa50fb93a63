#include "engine/profiler/peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/backends/cpu/executor.h"
#include "engine/backends/cpu/gemm.h"

namespace shardlab::profiler {

namespace {

double gemm_rate() {
  const int64_t m = 512, n = 1024, k = 1024;
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    backends::cpu::gemm(false, false, m, n, k, a.data(), k, b.data(), n, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(m * n * k) / best;
}

}  // namespace

double measure_gemm_peak_flops(int threads) {
  // On a thread of its own, so the caller's OpenMP setting is left as it was.
  double flops = 0;
  std::thread([&] {
    backends::cpu::set_threads(threads);
    flops = gemm_rate();
  }).join();
  return flops;
}

}  // namespace shardlab::profiler
