// Buffered point-to-point messages between devices on different processes: the pipeline stages'
// activations and gradients (Collectives::post / take) over MPI. A post copies the message out and
// returns at once (MPI_Isend of the copy, reclaimed once done), so two stages may each post before
// either takes, as 1F1B's steady state does. A take probes for messages to its device from the
// peer's process and keeps any that arrive for another (peer, tag) of the same device until asked.
//
// Messages travel on their own communicator, tagged by the receiving device, so each device's
// thread receives only its own; MPI keeps one sender's messages to one tag in order.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/backends/mpi/mpi_world.h"
#include "engine/tensor/dtype.h"

namespace shardlab::backends::mpi {

class MpiMailbox {
 public:
  // `process_of` maps a global device to the process that holds it; `stop` ends a wait (an
  // abort), with `why` its reason; `idle`/`busy` lend and take back the waiting device's core.
  struct Hooks {
    std::function<int(int device)> process_of;
    std::function<bool()> stop;
    std::function<std::string()> why;
    std::function<void()> idle, busy;
  };
  MpiMailbox(std::shared_ptr<MpiWorld> world, Hooks hooks);
  ~MpiMailbox();  // waits (briefly) for sends still in flight, unless the run stopped

  void post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t);
  void take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t);

 private:
  struct Outgoing {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::byte> bytes;
  };
  // Frees the sends MPI has finished with; call with out_mu_ held.
  void reclaim_locked();
  // One probe for a message to `device` from `process`: true with its bytes when one was there.
  bool receive_one(int device, int process, std::vector<std::byte>& got);

  std::shared_ptr<MpiWorld> world_;
  Hooks hooks_;
  std::mutex out_mu_;
  std::vector<std::unique_ptr<Outgoing>> outgoing_;
  std::mutex kept_mu_;
  std::map<std::tuple<int, int, int64_t>, std::vector<std::byte>> kept_;  // (to, from, tag): arrived early
  std::vector<std::vector<std::byte>> abandoned_;  // receives a stop cut short: MPI may still write them
};

}  // namespace shardlab::backends::mpi
