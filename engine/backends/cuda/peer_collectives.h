// Collectives among virtual devices that share one GPU: every buffer is device memory of that GPU.
// Each device (its own host thread and stream) copies its input to a staging buffer of its own,
// the devices meet (cpu::ThreadCollectives on host descriptors: same rendezvous, agreement check
// and abort as the CPU backend's), each device then computes its own output from its peers'
// staging buffers with device-to-device copies or a rank-ordered sum (kernels.h sum_ranks), and
// they meet again before anyone reuses a staging buffer. Sums are ((in_0 + in_1) + in_2) + ...,
// like the CPU's, so results repeat bit for bit. Float32 and 16-bit reductions (16-bit ones add in
// float32 and round once, as collectives.h says); copies move any type.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/backends/collectives.h"

namespace shardlab::backends::cpu {
class ThreadCollectives;
}

namespace shardlab::backends::cuda {

class PeerCollectives final : public Collectives {
 public:
  // streams[d]: the stream device d's kernels run on; every call waits for it first.
  explicit PeerCollectives(std::vector<cudaStream_t> streams);
  ~PeerCollectives() override;

  using Collectives::all_gather;
  using Collectives::all_reduce;
  using Collectives::all_to_all;
  using Collectives::broadcast;
  using Collectives::recv;
  using Collectives::reduce_scatter;
  using Collectives::send;

  int num_devices() const override;
  void barrier(int device, const std::vector<int>& group) override;
  void all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out, int64_t count,
                 DType t) override;
  void send(int device, int peer, const void* buf, int64_t count, DType t) override;
  void recv(int device, int peer, void* buf, int64_t count, DType t) override;
  // Pipeline stages' messages: post() copies buf into a device buffer of the mailbox's and leaves
  // its address with the host mailbox (cpu::ThreadCollectives's); take() copies it out and hands
  // the buffer back for the next message of that size.
  void post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) override;
  void take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) override;
  void abort(const std::string& why) override;
  bool aborted() const override;

 private:
  enum class Kind : int64_t { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Send, Recv };
  void run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t,
           int root = 0);
  // Device d's staging buffer, grown to at least `bytes`.
  void* staging(int device, size_t bytes);

  std::vector<cudaStream_t> streams_;
  std::unique_ptr<cpu::ThreadCollectives> meet_;
  struct Staging {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::vector<Staging> staging_;
  // Device buffers of posted messages not in use, by size (a pipeline's messages repeat each step).
  std::mutex mail_mu_;
  std::multimap<size_t, void*> spare_;
};

}  // namespace shardlab::backends::cuda
