// Collectives among the CPU backend's virtual devices: N devices run as N threads of one process
// (like XLA's host platform device count), laid out over a named mesh, and exchange data through
// shared memory with barriers between phases.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace shardlab::backends::cpu {

// Collectives among the virtual devices of one process. Every device in `group` calls the same
// collective with the same group (global device ids, in rank order) and sizes, concurrently from its
// own thread; a device may be in several groups (e.g. its row and its column of the mesh) but takes
// part in one collective at a time. Reductions add contributions in rank order, so results are
// bitwise identical run to run and on every device.
//
// Element i of a reduction is ((in_0[i] + in_1[i]) + in_2[i]) + ... where in_r is the input of the
// device at group[r], whichever thread happens to compute it.
//
// Aliasing: a device's out may overlap its own in (all_reduce in == out; all_gather in == out +
// rank * count; reduce_scatter out == in + rank * count are done without copies, any other overlap
// is staged through a per-device buffer). One device's out must not overlap another device's in or
// out. Buffers must stay untouched by other code until the call returns.
//
// Errors (shardlab::Error): a device id out of range, a device not in the group, an empty group or
// one that lists a device twice, a negative count, a device already in another collective, peers
// that disagree on the collective, element type or count (every device of the group throws), and
// abort().
class ThreadCollectives {
 public:
  explicit ThreadCollectives(int num_devices);
  ~ThreadCollectives();
  ThreadCollectives(const ThreadCollectives&) = delete;
  ThreadCollectives& operator=(const ThreadCollectives&) = delete;

  int num_devices() const;
  void barrier(int device, const std::vector<int>& group);
  // out = sum over ranks of in (count elements); in == out allowed.
  template <class T>
  void all_reduce(int device, const std::vector<int>& group, const T* in, T* out, int64_t count);
  // out (group.size() * count) = concatenation of every rank's in (count), in rank order.
  template <class T>
  void all_gather(int device, const std::vector<int>& group, const T* in, T* out, int64_t count);
  // in has group.size() * count elements; out (count) = sum over ranks of chunk[my rank] of their in.
  template <class T>
  void reduce_scatter(int device, const std::vector<int>& group, const T* in, T* out, int64_t count);
  // in and out have group.size() * count elements; out chunk r = chunk[my rank] of rank r's in.
  template <class T>
  void all_to_all(int device, const std::vector<int>& group, const T* in, T* out, int64_t count);
  // Cancels every waiting and future call with an Error (used when one device fails, so the others don't hang).
  void abort(const std::string& why);
  bool aborted() const;

 private:
  struct Group;
  class Call;
  enum class Kind : int { Barrier, AllReduce, AllGather, ReduceScatter, AllToAll };

  template <class T>
  void run(Kind kind, int device, const std::vector<int>& group, const T* in, T* out, int64_t count);
  Group& group_for(int device, const std::vector<int>& group, Kind kind);
  void arrive(Group& g, int rank, Kind kind);
  [[noreturn]] void throw_aborted(const Group& g, int rank, Kind kind) const;

  const int num_devices_;
  std::mutex groups_mu_;
  // Groups are created on first use and live as long as this object (waiters hold references).
  std::map<std::vector<int>, std::unique_ptr<Group>> groups_;
  std::unique_ptr<std::atomic<bool>[]> busy_;  // per device: inside a collective
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mu_;
  std::string abort_reason_;
};

}  // namespace shardlab::backends::cpu
