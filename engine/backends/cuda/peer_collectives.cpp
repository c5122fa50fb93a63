#include "engine/backends/cuda/peer_collectives.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cuda/check.h"
#include "engine/backends/cuda/kernels.h"

namespace shardlab::backends::cuda {

namespace {

const char* kind_name(int64_t k) {
  static const char* const names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send", "recv"};
  return k >= 0 && k < 7 ? names[k] : "?";
}

// What each rank tells its peers at the first meeting (four 8-byte words, moved as F64).
struct Posted {
  int64_t kind = 0, count = 0, root = 0;
  uint64_t staged = 0;  // device address of its staged input (0: none)
};
static_assert(sizeof(Posted) == 4 * sizeof(double));

std::string group_str(const std::vector<int>& group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

}  // namespace

PeerCollectives::PeerCollectives(std::vector<cudaStream_t> streams)
    : streams_(std::move(streams)),
      meet_(std::make_unique<cpu::ThreadCollectives>(int(streams_.size()))),
      staging_(streams_.size()) {}

PeerCollectives::~PeerCollectives() {
  for (Staging& s : staging_) cudaFree(s.ptr);
  for (auto& [bytes, p] : spare_) cudaFree(p);
}

int PeerCollectives::num_devices() const { return int(streams_.size()); }
void PeerCollectives::abort(const std::string& why) { meet_->abort(why); }
bool PeerCollectives::aborted() const { return meet_->aborted(); }

void* PeerCollectives::staging(int device, size_t bytes) {
  Staging& s = staging_[size_t(device)];
  if (s.bytes < bytes) {
    // Peers stopped reading it at the previous call's second meeting.
    check(cudaFree(s.ptr), "cudaFree of a collective's staging buffer");
    s.ptr = nullptr;
    s.bytes = 0;
    check(cudaMalloc(&s.ptr, bytes), "cudaMalloc of a collective's staging buffer");
    s.bytes = bytes;
  }
  return s.ptr;
}

void PeerCollectives::barrier(int device, const std::vector<int>& group) {
  if (device < 0 || device >= num_devices()) throw Error("collectives: barrier on device " + std::to_string(device) + ": out of range");
  check(cudaStreamSynchronize(streams_[size_t(device)]), "a barrier's stream synchronisation");
  meet_->barrier(device, group);
}

void PeerCollectives::run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out,
                          int64_t count, DType t, int root) {
  const std::string what = std::string("collectives: ") + kind_name(int64_t(kind)) + " on group " + group_str(group) +
                           ": device " + std::to_string(device);
  if (device < 0 || device >= num_devices())
    throw Error(what + " is out of range (" + std::to_string(num_devices()) + " devices)");
  const auto at = std::find(group.begin(), group.end(), device);
  if (at == group.end()) throw Error(what + " is not in the group");
  const int n = int(group.size()), rank = int(at - group.begin());
  if (count < 0) throw Error(what + " passed a negative count " + std::to_string(count));
  if (kind == Kind::Broadcast && (root < 0 || root >= n)) throw Error(what + " named a root outside the group");
  const bool reduces = kind == Kind::AllReduce || kind == Kind::ReduceScatter;
  if (reduces && t != DType::F32 && t != DType::BF16 && t != DType::F16)
    throw Error(what + ": CUDA reduces float32, bfloat16 and float16 values, not " + dtype_name(t));
  if (reduces && n > kMaxRanks) throw Error(what + ": groups of more than " + std::to_string(kMaxRanks) + " devices");

  cudaStream_t s = streams_[size_t(device)];
  const size_t size = dtype_size(t);
  const bool p2p = kind == Kind::Send || kind == Kind::Recv;
  const int64_t in_elems = kind == Kind::ReduceScatter || kind == Kind::AllToAll ? n * count : count;
  const bool has_in = kind != Kind::Recv && !(kind == Kind::Broadcast && rank != root);
  // The input is produced on this device's stream; staging it lets a device's out overlap its in.
  check(cudaStreamSynchronize(s), "waiting for a collective's input");
  Posted mine{int64_t(kind), count, root, 0};
  if (has_in && count > 0) {
    void* st = staging(device, size_t(in_elems) * size);
    check(cudaMemcpyAsync(st, in, size_t(in_elems) * size, cudaMemcpyDeviceToDevice, s), "staging a collective's input");
    check(cudaStreamSynchronize(s), "staging a collective's input");
    mine.staged = uint64_t(reinterpret_cast<uintptr_t>(st));
  }
  std::vector<Posted> all(static_cast<size_t>(n));
  meet_->all_gather(device, group, reinterpret_cast<const double*>(&mine), reinterpret_cast<double*>(all.data()), 4);

  // Every rank reads the same descriptors, so all go on or all throw.
  bool agree = true;
  for (const Posted& p : all) {
    const bool kind_ok = p2p ? (p.kind == int64_t(Kind::Send) || p.kind == int64_t(Kind::Recv)) : p.kind == int64_t(kind);
    agree = agree && kind_ok && p.count == count && (kind != Kind::Broadcast || p.root == root);
  }
  if (p2p) agree = agree && all[0].kind != all[1].kind;
  if (!agree) {
    std::string msg = "collectives: group " + group_str(group) + " disagrees on the call:";
    for (int r = 0; r < n; ++r)
      msg += std::string(r ? ";" : "") + " device " + std::to_string(group[size_t(r)]) + " called " +
             kind_name(all[size_t(r)].kind) + " with " + std::to_string(all[size_t(r)].count) + " elements";
    meet_->barrier(device, group);
    throw Error(msg);
  }

  auto peer = [&](int r) { return reinterpret_cast<const char*>(uintptr_t(all[size_t(r)].staged)); };
  auto* o = static_cast<char*>(out);
  const size_t bytes = size_t(count) * size;
  if (count > 0) {
    // The rank-ordered sum in the values' own type (16-bit: in float32, rounded once).
    auto sum = [&](auto zero) {
      using T = decltype(zero);
      const T* src[kMaxRanks] = {};
      for (int r = 0; r < n; ++r)
        src[r] = reinterpret_cast<const T*>(peer(r)) + (kind == Kind::ReduceScatter ? rank * count : 0);
      sum_ranks(count, src, n, static_cast<T*>(out), s);
    };
    switch (kind) {
      case Kind::AllReduce:
      case Kind::ReduceScatter:
        if (t == DType::BF16) sum(bf16{});
        else if (t == DType::F16) sum(f16{});
        else sum(0.f);
        check(cudaGetLastError(), "the collective's sum kernel");
        break;
      case Kind::AllGather:
        for (int r = 0; r < n; ++r)
          check(cudaMemcpyAsync(o + size_t(r) * bytes, peer(r), bytes, cudaMemcpyDeviceToDevice, s), "all_gather copy");
        break;
      case Kind::AllToAll:
        for (int r = 0; r < n; ++r)
          check(cudaMemcpyAsync(o + size_t(r) * bytes, peer(r) + size_t(rank) * bytes, bytes, cudaMemcpyDeviceToDevice, s),
                "all_to_all copy");
        break;
      case Kind::Broadcast:
        check(cudaMemcpyAsync(o, peer(root), bytes, cudaMemcpyDeviceToDevice, s), "broadcast copy");
        break;
      case Kind::Recv:
        check(cudaMemcpyAsync(o, peer(1 - rank), bytes, cudaMemcpyDeviceToDevice, s), "recv copy");
        break;
      case Kind::Send:
        break;
    }
    check(cudaStreamSynchronize(s), "finishing a collective");
  }
  // Nobody refills its staging buffer while a peer still reads it.
  meet_->barrier(device, group);
}

void PeerCollectives::all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllReduce, device, group, in, out, count, t);
}
void PeerCollectives::all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllGather, device, group, in, out, count, t);
}
void PeerCollectives::reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                     DType t) {
  run(Kind::ReduceScatter, device, group, in, out, count, t);
}
void PeerCollectives::all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllToAll, device, group, in, out, count, t);
}
void PeerCollectives::broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out,
                                int64_t count, DType t) {
  run(Kind::Broadcast, device, group, in, out, count, t, root);
}
void PeerCollectives::send(int device, int peer, const void* buf, int64_t count, DType t) {
  if (device == peer) throw Error("collectives: send on device " + std::to_string(device) + " names itself as the peer");
  run(Kind::Send, device, {std::min(device, peer), std::max(device, peer)}, buf, nullptr, count, t);
}
// What post() leaves in the host mailbox: the message's device buffer, its count and type.
struct Letter {
  uint64_t data = 0;
  int64_t count = 0, type = 0;
};
static_assert(sizeof(Letter) == 3 * sizeof(double));

void PeerCollectives::post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) {
  if (device < 0 || device >= num_devices()) throw Error("collectives: post on device " + std::to_string(device) + ": out of range");
  if (count < 0) throw Error("collectives: post on device " + std::to_string(device) + " passed a negative count");
  cudaStream_t s = streams_[size_t(device)];
  const size_t bytes = size_t(count) * dtype_size(t);
  void* box = nullptr;
  if (bytes > 0) {
    {
      std::lock_guard<std::mutex> lk(mail_mu_);
      if (auto it = spare_.find(bytes); it != spare_.end()) {
        box = it->second;
        spare_.erase(it);
      }
    }
    if (!box) check(cudaMalloc(&box, bytes), "cudaMalloc of a pipeline message's buffer");
    check(cudaMemcpyAsync(box, buf, bytes, cudaMemcpyDeviceToDevice, s), "posting a pipeline message");
    check(cudaStreamSynchronize(s), "posting a pipeline message");
  }
  const Letter letter{uint64_t(reinterpret_cast<uintptr_t>(box)), count, int64_t(t)};
  meet_->post(device, peer, tag, reinterpret_cast<const double*>(&letter), 3, DType::F64);
}

void PeerCollectives::take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) {
  if (device < 0 || device >= num_devices()) throw Error("collectives: take on device " + std::to_string(device) + ": out of range");
  Letter letter;
  meet_->take(device, peer, tag, reinterpret_cast<double*>(&letter), 3, DType::F64);
  void* box = reinterpret_cast<void*>(uintptr_t(letter.data));
  const size_t bytes = size_t(letter.count) * dtype_size(DType(letter.type));
  auto give_back = [&] {
    if (!box) return;
    std::lock_guard<std::mutex> lk(mail_mu_);
    spare_.emplace(bytes, box);
  };
  if (letter.count != count || DType(letter.type) != t) {
    give_back();
    throw Error("collectives: device " + std::to_string(device) + " takes " + std::to_string(count) + " " + dtype_name(t) +
                " elements from device " + std::to_string(peer) + " (tag " + std::to_string(tag) + "), which posted " +
                std::to_string(letter.count) + " " + dtype_name(DType(letter.type)));
  }
  if (bytes > 0) {
    cudaStream_t s = streams_[size_t(device)];
    check(cudaMemcpyAsync(buf, box, bytes, cudaMemcpyDeviceToDevice, s), "taking a pipeline message");
    check(cudaStreamSynchronize(s), "taking a pipeline message");
  }
  give_back();
}

void PeerCollectives::recv(int device, int peer, void* buf, int64_t count, DType t) {
  if (device == peer) throw Error("collectives: recv on device " + std::to_string(device) + " names itself as the peer");
  run(Kind::Recv, device, {std::min(device, peer), std::max(device, peer)}, nullptr, buf, count, t);
}

}  // namespace shardlab::backends::cuda
