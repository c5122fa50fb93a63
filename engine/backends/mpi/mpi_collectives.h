// The collectives interface (backends/collectives.h) among the devices of a mesh laid over several
// processes: a group inside this process runs on the shared-memory path (ThreadCollectives); a
// group that crosses processes meets first inside each process, then one of its local devices
// trades the group's data with the other processes over MPI and writes every local device's out.
//
// Every result is added in rank order from the same operands as on the shared-memory path, so a
// run over K processes gives bit for bit what one process with the same mesh gives.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/mpi/mpi_mailbox.h"
#include "engine/backends/mpi/mpi_world.h"
#include "engine/backends/processes.h"

namespace shardlab::backends::mpi {

class MpiCollectives final : public Collectives {
 public:
  // `local` devices per process; this process holds [rank * local, (rank + 1) * local).
  MpiCollectives(std::shared_ptr<MpiWorld> world, int num_devices, int local);
  ~MpiCollectives() override;

  using Collectives::all_gather;
  using Collectives::all_reduce;
  using Collectives::all_to_all;
  using Collectives::broadcast;
  using Collectives::post;
  using Collectives::recv;
  using Collectives::take;
  using Collectives::reduce_scatter;
  using Collectives::send;

  int num_devices() const override { return num_devices_; }
  void share_cores(CoreShare* cores) override;
  void barrier(int device, const std::vector<int>& group) override;
  void all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out, int64_t count,
                 DType t) override;
  void send(int device, int peer, const void* buf, int64_t count, DType t) override;
  void recv(int device, int peer, void* buf, int64_t count, DType t) override;
  // Pipeline stages: inside this process by shared memory, between processes by MpiMailbox.
  void post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) override;
  void take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) override;
  void abort(const std::string& why) override;
  bool aborted() const override { return aborted_; }

  enum class Kind : int { Barrier = 1, AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };

 private:
  struct Post {
    const void* in = nullptr;
    void* out = nullptr;
  };
  // Where a crossing group's local devices meet.
  struct Meeting {
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    uint64_t generation = 0;
    Kind kind = Kind::Barrier;
    int64_t count = 0;
    DType type = DType::F32;
    int root = 0;
    std::string disagreement, error;
    std::vector<Post> posts;  // by rank in the group
  };

  void run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t,
           int root = 0);
  Meeting& meeting_for(const std::vector<int>& group);
  // The leader's part: trade with the other processes, then write every local device's out.
  void exchange(Meeting& m, const std::vector<int>& group);
  int process_of(int device) const { return process_of_device(device, local_); }
  std::string abort_reason() const;
  // world_->complete with this device's core lent out while it waits.
  void complete(const std::function<void(std::vector<MPI_Request>&)>& post);

  std::shared_ptr<MpiWorld> world_;
  const int num_devices_, local_;
  cpu::ThreadCollectives inside_;  // groups within this process
  std::mutex meetings_mu_;
  std::map<std::vector<int>, std::unique_ptr<Meeting>> meetings_;
  CoreShare* cores_ = nullptr;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mu_;
  std::string abort_reason_;
  std::unique_ptr<MpiMailbox> mail_;  // last: its destructor waits on the state above
};

}  // namespace shardlab::backends::mpi
