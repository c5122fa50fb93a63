#include "engine/backends/mpi/mpi_collectives.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "engine/util/error.h"

namespace shardlab::backends::mpi {

namespace {

// Every message starts with what its sender is doing, so that processes that disagree get an Error
// rather than each other's data.
struct Header {
  int64_t magic, kind, count, type, group, root;
  bool operator==(const Header&) const = default;
};
constexpr int64_t kMagic = 0x5348524442ll;

uint64_t hash_of(const std::vector<int>& ids, uint64_t salt = 0) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (int id : ids) {
    h ^= uint64_t(uint32_t(id));
    h *= 1099511628211ull;
  }
  return h;
}
// Tags keep apart the messages of groups that run at once (their devices are disjoint) between the
// same two processes; MPI keeps the order of one tag's messages between two processes.
int group_tag(uint64_t h) { return 1 + int(h % 30000); }
int pair_tag(int from, int to) { return 30001 + int(hash_of({from, to}, 7) % 2000); }

const char* kind_name(MpiCollectives::Kind k) {
  switch (k) {
    case MpiCollectives::Kind::Barrier: return "barrier";
    case MpiCollectives::Kind::AllReduce: return "all_reduce";
    case MpiCollectives::Kind::AllGather: return "all_gather";
    case MpiCollectives::Kind::ReduceScatter: return "reduce_scatter";
    case MpiCollectives::Kind::AllToAll: return "all_to_all";
    case MpiCollectives::Kind::Broadcast: return "broadcast";
  }
  return "collective";
}

std::string group_str(const std::vector<int>& g) {
  std::string s = "{";
  for (size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  s += '}';
  return s;
}

// acc = ((src_0 + src_1) + src_2) + ...: the order ThreadCollectives adds in, so results match it bit for bit.
template <class T>
void fold(char* acc_bytes, const std::vector<const char*>& src, int64_t count) {
  T* acc = reinterpret_cast<T*>(acc_bytes);
  const T* a = reinterpret_cast<const T*>(src[0]);
  if (src.size() == 1) {
    std::copy_n(a, count, acc);
    return;
  }
  const T* b = reinterpret_cast<const T*>(src[1]);
  for (int64_t i = 0; i < count; ++i) acc[i] = a[i] + b[i];
  for (size_t k = 2; k < src.size(); ++k) {
    const T* x = reinterpret_cast<const T*>(src[k]);
    for (int64_t i = 0; i < count; ++i) acc[i] += x[i];
  }
}

void fold(DType t, char* acc, const std::vector<const char*>& src, int64_t count) {
  switch (t) {
    case DType::F64: return fold<double>(acc, src, count);
    case DType::F32: return fold<float>(acc, src, count);
    case DType::I32: return fold<int32_t>(acc, src, count);
    case DType::BF16:
    case DType::F16: {
      const std::vector<const void*> at(src.begin(), src.end());
      return sum_in_order_16bit(t, acc, at.data(), int(at.size()), count);
    }
  }
}

int message_bytes(size_t bytes, const std::string& what) {
  if (bytes > size_t(INT_MAX))
    throw Error(what + ": " + std::to_string(bytes) + " bytes in one message between processes; the limit is 2 GiB");
  return int(bytes);
}

}  // namespace

MpiCollectives::MpiCollectives(std::shared_ptr<MpiWorld> world, int num_devices, int local)
    : world_(std::move(world)), num_devices_(num_devices), local_(local), inside_(num_devices) {
  if (local_ < 1 || num_devices_ != local_ * world_->size())
    throw Error("internal: " + std::to_string(num_devices_) + " devices over " + std::to_string(world_->size()) +
                " processes of " + std::to_string(local_));
  MpiMailbox::Hooks hooks;
  hooks.process_of = [this](int device) { return process_of(device); };
  hooks.stop = [this] { return aborted_.load(); };
  hooks.why = [this] { return abort_reason(); };
  hooks.idle = [this] {
    if (cores_) cores_->release();
  };
  hooks.busy = [this] {
    if (cores_) cores_->acquire();
  };
  mail_ = std::make_unique<MpiMailbox>(world_, std::move(hooks));
}

MpiCollectives::~MpiCollectives() = default;

void MpiCollectives::share_cores(CoreShare* cores) {
  cores_ = cores;
  inside_.share_cores(cores);
}

void MpiCollectives::complete(const std::function<void(std::vector<MPI_Request>&)>& post) {
  if (cores_) cores_->release();
  try {
    world_->complete(post, [&] { return aborted_.load(); }, [&] { return abort_reason(); });
  } catch (...) {
    if (cores_) cores_->acquire();
    throw;
  }
  if (cores_) cores_->acquire();
}

std::string MpiCollectives::abort_reason() const {
  std::lock_guard<std::mutex> lock(abort_mu_);
  return abort_reason_.empty() ? std::string("collectives aborted") : abort_reason_;
}

void MpiCollectives::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (abort_reason_.empty()) abort_reason_ = why;
  }
  aborted_ = true;
  inside_.abort(why);
  std::lock_guard<std::mutex> lock(meetings_mu_);
  for (auto& [g, m] : meetings_) {
    std::lock_guard<std::mutex> ml(m->mu);
    m->cv.notify_all();
  }
}

MpiCollectives::Meeting& MpiCollectives::meeting_for(const std::vector<int>& group) {
  std::lock_guard<std::mutex> lock(meetings_mu_);
  auto& slot = meetings_[group];
  if (!slot) slot = std::make_unique<Meeting>();
  return *slot;
}

void MpiCollectives::run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                         DType t, int root) {
  const std::string what = std::string(kind_name(kind)) + " on device " + std::to_string(device) + " over " + group_str(group);
  if (aborted_) throw Error(abort_reason());
  const auto at = std::find(group.begin(), group.end(), device);
  if (at == group.end()) throw Error("collectives: " + what + ": the device is not in its group");
  if (process_of(device) != world_->rank())
    throw Error("collectives: " + what + ": the device is not one of process " + std::to_string(world_->rank()) + "'s");
  if (count < 0) throw Error("collectives: " + what + ": a negative count");
  for (int d : group)
    if (d < 0 || d >= num_devices_) throw Error("collectives: " + what + ": device " + std::to_string(d) + " is out of range");
  if (std::all_of(group.begin(), group.end(), [&](int d) { return process_of(d) == world_->rank(); })) {
    switch (kind) {
      case Kind::Barrier: return inside_.barrier(device, group);
      case Kind::AllReduce: return inside_.all_reduce(device, group, in, out, count, t);
      case Kind::AllGather: return inside_.all_gather(device, group, in, out, count, t);
      case Kind::ReduceScatter: return inside_.reduce_scatter(device, group, in, out, count, t);
      case Kind::AllToAll: return inside_.all_to_all(device, group, in, out, count, t);
      case Kind::Broadcast: return inside_.broadcast(device, group, root, in, out, count, t);
    }
  }
  const int rank = int(at - group.begin());
  const int here = int(std::count_if(group.begin(), group.end(), [&](int d) { return process_of(d) == world_->rank(); }));
  Meeting& m = meeting_for(group);
  std::unique_lock<std::mutex> lk(m.mu);
  if (m.arrived == 0) {
    m.posts.assign(group.size(), Post{});
    m.kind = kind;
    m.count = count;
    m.type = t;
    m.root = root;
    m.disagreement.clear();
  } else if (m.kind != kind || m.count != count || m.type != t || m.root != root) {
    m.disagreement = "collectives: devices over " + group_str(group) + " disagree: " + what + " of " + std::to_string(count) +
                     " " + dtype_name(t) + " elements meets " + kind_name(m.kind) + " of " + std::to_string(m.count);
  }
  m.posts[size_t(rank)] = Post{in, out};
  if (++m.arrived < here) {
    const uint64_t generation = m.generation;
    if (cores_) {
      lk.unlock();
      cores_->release();
      lk.lock();
    }
    m.cv.wait(lk, [&] { return m.generation != generation || aborted_.load(); });
    if (cores_) {
      lk.unlock();
      cores_->acquire();
      lk.lock();
    }
    if (m.generation == generation) throw Error(abort_reason());
    if (!m.error.empty()) throw Error(m.error);
    return;
  }
  // The last local device to arrive leads: its peers' buffers are all posted.
  lk.unlock();
  std::string error;
  try {
    if (!m.disagreement.empty()) throw Error(m.disagreement);
    exchange(m, group);
  } catch (const std::exception& e) {
    error = e.what();
  }
  lk.lock();
  m.arrived = 0;
  m.error = error;
  ++m.generation;
  lk.unlock();
  m.cv.notify_all();
  if (!error.empty()) throw Error(error);
}

void MpiCollectives::exchange(Meeting& m, const std::vector<int>& group) {
  const int n = int(group.size()), me = world_->rank();
  const int64_t count = m.count;
  const size_t es = dtype_size(m.type), chunk = size_t(count) * es;
  const Kind kind = m.kind;
  const bool chunked = kind == Kind::ReduceScatter || kind == Kind::AllToAll;
  // Group ranks by process, ascending; each rank's index among its process's ranks.
  std::map<int, std::vector<int>> ranks_of;
  std::vector<size_t> index(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& v = ranks_of[process_of(group[size_t(r)])];
    index[size_t(r)] = v.size();
    v.push_back(r);
  }
  const std::vector<int>& mine = ranks_of[me];
  const int root_process = process_of(group[size_t(m.root)]);
  const size_t in_bytes = kind == Kind::Barrier ? 0 : chunked ? size_t(n) * chunk : chunk;
  const size_t out_bytes = kind == Kind::AllGather || kind == Kind::AllToAll ? size_t(n) * chunk : chunk;

  // Local inputs are sent and read where they lie. Only an input that overlaps an output in a way
  // the interface does not allow (its own in-place forms are harmless here: every output is written
  // after every read of the inputs it overlaps) is copied first.
  std::vector<const char*> in(static_cast<size_t>(n), nullptr);
  std::vector<std::vector<char>> staged(static_cast<size_t>(n));
  for (int r : mine) {
    const bool has_in = kind != Kind::Barrier && !(kind == Kind::Broadcast && r != m.root);
    if (!has_in || in_bytes == 0) continue;
    const char* p = static_cast<const char*>(m.posts[size_t(r)].in);
    if (!p) throw Error("collectives: device " + std::to_string(group[size_t(r)]) + " passed a null buffer");
    bool overlaps = false;
    for (int s : mine) {
      const char* o = static_cast<const char*>(m.posts[size_t(s)].out);
      if (!o || p + in_bytes <= o || o + out_bytes <= p) continue;
      const bool allowed = s == r && ((kind == Kind::AllReduce && p == o) || (kind == Kind::Broadcast && p == o) ||
                                      (kind == Kind::AllGather && p == o + size_t(r) * chunk) ||
                                      (kind == Kind::ReduceScatter && o == p + size_t(r) * chunk));
      overlaps = overlaps || !allowed;
    }
    if (overlaps) {
      staged[size_t(r)].assign(p, p + in_bytes);
      p = staged[size_t(r)].data();
    }
    in[size_t(r)] = p;
  }

  // Per other process: a header, then the pieces in an order both sides know (MPI keeps the order of
  // one tag's messages between two processes), sent from and received into their places.
  const Header h{kMagic, int64_t(kind), count, int64_t(m.type), int64_t(hash_of(group) >> 1), m.root};
  struct Peer {
    int process;
    Header theirs{};
    std::vector<const char*> sends;
    std::vector<char> in;  // what it sends this process, piece after piece
  };
  std::vector<Peer> peers;
  for (const auto& [q, theirs] : ranks_of) {
    if (q == me) continue;
    Peer p{q, {}, {}, {}};
    size_t expect = 0;
    switch (kind) {
      case Kind::Barrier:
        break;
      case Kind::AllReduce:
      case Kind::AllGather:
        for (int r : mine) p.sends.push_back(in[size_t(r)]);
        expect = theirs.size() * chunk;
        break;
      case Kind::Broadcast:
        if (root_process == me) p.sends.push_back(in[size_t(m.root)]);
        expect = root_process == q ? chunk : 0;
        break;
      case Kind::ReduceScatter:
      case Kind::AllToAll:
        // Chunk s of each of my ranks' inputs, for each of their ranks s.
        for (int r : mine)
          for (int s : theirs) p.sends.push_back(in[size_t(r)] + size_t(s) * chunk);
        expect = theirs.size() * mine.size() * chunk;
        break;
    }
    if (chunk == 0) p.sends.clear(), expect = 0;  // nothing but the header to trade
    p.in.resize(expect);
    peers.push_back(std::move(p));
  }
  const std::string what = std::string(kind_name(kind)) + " over devices " + group_str(group);
  const int tag = group_tag(hash_of(group));
  const int piece = message_bytes(chunk, what);
  try {
    complete([&](std::vector<MPI_Request>& reqs) {
      auto post = [&](int rc, const char* call) { MpiWorld::check(rc, std::string(call) + " (" + what + ")"); };
      for (Peer& p : peers) {
        MPI_Comm c = world_->device_comm();
        reqs.emplace_back();
        post(MPI_Irecv(&p.theirs, int(sizeof(Header)), MPI_BYTE, p.process, tag, c, &reqs.back()), "MPI_Irecv");
        for (size_t off = 0; off < p.in.size(); off += chunk) {
          reqs.emplace_back();
          post(MPI_Irecv(p.in.data() + off, piece, MPI_BYTE, p.process, tag, c, &reqs.back()), "MPI_Irecv");
        }
        reqs.emplace_back();
        post(MPI_Isend(&h, int(sizeof(Header)), MPI_BYTE, p.process, tag, c, &reqs.back()), "MPI_Isend");
        for (const char* b : p.sends) {
          reqs.emplace_back();
          post(MPI_Isend(b, piece, MPI_BYTE, p.process, tag, c, &reqs.back()), "MPI_Isend");
        }
      }
    });
  } catch (...) {
    // The transfers may still write into these buffers until the process ends (an abort ends it).
    new std::vector<Peer>(std::move(peers));
    throw;
  }
  std::map<int, const char*> payload;  // by process
  for (const Peer& p : peers) {
    if (!(p.theirs == h))
      throw Error("collectives: processes disagree on " + what + ": process " + std::to_string(p.process) + " calls " +
                  kind_name(Kind(p.theirs.kind)) + " of " + std::to_string(p.theirs.count) + " elements, process " +
                  std::to_string(me) + " " + kind_name(kind) + " of " + std::to_string(count));
    payload[p.process] = p.in.data();
  }

  // Rank r's whole input (all_reduce, all_gather), or its chunk for local rank s (reduce_scatter, all_to_all).
  auto input = [&](int r) -> const char* {
    const int q = process_of(group[size_t(r)]);
    return q == me ? in[size_t(r)] : payload[q] + index[size_t(r)] * chunk;
  };
  auto chunk_for = [&](int r, int s) -> const char* {
    const int q = process_of(group[size_t(r)]);
    if (q == me) return in[size_t(r)] + size_t(s) * chunk;
    return payload[q] + (index[size_t(r)] * mine.size() + index[size_t(s)]) * chunk;
  };
  auto copy = [](void* dst, const char* src, size_t bytes) {
    if (dst != src) std::memmove(dst, src, bytes);
  };
  std::vector<const char*> src(static_cast<size_t>(n));
  std::vector<char> acc(kind == Kind::AllReduce || kind == Kind::ReduceScatter ? chunk : 0);
  switch (kind) {
    case Kind::Barrier:
      return;
    case Kind::AllReduce: {
      for (int r = 0; r < n; ++r) src[size_t(r)] = input(r);
      fold(m.type, acc.data(), src, count);
      for (int s : mine) std::memcpy(m.posts[size_t(s)].out, acc.data(), chunk);
      return;
    }
    case Kind::AllGather:
      for (int s : mine)
        for (int r = 0; r < n; ++r) copy(static_cast<char*>(m.posts[size_t(s)].out) + size_t(r) * chunk, input(r), chunk);
      return;
    case Kind::ReduceScatter:
      // Into a scratch sum first: an in-place out is one of the chunks being added.
      for (int s : mine) {
        for (int r = 0; r < n; ++r) src[size_t(r)] = chunk_for(r, s);
        fold(m.type, acc.data(), src, count);
        std::memcpy(m.posts[size_t(s)].out, acc.data(), chunk);
      }
      return;
    case Kind::AllToAll:
      for (int s : mine)
        for (int r = 0; r < n; ++r) copy(static_cast<char*>(m.posts[size_t(s)].out) + size_t(r) * chunk, chunk_for(r, s), chunk);
      return;
    case Kind::Broadcast: {
      const char* from = root_process == me ? in[size_t(m.root)] : payload[root_process];
      for (int s : mine) copy(m.posts[size_t(s)].out, from, chunk);
      return;
    }
  }
}

void MpiCollectives::barrier(int device, const std::vector<int>& group) {
  run(Kind::Barrier, device, group, nullptr, nullptr, 0, DType::F32);
}
void MpiCollectives::all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllReduce, device, group, in, out, count, t);
}
void MpiCollectives::all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllGather, device, group, in, out, count, t);
}
void MpiCollectives::reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                    DType t) {
  run(Kind::ReduceScatter, device, group, in, out, count, t);
}
void MpiCollectives::all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count, DType t) {
  run(Kind::AllToAll, device, group, in, out, count, t);
}
void MpiCollectives::broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out,
                               int64_t count, DType t) {
  if (root < 0 || root >= int(group.size()))
    throw Error("collectives: broadcast on device " + std::to_string(device) + ": root " + std::to_string(root) + " is not a rank");
  run(Kind::Broadcast, device, group, in, out, count, t, root);
}

void MpiCollectives::send(int device, int peer, const void* buf, int64_t count, DType t) {
  if (process_of(peer) == world_->rank()) return inside_.send(device, peer, buf, count, t);
  if (aborted_) throw Error(abort_reason());
  const std::string what = "send from device " + std::to_string(device) + " to " + std::to_string(peer);
  const int bytes = message_bytes(size_t(count) * dtype_size(t), what);
  complete([&](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        MpiWorld::check(MPI_Isend(buf, bytes, MPI_BYTE, process_of(peer), pair_tag(device, peer), world_->device_comm(),
                                  &reqs.back()),
                        "MPI_Isend (" + what + ")");
      });
}

void MpiCollectives::recv(int device, int peer, void* buf, int64_t count, DType t) {
  if (process_of(peer) == world_->rank()) return inside_.recv(device, peer, buf, count, t);
  if (aborted_) throw Error(abort_reason());
  const std::string what = "recv on device " + std::to_string(device) + " from " + std::to_string(peer);
  const int bytes = message_bytes(size_t(count) * dtype_size(t), what);
  complete([&](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        MpiWorld::check(MPI_Irecv(buf, bytes, MPI_BYTE, process_of(peer), pair_tag(peer, device), world_->device_comm(),
                                  &reqs.back()),
                        "MPI_Irecv (" + what + ")");
      });
}

void MpiCollectives::post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) {
  if (peer < 0 || peer >= num_devices_)
    throw Error("collectives: post on device " + std::to_string(device) + " names peer " + std::to_string(peer));
  if (process_of(peer) == world_->rank()) return inside_.post(device, peer, tag, buf, count, t);
  mail_->post(device, peer, tag, buf, count, t);
}

void MpiCollectives::take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) {
  if (peer < 0 || peer >= num_devices_)
    throw Error("collectives: take on device " + std::to_string(device) + " names peer " + std::to_string(peer));
  if (process_of(peer) == world_->rank()) return inside_.take(device, peer, tag, buf, count, t);
  mail_->take(device, peer, tag, buf, count, t);
}

}  // namespace shardlab::backends::mpi
