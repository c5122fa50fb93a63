// The collectives interface every backend's devices talk through: shared memory between threads
// (cpu::ThreadCollectives), MPI between processes (mpi/mpi_collectives.h), and NCCL or peer copies
// between GPUs (cuda/nccl_collectives.h, cuda/peer_collectives.h).
//
// Contract, for every implementation:
// - Every device of `group` (global device ids, in rank order) makes the same call with the same
//   group, element type and count, each from its own thread (or process); a device may belong to
//   several groups but takes part in one call at a time.
// - Reductions add contributions in rank order, ((in_0 + in_1) + in_2) + ..., so results are
//   bitwise identical run to run and on every device of the group.
// - Nothing hangs: peers that disagree on the call get an Error on every device of the group, and
//   abort() makes every waiting and later call throw (one failing device stops its peers).
// - A device's out may equal its own in for all_reduce; all_gather may gather in place
//   (in == out + rank * count) and reduce_scatter may scatter in place (out == in + rank * count).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor/dtype.h"

namespace shardlab::backends {

// Element types a collective moves: a program's (float32, bfloat16, float16, int32), and float64
// for the tests' double-precision executor. Sums of 16-bit floats add in float32 in rank order and
// round once (sum_in_order).
using shardlab::DType;

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}

// acc[0, count) = ((src[0] + src[1]) + src[2]) + ... over n >= 1 ranks, for a 16-bit float type:
// converted to float32, added in rank order, rounded once. Every transport sums 16-bit floats
// through this, so they agree bit for bit.
void sum_in_order_16bit(DType t, void* acc, const void* const* src, int n, int64_t count);

// Where devices outnumber cores (the CPU backend's ThreadBudget): a device gives its core back while
// it sleeps waiting for peers, and takes one again before it moves data.
class CoreShare {
 public:
  virtual ~CoreShare() = default;
  virtual void acquire() = 0;
  virtual void release() = 0;
  // Gives the held core back and sleeps until `ready()` holds and a core is handed to this caller,
  // which then holds it. `ready` reads only atomics: it runs under the share's own lock, on any
  // thread. Whoever makes it true calls wake().
  virtual void release_until(const std::function<bool()>& ready) = 0;
  virtual void wake() = 0;
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  // Lend waiting devices' cores to `cores` (null: every device keeps its own).
  virtual void share_cores(CoreShare* cores) { (void)cores; }

  // Devices this transport connects (global ids 0 .. n-1).
  virtual int num_devices() const = 0;
  virtual void barrier(int device, const std::vector<int>& group) = 0;
  // out (count) = sum over ranks of in (count).
  virtual void all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) = 0;
  // out (group.size() * count) = every rank's in (count), in rank order.
  virtual void all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) = 0;
  // in has group.size() * count elements; out (count) = sum over ranks of their in's chunk [my rank].
  virtual void reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                              DType t) = 0;
  // in and out have group.size() * count elements; out chunk r = chunk [my rank] of rank r's in.
  virtual void all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) = 0;
  // out (count) = in of the device at group[root]; the root's own out receives its in as well.
  virtual void broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out, int64_t count,
                         DType t) = 0;
  // Point to point (pipeline stages): `device` sends count elements to `peer`, which calls recv
  // with `device` as its peer and the same count and type. Returns once the data has arrived.
  virtual void send(int device, int peer, const void* buf, int64_t count, DType t) = 0;
  virtual void recv(int device, int peer, void* buf, int64_t count, DType t) = 0;

  // Buffered point to point (pipeline stages): post() copies count elements out of buf and returns
  // at once; take() waits for the message `peer` posted to `device` under the same tag. Neither
  // waits for the other side, so two stages may each post before either takes (1F1B's steady
  // state). Transports without them throw an Error saying so.
  virtual void post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t);
  virtual void take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t);

  // Cancels every waiting and future call with an Error carrying `why` (the first reason wins).
  virtual void abort(const std::string& why) = 0;
  virtual bool aborted() const = 0;

  // Typed conveniences over the calls above.
  template <class T>
  void all_reduce(int device, const std::vector<int>& group, const T* in, T* out, int64_t count) {
    all_reduce(device, group, in, out, count, dtype_of<T>());
  }
  template <class T>
  void all_gather(int device, const std::vector<int>& group, const T* in, T* out, int64_t count) {
    all_gather(device, group, in, out, count, dtype_of<T>());
  }
  template <class T>
  void reduce_scatter(int device, const std::vector<int>& group, const T* in, T* out, int64_t count) {
    reduce_scatter(device, group, in, out, count, dtype_of<T>());
  }
  template <class T>
  void all_to_all(int device, const std::vector<int>& group, const T* in, T* out, int64_t count) {
    all_to_all(device, group, in, out, count, dtype_of<T>());
  }
  template <class T>
  void broadcast(int device, const std::vector<int>& group, int root, const T* in, T* out, int64_t count) {
    broadcast(device, group, root, in, out, count, dtype_of<T>());
  }
  template <class T>
  void send(int device, int peer, const T* buf, int64_t count) {
    send(device, peer, buf, count, dtype_of<T>());
  }
  template <class T>
  void recv(int device, int peer, T* buf, int64_t count) {
    recv(device, peer, buf, count, dtype_of<T>());
  }
  template <class T>
  void post(int device, int peer, int64_t tag, const T* buf, int64_t count) {
    post(device, peer, tag, buf, count, dtype_of<T>());
  }
  template <class T>
  void take(int device, int peer, int64_t tag, T* buf, int64_t count) {
    take(device, peer, tag, buf, count, dtype_of<T>());
  }
};

}  // namespace shardlab::backends
