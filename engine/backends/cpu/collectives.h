// Collectives among the CPU backend's virtual devices: N devices run as N threads of one process
// (like XLA's host platform device count), laid out over a named mesh, and exchange data through
// shared memory with barriers between phases.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <tuple>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backends/collectives.h"

namespace shardlab::backends::cpu {

// The shared-memory transport of the collectives interface (backends/collectives.h), among the
// virtual devices of one process: every device of a group posts its buffers, and the data moves
// straight between them. Its contract is the interface's; beyond it:
//
// Aliasing: any overlap of a device's in and out other than the in-place forms the interface allows
// is staged through a per-device buffer. One device's out must not overlap another device's in or
// out. Buffers must stay untouched by other code until the call returns.
//
// Errors (shardlab::Error): a device id out of range, a device not in the group, an empty group or
// one that lists a device twice, a negative count, a device already in another collective, peers
// that disagree on the collective, element type, count or root (every device of the group throws),
// a send or recv to itself, and abort().
class ThreadCollectives final : public Collectives {
 public:
  explicit ThreadCollectives(int num_devices);
  ~ThreadCollectives() override;
  ThreadCollectives(const ThreadCollectives&) = delete;
  ThreadCollectives& operator=(const ThreadCollectives&) = delete;

  using Collectives::all_gather;
  using Collectives::all_reduce;
  using Collectives::all_to_all;
  using Collectives::broadcast;
  using Collectives::recv;
  using Collectives::reduce_scatter;
  using Collectives::send;
  using Collectives::post;
  using Collectives::take;

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
  void post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) override;
  void take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) override;
  void abort(const std::string& why) override;
  bool aborted() const override;
  // Where devices outnumber cores: a device waiting for its peers sleeps at once (no polling) and
  // gives its core back to `budget` until it wakes; the data movement itself runs on a held core.
  void share_cores(CoreShare* budget) override { budget_ = budget; }

 private:
  struct Group;
  class Call;
  enum class Kind : int { Barrier, AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Send, Recv };

  void run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t,
           int root = 0);
  template <class T>
  void move(Kind kind, Group& g, int rank, T* out, int64_t count, int root);
  Group& group_for(int device, const std::vector<int>& group, Kind kind);
  // Returns once every device of the group has arrived; the last to arrive runs `last` (when given)
  // before it lets the others go.
  void arrive(Group& g, int rank, Kind kind, const std::function<void()>* last = nullptr);
  [[noreturn]] void throw_aborted(const Group& g, int rank, Kind kind) const;

  const int num_devices_;
  std::mutex groups_mu_;
  // Groups are created on first use and live as long as this object (waiters hold references).
  std::map<std::vector<int>, std::unique_ptr<Group>> groups_;
  std::unique_ptr<std::atomic<bool>[]> busy_;  // per device: inside a collective
  std::atomic<bool> aborted_{false};
  CoreShare* budget_ = nullptr;
  // Posted messages not yet taken, by (from, to, tag).
  struct Message {
    std::vector<std::byte> data;
    int64_t count = 0;
    DType type = DType::F32;
  };
  std::mutex mail_mu_;
  std::condition_variable mail_cv_;
  std::map<std::tuple<int, int, int64_t>, Message> mail_;
  mutable std::mutex abort_mu_;
  std::string abort_reason_;
};

}  // namespace shardlab::backends::cpu
