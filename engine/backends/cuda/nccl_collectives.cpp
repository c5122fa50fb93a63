#include "engine/backends/cuda/nccl_collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#include "engine/backends/cuda/check.h"
#include "engine/backends/cuda/nccl_library.h"
#include "engine/backends/processes.h"
#include "engine/sharding/mesh.h"
#include "engine/util/error.h"

namespace shardlab::backends::cuda {

namespace {

std::string group_str(const std::vector<int>& g) {
  std::string s = "{";
  for (size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  return s + "}";
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F64: return ncclFloat64;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::F32: break;
  }
  return ncclFloat32;
}

// Waits between looks at a GPU or at NCCL: a short spin for the common quick case, then sleeps.
void wait_a_little(int& looks) {
  if (++looks < 2000) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// A communicator of one group: its devices in increasing order (NCCL rank = index) and this
// process's members' handles, by local device (null where that device is not a member).
struct Communicator {
  std::vector<int> devices;
  std::vector<ncclComm_t> local;
};

class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(const sharding::Mesh& mesh, Processes& processes, std::vector<cudaStream_t> streams, int first_gpu);
  ~NcclCollectives() override;

  using Collectives::all_gather;
  using Collectives::all_reduce;
  using Collectives::all_to_all;
  using Collectives::broadcast;
  using Collectives::recv;
  using Collectives::reduce_scatter;
  using Collectives::send;

  int num_devices() const override { return num_devices_; }
  void barrier(int device, const std::vector<int>& group) override;
  void all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) override;
  void broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out, int64_t count,
                 DType t) override;
  void send(int device, int peer, const void* buf, int64_t count, DType t) override;
  void recv(int device, int peer, void* buf, int64_t count, DType t) override;
  void abort(const std::string& why) override;
  bool aborted() const override { return aborted_; }

 private:
  // Where a call goes: the calling device's local index (its GPU and stream), its rank in the
  // group, the group's communicator (-1 for a group of one) and each group rank's rank there.
  struct Route {
    int local = 0;
    int rank = 0;
    int comm = -1;
    std::vector<int> to;
    bool in_order = true;
  };
  Route route(const std::string& what, int device, const std::vector<int>& group, int64_t count) const;
  Route route_pair(const std::string& what, int device, int peer, int64_t count) const;

  // Runs `calls(handle, stream)` (NCCL calls that enqueue on the stream) under the shared lock,
  // then waits for its work to be done.
  template <class F>
  void run(const Route& r, const std::string& what, F&& calls);
  // Waits until route r's communicator has queued its work and r's stream has done it, looking
  // for abort() and NCCL's errors (a peer gone) between looks.
  void finish(const Route& r, const std::string& what);
  // A group of one: out = in.
  void copy_alone(const Route& r, const std::string& what, const void* in, void* out, size_t bytes);
  // Local device l's scratch, grown to at least `bytes` (its previous use is done: calls wait).
  void* scratch(int l, size_t bytes);
  std::string abort_reason() const;
  // ncclCommAbort on every communicator, nulling the handles (under the exclusive lock).
  void abort_all();

  const int num_devices_, local_, first_, process_;
  const int first_gpu_;  // local device l runs on GPU first_gpu_ + l
  const std::string mesh_;
  std::vector<cudaStream_t> streams_;
  std::vector<Communicator> comms_;
  std::map<std::vector<int>, int> comm_of_;  // a group's devices, sorted -> index in comms_
  int global_ = -1;                          // the communicator of every device (send and recv)
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::vector<Buffer> one_;      // per local device: a barrier's element
  std::vector<Buffer> scratch_;  // per local device: a reordered reduce_scatter's input
  // Calls hold it shared while they touch a handle; abort() holds it exclusively while it aborts
  // and nulls them.
  mutable std::shared_mutex mu_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mu_;
  std::string reason_;
};

NcclCollectives::NcclCollectives(const sharding::Mesh& mesh, Processes& processes, std::vector<cudaStream_t> streams,
                                 int first_gpu)
    : num_devices_(int(mesh.device_count())),
      local_(int(streams.size())),
      first_(processes.rank() * int(streams.size())),
      process_(processes.rank()),
      first_gpu_(first_gpu),
      mesh_(mesh.str()),
      streams_(std::move(streams)),
      one_(streams_.size()),
      scratch_(streams_.size()) {
  if (local_ < 1 || num_devices_ != local_ * processes.size())
    throw Error("NCCL collectives: the mesh " + mesh_ + " has " + std::to_string(num_devices_) + " devices, not " +
                std::to_string(local_) + " on each of the run's " + std::to_string(processes.size()) + " processes");
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (first_gpu_ < 0 || first_gpu_ + local_ > gpus)
    throw Error("NCCL collectives: process " + std::to_string(process_) + " holds " + std::to_string(local_) +
                " devices of the mesh " + mesh_ + ", one GPU each from GPU " + std::to_string(first_gpu_) +
                " on, but its machine has " + std::to_string(gpus) +
                " GPUs; start more processes (devices per process = mesh devices / processes) or use a smaller mesh");
  const NcclLibrary& lib = nccl();

  // The groups, in the order every process walks: axis subsets as bit masks (mesh order), then
  // devices in increasing order; each set of 2 or more devices once.
  const std::vector<sharding::MeshAxis>& axes = mesh.axes();
  std::vector<std::vector<int>> groups;
  for (unsigned mask = 1; mask < (1u << axes.size()); ++mask) {
    std::vector<std::string> names;
    for (size_t a = 0; a < axes.size(); ++a)
      if (mask & (1u << a)) names.push_back(axes[a].name);
    for (int d = 0; d < num_devices_; ++d) {
      std::vector<int> g = mesh.group(d, names);
      std::sort(g.begin(), g.end());
      if (g.size() < 2 || comm_of_.count(g)) continue;
      comm_of_.emplace(g, int(groups.size()));
      groups.push_back(std::move(g));
    }
  }
  std::vector<int> all(static_cast<size_t>(num_devices_));
  for (int d = 0; d < num_devices_; ++d) all[size_t(d)] = d;
  if (const auto it = comm_of_.find(all); it != comm_of_.end()) global_ = it->second;

  try {
    for (int l = 0; l < local_; ++l) {
      check(cudaSetDevice(first_gpu_ + l), "cudaSetDevice");
      check(cudaMalloc(&one_[size_t(l)].ptr, sizeof(double)), "cudaMalloc of a barrier's element");
      one_[size_t(l)].bytes = sizeof(double);
      check(cudaMemset(one_[size_t(l)].ptr, 0, sizeof(double)), "cudaMemset of a barrier's element");
    }
    comms_.reserve(groups.size());
    for (const std::vector<int>& g : groups) {
      Communicator c{g, std::vector<ncclComm_t>(static_cast<size_t>(local_), nullptr)};
      const std::string what = "devices " + group_str(g) + " of the mesh " + mesh_;
      // The process of the group's first device makes the id; every process takes part in the
      // broadcast. A failure there is an id of zeros, which every process then refuses together.
      const int root = process_of_device(g.front(), local_);
      ncclUniqueId id;
      std::memset(&id, 0, sizeof id);
      std::string root_error;
      if (process_ == root) {
        const ncclResult_t st = lib.get_unique_id(&id);
        if (st != ncclSuccess) {
          root_error = nccl_message(st, "ncclGetUniqueId for " + what);
          std::memset(&id, 0, sizeof id);
        }
      }
      processes.broadcast(&id, sizeof id, root);
      ncclUniqueId zero;
      std::memset(&zero, 0, sizeof zero);
      if (std::memcmp(&id, &zero, sizeof id) == 0)
        throw Error(!root_error.empty() ? root_error
                                        : "NCCL: process " + std::to_string(root) + " could not make the id of " + what);

      // This process's members join in one group call, each on its GPU; non-blocking
      // communicators, so that abort() can end any later wait.
      std::vector<int> members;
      for (int r = 0; r < int(g.size()); ++r)
        if (process_of_device(g[size_t(r)], local_) == process_) members.push_back(r);
      if (!members.empty()) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        std::string error;
        ncclResult_t st = lib.group_start();
        if (st != ncclSuccess) throw Error(nccl_message(st, "ncclGroupStart to make the communicator of " + what));
        for (int r : members) {
          const int l = g[size_t(r)] - first_;
          if (cudaSetDevice(first_gpu_ + l) != cudaSuccess) {  // not thrown: the group must end first
            if (error.empty())
              error = "CUDA: cudaSetDevice(" + std::to_string(first_gpu_ + l) + ") to make the communicator of " + what;
            break;
          }
          st = lib.comm_init_rank_config(&c.local[size_t(l)], int(g.size()), id, r, &config);
          if (st != ncclSuccess && st != ncclInProgress && error.empty())
            error = nccl_message(st, "ncclCommInitRank of device " + std::to_string(g[size_t(r)]) + " in " + what);
        }
        st = lib.group_end();
        if (st != ncclSuccess && st != ncclInProgress && error.empty())
          error = nccl_message(st, "ncclGroupEnd making the communicator of " + what);
        // Kept before waiting, so that a failure below aborts these handles too.
        comms_.push_back(c);
        if (!error.empty()) throw Error(error);
        for (int r : members) {
          ncclComm_t h = c.local[size_t(g[size_t(r)] - first_)];
          int looks = 0;
          ncclResult_t state = ncclInProgress;
          while (state == ncclInProgress) {
            st = lib.comm_get_async_error(h, &state);
            if (st != ncclSuccess) state = st;
            if (state == ncclInProgress) wait_a_little(looks);
          }
          if (state != ncclSuccess)
            throw Error(nccl_message(state, "making the communicator of device " + std::to_string(g[size_t(r)]) + " in " + what, h));
        }
      } else {
        comms_.push_back(c);
      }
    }
  } catch (...) {
    abort_all();
    for (Buffer& b : one_) cudaFree(b.ptr);
    throw;
  }
}

NcclCollectives::~NcclCollectives() {
  const NcclLibrary& lib = nccl();
  std::unique_lock<std::shared_mutex> lock(mu_);
  // Every handle is null after abort(). Otherwise: finalize each (non-blocking, so one thread may
  // finalize several ranks of a communicator), wait for all to be quiescent, then free them.
  std::vector<ncclComm_t> live;
  for (Communicator& c : comms_)
    for (ncclComm_t h : c.local)
      if (h) live.push_back(h);
  for (ncclComm_t h : live) lib.comm_finalize(h);
  for (ncclComm_t h : live) {
    int looks = 0;
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      if (lib.comm_get_async_error(h, &state) != ncclSuccess) break;
      if (state == ncclInProgress) wait_a_little(looks);
    }
  }
  for (ncclComm_t h : live) lib.comm_destroy(h);
  for (Buffer& b : one_) cudaFree(b.ptr);
  for (Buffer& b : scratch_) cudaFree(b.ptr);
}

void NcclCollectives::abort_all() {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (Communicator& c : comms_)
    for (ncclComm_t& h : c.local)
      if (h) {
        nccl().comm_abort(h);
        h = nullptr;
      }
}

void NcclCollectives::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (reason_.empty()) reason_ = why;
  }
  aborted_ = true;  // before the lock: waiting calls see it at their next look and stop
  abort_all();
}

std::string NcclCollectives::abort_reason() const {
  std::lock_guard<std::mutex> lock(reason_mu_);
  return reason_.empty() ? std::string("collectives aborted") : reason_;
}

NcclCollectives::Route NcclCollectives::route(const std::string& what, int device, const std::vector<int>& group,
                                              int64_t count) const {
  if (aborted_) throw Error(abort_reason());
  if (device < first_ || device >= first_ + local_)
    throw Error(what + ": the device is not one of process " + std::to_string(process_) + "'s (" + std::to_string(first_) +
                ".." + std::to_string(first_ + local_ - 1) + ")");
  const auto at = std::find(group.begin(), group.end(), device);
  if (at == group.end()) throw Error(what + ": the device is not in its group");
  if (count < 0) throw Error(what + ": a negative count " + std::to_string(count));
  for (int d : group)
    if (d < 0 || d >= num_devices_)
      throw Error(what + ": device " + std::to_string(d) + " is out of range (" + std::to_string(num_devices_) + " devices)");
  Route r;
  r.local = device - first_;
  r.rank = int(at - group.begin());
  if (group.size() == 1) return r;
  std::vector<int> set = group;
  std::sort(set.begin(), set.end());
  if (std::adjacent_find(set.begin(), set.end()) != set.end()) throw Error(what + ": the group names a device twice");
  const auto it = comm_of_.find(set);
  if (it == comm_of_.end()) throw Error(what + ": not a group of the mesh " + mesh_ + " (no communicator was made for it)");
  r.comm = it->second;
  for (int d : group) {
    r.to.push_back(int(std::lower_bound(set.begin(), set.end(), d) - set.begin()));
    r.in_order = r.in_order && r.to.back() == int(r.to.size()) - 1;
  }
  return r;
}

NcclCollectives::Route NcclCollectives::route_pair(const std::string& what, int device, int peer, int64_t count) const {
  if (peer == device) throw Error(what + ": a device cannot send to itself");
  if (peer < 0 || peer >= num_devices_)
    throw Error(what + ": device " + std::to_string(peer) + " is out of range (" + std::to_string(num_devices_) + " devices)");
  if (global_ < 0) throw Error(what + ": the mesh " + mesh_ + " has no communicator of all its devices");
  Route r = route(what, device, {device}, count);
  r.comm = global_;  // where a device's rank is its id
  return r;
}

template <class F>
void NcclCollectives::run(const Route& r, const std::string& what, F&& calls) {
  check(cudaSetDevice(first_gpu_ + r.local), "cudaSetDevice");
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (aborted_) throw Error(abort_reason());
    ncclComm_t h = comms_[size_t(r.comm)].local[size_t(r.local)];
    if (!h) throw Error("internal: " + what + ": the device has no handle in its group's communicator");
    const ncclResult_t st = calls(h, streams_[size_t(r.local)]);
    if (st != ncclSuccess && st != ncclInProgress) throw Error(nccl_message(st, what, h));
  }
  finish(r, what);
}

void NcclCollectives::finish(const Route& r, const std::string& what) {
  int looks = 0;
  for (;;) {
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      if (aborted_) throw Error(abort_reason());
      ncclResult_t state = ncclSuccess;
      if (r.comm >= 0) {
        ncclComm_t h = comms_[size_t(r.comm)].local[size_t(r.local)];
        const ncclResult_t st = nccl().comm_get_async_error(h, &state);
        if (st != ncclSuccess) throw Error(nccl_message(st, what + ": ncclCommGetAsyncError", h));
        if (state != ncclSuccess && state != ncclInProgress) throw Error(nccl_message(state, what, h));
      }
      if (state == ncclSuccess) {
        const cudaError_t e = cudaStreamQuery(streams_[size_t(r.local)]);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) check(e, what.c_str());
      }
    }
    wait_a_little(looks);
  }
}

void NcclCollectives::copy_alone(const Route& r, const std::string& what, const void* in, void* out, size_t bytes) {
  check(cudaSetDevice(first_gpu_ + r.local), "cudaSetDevice");
  if (bytes > 0 && in != out)
    check(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, streams_[size_t(r.local)]), what.c_str());
  finish(r, what);
}

void* NcclCollectives::scratch(int l, size_t bytes) {
  Buffer& b = scratch_[size_t(l)];
  if (b.bytes < bytes) {
    check(cudaFree(b.ptr), "cudaFree of a collective's scratch");
    b = Buffer{};
    check(cudaMalloc(&b.ptr, bytes), "cudaMalloc of a collective's scratch");
    b.bytes = bytes;
  }
  return b.ptr;
}

void NcclCollectives::barrier(int device, const std::vector<int>& group) {
  const std::string what = "barrier on device " + std::to_string(device) + " over " + group_str(group);
  const Route r = route(what, device, group, 0);
  if (r.comm < 0) return copy_alone(r, what, nullptr, nullptr, 0);
  void* one = one_[size_t(r.local)].ptr;
  run(r, what, [&](ncclComm_t h, cudaStream_t s) { return nccl().all_reduce(one, one, 1, ncclFloat32, ncclSum, h, s); });
}

void NcclCollectives::all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                 DType t) {
  const std::string what = "all_reduce on device " + std::to_string(device) + " over " + group_str(group);
  const Route r = route(what, device, group, count);
  if (r.comm < 0) return copy_alone(r, what, in, out, size_t(count) * dtype_size(t));
  // A sum does not depend on the ranks' order.
  run(r, what, [&](ncclComm_t h, cudaStream_t s) {
    return nccl().all_reduce(in, out, size_t(count), nccl_type(t), ncclSum, h, s);
  });
}

void NcclCollectives::all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                 DType t) {
  const std::string what = "all_gather on device " + std::to_string(device) + " over " + group_str(group);
  const Route r = route(what, device, group, count);
  const size_t chunk = size_t(count) * dtype_size(t);
  if (r.comm < 0) return copy_alone(r, what, in, out, chunk);
  if (r.in_order)
    return run(r, what, [&](ncclComm_t h, cudaStream_t s) {
      return nccl().all_gather(in, out, size_t(count), nccl_type(t), h, s);
    });
  // Ranks in another order than the communicator's: every rank's block goes to its place by
  // point-to-point (this one's own by a copy, unless it gathers in place).
  auto* o = static_cast<char*>(out);
  run(r, what, [&](ncclComm_t h, cudaStream_t s) {
    if (chunk > 0 && in != o + size_t(r.rank) * chunk) {
      if (cudaMemcpyAsync(o + size_t(r.rank) * chunk, in, chunk, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
        return ncclUnhandledCudaError;
    }
    const NcclLibrary& lib = nccl();
    ncclResult_t first = lib.group_start();
    if (first != ncclSuccess) return first;
    for (int p = 0; p < int(r.to.size()); ++p) {
      if (p == r.rank) continue;
      ncclResult_t st = lib.send(in, size_t(count), nccl_type(t), r.to[size_t(p)], h, s);
      if (first == ncclSuccess) first = st;
      st = lib.recv(o + size_t(p) * chunk, size_t(count), nccl_type(t), r.to[size_t(p)], h, s);
      if (first == ncclSuccess) first = st;
    }
    const ncclResult_t end = lib.group_end();
    return first != ncclSuccess ? first : end;
  });
}

void NcclCollectives::reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                     DType t) {
  const std::string what = "reduce_scatter on device " + std::to_string(device) + " over " + group_str(group);
  const Route r = route(what, device, group, count);
  const size_t chunk = size_t(count) * dtype_size(t);
  if (r.comm < 0) return copy_alone(r, what, in, out, chunk);
  const void* src = in;
  if (!r.in_order && chunk > 0) {
    // Chunk p of the input is group rank p's: laid out in the communicator's rank order first.
    check(cudaSetDevice(first_gpu_ + r.local), "cudaSetDevice");
    char* staged = static_cast<char*>(scratch(r.local, r.to.size() * chunk));
    for (size_t p = 0; p < r.to.size(); ++p)
      check(cudaMemcpyAsync(staged + size_t(r.to[p]) * chunk, static_cast<const char*>(in) + p * chunk, chunk,
                            cudaMemcpyDeviceToDevice, streams_[size_t(r.local)]),
            "reordering a reduce_scatter's input");
    src = staged;
  }
  run(r, what, [&](ncclComm_t h, cudaStream_t s) {
    return nccl().reduce_scatter(src, out, size_t(count), nccl_type(t), ncclSum, h, s);
  });
}

void NcclCollectives::all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                 DType t) {
  const std::string what = "all_to_all on device " + std::to_string(device) + " over " + group_str(group);
  const Route r = route(what, device, group, count);
  const size_t chunk = size_t(count) * dtype_size(t);
  if (r.comm < 0) return copy_alone(r, what, in, out, chunk);
  const auto* i = static_cast<const char*>(in);
  auto* o = static_cast<char*>(out);
  // Chunk p of the input goes to group rank p; group rank p's chunk lands at chunk p of out.
  run(r, what, [&](ncclComm_t h, cudaStream_t s) {
    if (chunk > 0 &&
        cudaMemcpyAsync(o + size_t(r.rank) * chunk, i + size_t(r.rank) * chunk, chunk, cudaMemcpyDeviceToDevice, s) !=
            cudaSuccess)
      return ncclUnhandledCudaError;
    const NcclLibrary& lib = nccl();
    ncclResult_t first = lib.group_start();
    if (first != ncclSuccess) return first;
    for (int p = 0; p < int(r.to.size()); ++p) {
      if (p == r.rank) continue;
      ncclResult_t st = lib.send(i + size_t(p) * chunk, size_t(count), nccl_type(t), r.to[size_t(p)], h, s);
      if (first == ncclSuccess) first = st;
      st = lib.recv(o + size_t(p) * chunk, size_t(count), nccl_type(t), r.to[size_t(p)], h, s);
      if (first == ncclSuccess) first = st;
    }
    const ncclResult_t end = lib.group_end();
    return first != ncclSuccess ? first : end;
  });
}

void NcclCollectives::broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out,
                                int64_t count, DType t) {
  const std::string what = "broadcast on device " + std::to_string(device) + " over " + group_str(group);
  if (root < 0 || root >= int(group.size())) throw Error(what + ": root " + std::to_string(root) + " is outside the group");
  const Route r = route(what, device, group, count);
  if (r.comm < 0) return copy_alone(r, what, in, out, size_t(count) * dtype_size(t));
  run(r, what, [&](ncclComm_t h, cudaStream_t s) {
    return nccl().broadcast(in, out, size_t(count), nccl_type(t), r.to[size_t(root)], h, s);
  });
}

void NcclCollectives::send(int device, int peer, const void* buf, int64_t count, DType t) {
  const std::string what = "send from device " + std::to_string(device) + " to " + std::to_string(peer);
  const Route r = route_pair(what, device, peer, count);
  run(r, what, [&](ncclComm_t h, cudaStream_t s) { return nccl().send(buf, size_t(count), nccl_type(t), peer, h, s); });
}

void NcclCollectives::recv(int device, int peer, void* buf, int64_t count, DType t) {
  const std::string what = "recv on device " + std::to_string(device) + " from " + std::to_string(peer);
  const Route r = route_pair(what, device, peer, count);
  run(r, what, [&](ncclComm_t h, cudaStream_t s) { return nccl().recv(buf, size_t(count), nccl_type(t), peer, h, s); });
}

}  // namespace

void require_nccl() { nccl(); }

std::unique_ptr<Collectives> make_nccl_collectives(const sharding::Mesh& mesh, Processes& processes,
                                                   std::vector<cudaStream_t> streams, int first_gpu) {
  return std::make_unique<NcclCollectives>(mesh, processes, std::move(streams), first_gpu);
}

}  // namespace shardlab::backends::cuda
