#include "engine/advisor/hardware.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/backends/backend.h"

namespace shardlab::advisor {

namespace {

// Bytes per second of a copy over `threads` threads (read and write counted), best of 3.
double copy_bandwidth(int threads) {
  const size_t bytes = size_t(128) << 20;  // far beyond any cache
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t chunk = bytes / size_t(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { std::memcpy(dst.data() + size_t(t) * chunk, src.data() + size_t(t) * chunk, chunk); });
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(bytes) / s);
  }
  return best;
}

}  // namespace

Hardware this_machine(backends::Backend& cpu) {
  static std::mutex mu;
  static double bandwidth = 0;
  const int cores = std::max(1, cpu.threads());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (bandwidth == 0) bandwidth = copy_bandwidth(cores);
  }
  Hardware h;
  const std::vector<backends::DeviceInfo> devices = cpu.devices();
  h.name = devices.empty() ? "this machine's CPU" : devices.front().name;
  h.shared_cores = cores;
  h.gemm_flops = cpu.gemm_peak_flops();
  h.memory_bytes_per_s = bandwidth;
  h.collective_latency_s = 20e-6;  // a barrier of the shared-memory collectives: wake-ups, not bytes
  return h;
}

}  // namespace shardlab::advisor
