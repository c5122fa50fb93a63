#include "engine/backends/cuda/host_staging.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/backends/cuda/check.h"

namespace shardlab::backends::cuda {

namespace {

// Threads for one chunk: a few suffice to outrun the bus; more would take cores from the host work
// that runs beside training (data loading, the GUI).
int copy_threads() {
  static const int n = std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8);
  return n;
}

}  // namespace

void parallel_memcpy(void* dst, const void* src, size_t bytes, int threads) {
  // Parts of at least 1 MiB, on 64-byte boundaries so no two threads write one cache line.
  const size_t min_part = size_t(1) << 20;
  const int parts = int(std::clamp<size_t>(bytes / min_part, 1, size_t(std::max(threads, 1))));
  const size_t part = (bytes / size_t(parts) + 63) / 64 * 64;
  auto copy_part = [&](int k) {
    const size_t begin = std::min(bytes, size_t(k) * part), end = std::min(bytes, begin + part);
    if (end > begin) std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(size_t(parts - 1));
  for (int k = 1; k < parts; ++k) helpers.emplace_back(copy_part, k);
  copy_part(0);
  for (std::thread& t : helpers) t.join();
}

HostStaging::~HostStaging() { release(); }

void HostStaging::release() {
  for (int h = 0; h < 2; ++h) {
    if (pending_[h]) cudaEventSynchronize(copied_[h]);
    if (copied_[h]) cudaEventDestroy(copied_[h]);
    copied_[h] = nullptr;
    pending_[h] = false;
  }
  if (pinned_) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  half_ = 0;
}

bool HostStaging::reserve(size_t bytes) {
  const size_t want = std::min(kHalfBytes, (bytes + kMinBytes - 1) / kMinBytes * kMinBytes);
  if (refused_) return false;
  if (half_ >= want) return true;
  release();
  // Portable: the pinned pages may serve any GPU of the process.
  if (cudaHostAlloc(reinterpret_cast<void**>(&pinned_), 2 * want, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();  // clear it: the driver's path still works
    pinned_ = nullptr;
    refused_ = true;
    return false;
  }
  half_ = want;
  for (cudaEvent_t& e : copied_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return true;
}

void HostStaging::upload(void* device, const void* host, size_t bytes, cudaStream_t s) {
  if (!reserve(bytes)) {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s), "copying a block to the GPU");
    return;
  }
  int half = 0;
  for (size_t done = 0; done < bytes; done += half_, half ^= 1) {
    const size_t n = std::min(half_, bytes - done);
    char* stage = pinned_ + size_t(half) * half_;
    // The half's previous copy to the device must be over before its bytes are replaced.
    if (pending_[half]) check(cudaEventSynchronize(copied_[half]), "waiting for a pinned buffer");
    parallel_memcpy(stage, static_cast<const char*>(host) + done, n, copy_threads());
    check(cudaMemcpyAsync(static_cast<char*>(device) + done, stage, n, cudaMemcpyHostToDevice, s), "copying a block to the GPU");
    check(cudaEventRecord(copied_[half], s), "cudaEventRecord");
    pending_[half] = true;
  }
}

}  // namespace shardlab::backends::cuda
