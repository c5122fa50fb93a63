// The MPI state one process shares between its host-side collectives (MpiProcesses) and its
// devices' collectives (MpiCollectives). Every MPI call goes through here under one mutex, and
// none blocks: requests are posted, then tested until done, so the library needs only
// MPI_THREAD_SERIALIZED and a waiting thread never holds up another thread's transfer.
#pragma once

#include <mpi.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace shardlab::backends::mpi {

class MpiWorld {
 public:
  MpiWorld();   // after MPI_Init_thread
  ~MpiWorld();  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm host_comm() const { return host_; }
  MPI_Comm device_comm() const { return devices_; }
  // Pipeline stages' point-to-point messages, tagged by the receiving device (MpiCollectives::post).
  MPI_Comm pipeline_comm() const { return pipeline_; }
  // The largest tag this MPI allows (at least 32767).
  int tag_limit() const { return tag_limit_; }

  // Posts requests with `post` (under the MPI mutex) and waits until every one is done, testing
  // them without blocking. `stop`, when it turns true, ends the wait with an Error (`why()`); the
  // requests are then left to the dying process, with the buffers they name.
  void complete(const std::function<void(std::vector<MPI_Request>&)>& post, const std::function<bool()>& stop,
                const std::function<std::string()>& why);
  // Throws Error naming `what` and MPI's own words when rc is not MPI_SUCCESS.
  static void check(int rc, const std::string& what);
  // Runs `fn` under the MPI mutex (a probe, a test of requests that nobody waits on).
  void locked(const std::function<void()>& fn);

 private:
  int rank_ = 0, size_ = 1;
  int tag_limit_ = 32767;
  MPI_Comm host_ = MPI_COMM_NULL, devices_ = MPI_COMM_NULL, pipeline_ = MPI_COMM_NULL;
  std::mutex mu_;
};

}  // namespace shardlab::backends::mpi
