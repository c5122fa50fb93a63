// Host-to-GPU copies of large blocks (a batch of inputs) through pinned memory. The driver's own
// path for pageable memory copies through small pinned buffers on one thread, at a few GB/s; here
// several threads copy the caller's buffer into one of two pinned halves while the GPU's copy
// engine takes the other, so the batch reaches the GPU near the bus's rate.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace shardlab::backends::cuda {

class HostStaging {
 public:
  // Blocks smaller than this go the driver's way: thread start-up would cost more than it saves.
  static constexpr size_t kMinBytes = size_t(1) << 20;
  // The largest pinned half; a larger block goes through in chunks of this size.
  static constexpr size_t kHalfBytes = size_t(16) << 20;

  HostStaging() = default;
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Enqueues the copy of `bytes` from host to device on stream s (of the calling thread's current
  // GPU) and returns once `host` may be reused: every chunk is in pinned memory, the last ones may
  // still be on their way to the device. Where no pinned memory can be had, the driver's path.
  void upload(void* device, const void* host, size_t bytes, cudaStream_t s);

 private:
  // Halves of at least `bytes` (up to kHalfBytes); false where the driver refuses pinned memory.
  bool reserve(size_t bytes);
  void release();
  char* pinned_ = nullptr;           // two halves of half_ bytes
  size_t half_ = 0;
  bool refused_ = false;             // cudaHostAlloc failed once: never asked again
  cudaEvent_t copied_[2] = {};       // each half's last copy to the device has finished
  bool pending_[2] = {false, false};  // an event was recorded for that half
};

// dst = src, `bytes` of host memory, split over up to `threads` threads (the caller one of them).
void parallel_memcpy(void* dst, const void* src, size_t bytes, int threads);

}  // namespace shardlab::backends::cuda
