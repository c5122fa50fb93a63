// Shared-memory collectives among the CPU backend's virtual devices.
//
// Every collective runs the same three steps on each device of the group:
//   1. post: the device writes its buffer pointers, count and kind into its rank's slot; arrive.
//   2. check and work: every device reads all slots (so every device agrees on whether the call is
//      consistent), then does its share of the data movement straight between the posted buffers:
//        all_reduce     rank r owns a contiguous, cache-line aligned slice of the elements; it sums
//                       that slice over all ranks in rank order (block by block, into a small
//                       accumulator) and writes the block into every rank's out;
//        reduce_scatter rank r sums chunk r of every rank's in, in rank order, into its out;
//        all_gather     rank r copies every rank's in into its own out;
//        all_to_all     rank r copies chunk r of every rank's in into its own out.
//      Reductions are split so that each output element is summed exactly once in the whole group
//      and written once into each rank's out, and every rank gets an equal share of the work
//      whichever threads happen to run. Outputs that will not fit the last-level cache anyway (over
//      32 MiB written by the group) go through non-temporal stores, which skip reading each
//      destination line before writing it.
//   3. arrive again: nobody returns (and reuses its buffers) while a peer still reads or writes them.
// Small calls (a barrier, a loss, the few KiB of an activation's all-to-all) take one phase: the last
// device to arrive checks the slots and, when they agree, moves every rank's share itself before it
// lets the others go. Where devices outnumber cores each phase costs every device a sleep and a
// wake-up, far more than copying a few KiB; the second arrival would double that.
// In-place calls are safe without copies where only the owner of a slice reads it before writing it
// (all_reduce in == out, reduce_scatter out == in + rank * count, all_gather in == out + rank * count);
// any other overlap of a device's in and out is first copied to that device's staging buffer.
#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cpu/thread_budget.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <sstream>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/util/aligned_allocator.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

namespace {

const char* kind_name(int kind) {
  static const char* const names[] = {"barrier", "all_reduce", "all_gather", "reduce_scatter",
                                      "all_to_all", "broadcast", "send",       "recv"};
  return kind >= 0 && kind < 8 ? names[kind] : "?";
}

const char* type_name(int id) { return id >= 0 ? dtype_name(DType(id)) : "none"; }

std::string group_str(const std::vector<int>& group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + uintptr_t(b_bytes) && pb < pa + uintptr_t(a_bytes);
}

// Elements per accumulator block: 16 KiB stays in L1 while the group's inputs stream through.
template <class T>
constexpr int64_t kBlock = 16384 / sizeof(T);

// acc[0, len) = ((src[0] + src[1]) + src[2]) + ... at offset off; n >= 2. Always the same order of
// additions per element, so the result does not depend on which thread computes it.
template <class T>
void sum_block(T* __restrict acc, const T* const* src, int n, int64_t off, int64_t len) {
  const T* __restrict a = src[0] + off;
  const T* __restrict b = src[1] + off;
  for (int64_t i = 0; i < len; ++i) acc[i] = a[i] + b[i];
  int k = 2;
  for (; k + 1 < n; k += 2) {
    const T* __restrict x = src[k] + off;
    const T* __restrict y = src[k + 1] + off;
    for (int64_t i = 0; i < len; ++i) acc[i] = (acc[i] + x[i]) + y[i];
  }
  if (k < n) {
    const T* __restrict x = src[k] + off;
    for (int64_t i = 0; i < len; ++i) acc[i] += x[i];
  }
}

// The 16-bit floats, as elements the data movement copies; their sums go through float32.
struct Bf16 {
  uint16_t bits;
};
struct Half {
  uint16_t bits;
};
void sum_block(Bf16* acc, const Bf16* const* src, int n, int64_t off, int64_t len) {
  std::vector<const void*> at(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) at[size_t(r)] = src[r] + off;
  sum_in_order_16bit(DType::BF16, acc, at.data(), n, len);
}
void sum_block(Half* acc, const Half* const* src, int n, int64_t off, int64_t len) {
  std::vector<const void*> at(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) at[size_t(r)] = src[r] + off;
  sum_in_order_16bit(DType::F16, acc, at.data(), n, len);
}

// Above this many bytes written by the whole group, the output cannot stay in the last-level cache
// for its consumer anyway, so it is written with non-temporal stores.
constexpr int64_t kStreamBytes = int64_t(32) << 20;

// Up to this many bytes written by the whole group, the last device to arrive moves all of it (one
// phase). Where devices share cores a phase costs each a sleep and a wake-up (50-150 us) and the
// data moves on one core anyway; on cores of their own, a second barrier costs about what copying
// 64 KiB does.
constexpr int64_t kOneMoverBytes = int64_t(64) << 10;
constexpr int64_t kOneMoverSharedBytes = int64_t(1) << 20;

// dst[0, bytes) = src; with `stream`, through non-temporal stores that bypass the cache (for outputs
// far larger than it: saves reading each destination line before writing it). Callers fence.
void store(void* dst, const void* src, size_t bytes, bool stream) {
#if defined(__SSE2__)
  if (stream) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const size_t head = std::min(bytes, size_t(-reinterpret_cast<uintptr_t>(d) & 15));
    std::memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= bytes; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
      __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
    }
    for (; i + 16 <= bytes; i += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    std::memcpy(d + i, s + i, bytes - i);
    return;
  }
#endif
  (void)stream;
  std::memcpy(dst, src, bytes);
}

inline void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace

// What one rank posted for the current call. Written by its owner before the first arrival, read
// by peers between the two arrivals.
struct Slot {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t count = 0;
  int kind = 0;
  int type = -1;  // a DType; -1 before the first call
  int root = 0;  // broadcast's root rank
};

struct ThreadCollectives::Group {
  std::vector<int> devices;
  std::vector<Slot> slots;
  // Per rank, used only by that rank's thread.
  std::vector<std::vector<std::byte, util::AlignedAllocator<std::byte>>> staging;

  // Reusable barrier: the last of `size` arrivals bumps the generation and wakes the sleepers.
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<uint64_t> generation{0};
  // Set by the last device to arrive at a call's first phase, before it bumps the generation: it
  // moved every rank's data, so the call ends there. Read by each device before its next arrival,
  // so no later call rewrites it first.
  bool moved_all = false;
};

ThreadCollectives::ThreadCollectives(int num_devices) : num_devices_(num_devices) {
  if (num_devices <= 0)
    throw Error("collectives: the number of devices must be positive, got " + std::to_string(num_devices));
  busy_ = std::make_unique<std::atomic<bool>[]>(size_t(num_devices));
  for (int i = 0; i < num_devices; ++i) busy_[i].store(false);
}

ThreadCollectives::~ThreadCollectives() = default;

int ThreadCollectives::num_devices() const { return num_devices_; }

bool ThreadCollectives::aborted() const { return aborted_.load(std::memory_order_acquire); }

void ThreadCollectives::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(abort_mu_);
    if (aborted_.load()) return;  // the first reason is the one reported
    abort_reason_ = why;
    aborted_.store(true, std::memory_order_release);
  }
  { std::lock_guard<std::mutex> lk(mail_mu_); }
  mail_cv_.notify_all();
  // A waiter checks the flag under its group's mutex before sleeping, so taking each mutex here
  // before notifying cannot miss one.
  {
    std::lock_guard<std::mutex> lk(groups_mu_);
    for (auto& [key, g] : groups_) {
      { std::lock_guard<std::mutex> glk(g->mu); }
      g->cv.notify_all();
    }
  }
  if (budget_) budget_->wake();  // sleepers waiting for a core test the flag too
}

void ThreadCollectives::throw_aborted(const Group& g, int rank, Kind kind) const {
  std::string why;
  {
    std::lock_guard<std::mutex> lk(abort_mu_);
    why = abort_reason_;
  }
  throw Error(std::string("collectives: ") + kind_name(int(kind)) + " on group " + group_str(g.devices) +
              " aborted on device " + std::to_string(g.devices[rank]) + ": " + why);
}

ThreadCollectives::Group& ThreadCollectives::group_for(int device, const std::vector<int>& group, Kind kind) {
  const std::string what = std::string("collectives: ") + kind_name(int(kind)) + " on device " + std::to_string(device);
  if (device < 0 || device >= num_devices_)
    throw Error(what + ": device " + std::to_string(device) + " is out of range (this process has " +
                std::to_string(num_devices_) + " devices)");
  std::lock_guard<std::mutex> lk(groups_mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    if (group.empty()) throw Error(what + ": the group is empty");
    std::vector<char> seen(size_t(num_devices_), 0);
    for (int d : group) {
      if (d < 0 || d >= num_devices_)
        throw Error(what + ": group " + group_str(group) + " names device " + std::to_string(d) +
                    ", out of range (this process has " + std::to_string(num_devices_) + " devices)");
      if (seen[size_t(d)]++)
        throw Error(what + ": group " + group_str(group) + " lists device " + std::to_string(d) + " twice");
    }
    auto g = std::make_unique<Group>();
    g->devices = group;
    g->slots.resize(group.size());
    g->staging.resize(group.size());
    it = groups_.emplace(group, std::move(g)).first;
  }
  if (std::find(group.begin(), group.end(), device) == group.end())
    throw Error(what + ": device " + std::to_string(device) + " is not in group " + group_str(group));
  return *it->second;
}

void ThreadCollectives::arrive(Group& g, int rank, Kind kind, const std::function<void()>* last) {
  std::unique_lock<std::mutex> lk(g.mu);
  if (aborted_.load(std::memory_order_acquire)) {
    lk.unlock();
    throw_aborted(g, rank, kind);
  }
  const uint64_t gen = g.generation.load(std::memory_order_relaxed);
  if (++g.arrived == int(g.devices.size())) {
    g.arrived = 0;
    if (last) {
      // Every peer is waiting for the generation below, so none can arrive again meanwhile.
      lk.unlock();
      (*last)();
      lk.lock();
    }
    g.generation.store(gen + 1, std::memory_order_release);
    lk.unlock();
    g.cv.notify_all();
    if (budget_) budget_->wake();
    return;
  }
  lk.unlock();
  // Peers are usually close behind: poll briefly, yielding so that with more devices than cores the
  // peers we wait for get the core, then sleep. Where cores are budgeted, sleep at once and lend
  // the core meanwhile.
  for (int i = 0; !budget_ && i < 64; ++i) {
    if (g.generation.load(std::memory_order_acquire) != gen) return;
    if (i < 16) {
      for (int j = 0; j < 16; ++j) cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  if (budget_) {
    // Woken only once the call has passed and a core is this device's again.
    budget_->release_until([&] {
      return g.generation.load(std::memory_order_acquire) != gen || aborted_.load(std::memory_order_acquire);
    });
    if (g.generation.load(std::memory_order_acquire) != gen) return;
    throw_aborted(g, rank, kind);
  }
  lk.lock();
  g.cv.wait(lk, [&] { return g.generation.load(std::memory_order_acquire) != gen || aborted_.load(); });
  const bool passed = g.generation.load(std::memory_order_acquire) != gen;
  lk.unlock();
  if (passed) return;
  throw_aborted(g, rank, kind);
}

// Marks a device busy for the length of one collective.
class ThreadCollectives::Call {
 public:
  Call(std::atomic<bool>& busy, int device, Kind kind, const std::vector<int>& group) : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acq_rel))
      throw Error(std::string("collectives: ") + kind_name(int(kind)) + " on group " + group_str(group) +
                  ": device " + std::to_string(device) + " is already taking part in another collective");
  }
  ~Call() { busy_.store(false, std::memory_order_release); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  std::atomic<bool>& busy_;
};

void ThreadCollectives::run(Kind kind, int device, const std::vector<int>& group, const void* in, void* out,
                            int64_t count, DType t, int root) {
  Group& g = group_for(device, group, kind);
  const int n = int(g.devices.size());
  const int rank = int(std::find(g.devices.begin(), g.devices.end(), device) - g.devices.begin());
  const std::string what = std::string("collectives: ") + kind_name(int(kind)) + " on group " + group_str(group) +
                           ": device " + std::to_string(device);
  if (count < 0) throw Error(what + " passed a negative count " + std::to_string(count));
  if (kind == Kind::Broadcast && (root < 0 || root >= n))
    throw Error(what + " named root rank " + std::to_string(root) + ", outside the group");
  if (aborted()) throw_aborted(g, rank, kind);
  Call call(busy_[device], device, kind, group);

  const bool p2p = kind == Kind::Send || kind == Kind::Recv;
  const int64_t size = int64_t(dtype_size(t));
  const int64_t in_elems = kind == Kind::ReduceScatter || kind == Kind::AllToAll ? n * count : count;
  const int64_t out_elems = kind == Kind::AllGather || kind == Kind::AllToAll ? n * count : count;
  const int64_t in_bytes = in_elems * size, out_bytes = out_elems * size;
  const bool needs_in = kind != Kind::Barrier && kind != Kind::Recv && !(kind == Kind::Broadcast && rank != root);
  const bool needs_out = kind != Kind::Barrier && kind != Kind::Send;
  if (count > 0 && ((needs_in && in == nullptr) || (needs_out && out == nullptr)))
    throw Error(what + " passed a null buffer for " + std::to_string(count) + " elements");

  if (n == 1) {
    // Every collective of one device is a copy.
    if (needs_in && needs_out && count > 0 && in != out) std::memmove(out, in, size_t(out_bytes));
    return;
  }

  // A device's in and out may overlap only where its peers never read what it writes first.
  if (needs_in && needs_out && overlaps(in, in_bytes, out, out_bytes)) {
    const auto* ib = static_cast<const std::byte*>(in);
    auto* ob = static_cast<std::byte*>(out);
    const bool safe = (kind == Kind::AllReduce && in == out) || (kind == Kind::Broadcast && in == out) ||
                      (kind == Kind::AllGather && ib == ob + rank * count * size) ||
                      (kind == Kind::ReduceScatter && ob == ib + rank * count * size);
    if (!safe) {
      auto& buf = g.staging[size_t(rank)];
      if (buf.size() < size_t(in_bytes)) {
        buf.clear();
        buf.shrink_to_fit();
        buf.resize(size_t(in_bytes));
      }
      std::memcpy(buf.data(), in, size_t(in_bytes));
      in = buf.data();
    }
  }

  Slot& mine = g.slots[size_t(rank)];
  mine.in = in;
  mine.out = out;
  mine.count = count;
  mine.kind = int(kind);
  mine.type = int(t);
  mine.root = root;

  // Every device reads the same slots, so either all of them go on or all of them throw this.
  // A send pairs with a recv; every other call with the same call.
  auto matches = [&](const Slot& s) {
    if (s.type != int(t) || s.count != count) return false;
    if (p2p) return s.kind == int(Kind::Send) || s.kind == int(Kind::Recv);
    return s.kind == int(kind) && (kind != Kind::Broadcast || s.root == root);
  };
  auto slots_agree = [&] {
    bool agree = true;
    for (int r = 0; r < n; ++r) agree = agree && matches(g.slots[size_t(r)]);
    if (p2p) agree = agree && g.slots[0].kind != g.slots[1].kind;
    return agree;
  };
  // One rank's share of the data movement, as that rank's own call would do it.
  auto move_rank = [&](int r) {
    const Slot& s = g.slots[size_t(r)];
    const Kind k = Kind(s.kind);
    switch (t) {
      case DType::F64: move<double>(k, g, r, static_cast<double*>(s.out), count, root); break;
      case DType::F32: move<float>(k, g, r, static_cast<float*>(s.out), count, root); break;
      case DType::I32: move<int32_t>(k, g, r, static_cast<int32_t*>(s.out), count, root); break;
      case DType::BF16: move<Bf16>(k, g, r, static_cast<Bf16*>(s.out), count, root); break;
      case DType::F16: move<Half>(k, g, r, static_cast<Half*>(s.out), count, root); break;
    }
  };
  // The last to arrive decides for the whole group whether this call is small enough to finish in
  // one phase; the ranks' own counts could disagree, so none can decide alone.
  const int64_t group_bytes = (kind == Kind::AllGather || kind == Kind::AllToAll ? n : 1) * n * count * size;
  const std::function<void()> finish = [&] {
    g.moved_all = false;
    if (group_bytes > (budget_ ? kOneMoverSharedBytes : kOneMoverBytes) || !slots_agree()) return;
    if (count > 0 && kind != Kind::Barrier)
      for (int r = 0; r < n; ++r) move_rank(r);
    g.moved_all = true;
  };
  arrive(g, rank, kind, &finish);
  if (g.moved_all) return;

  const bool agree = slots_agree();
  if (!agree) {
    std::ostringstream msg;
    msg << "collectives: group " << group_str(g.devices) << " disagrees on the call: ";
    for (int q = 0; q < n; ++q) {
      const Slot& p = g.slots[size_t(q)];
      msg << (q ? "; " : "") << "device " << g.devices[size_t(q)] << " called " << kind_name(p.kind);
      if (p.kind != int(Kind::Barrier)) msg << " with " << p.count << " " << type_name(p.type) << " elements";
      if (p.kind == int(Kind::Broadcast)) msg << " from root rank " << p.root;
    }
    arrive(g, rank, kind);  // peers finish reading the slots before anyone posts again
    throw Error(msg.str());
  }

  if (count > 0 && kind != Kind::Barrier) move_rank(rank);
  arrive(g, rank, kind);
}

// Step 2 of a call on one rank: its share of the data movement between the posted buffers.
template <class T>
void ThreadCollectives::move(Kind kind, Group& g, int rank, T* out, int64_t count, int root) {
  const int n = int(g.devices.size());
  std::vector<const T*> ins(static_cast<size_t>(n));
  std::vector<T*> outs(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ins[size_t(r)] = static_cast<const T*>(g.slots[size_t(r)].in);
    outs[size_t(r)] = static_cast<T*>(g.slots[size_t(r)].out);
  }
  // Outputs far beyond the cache are written with non-temporal stores.
  const int64_t group_out_bytes = (kind == Kind::AllGather || kind == Kind::AllToAll ? n : 1) * n * count * int64_t(sizeof(T));
  const bool stream = group_out_bytes > kStreamBytes;
  alignas(64) T acc[kBlock<T>];
  switch (kind) {
    case Kind::AllReduce: {
      // Slice boundaries on whole cache lines, so ranks never write the same line of an out.
      constexpr int64_t line = 64 / int64_t(sizeof(T));
      const int64_t lines = (count + line - 1) / line;
      const int64_t begin = std::min(count, lines * rank / n * line);
      const int64_t end = std::min(count, lines * (rank + 1) / n * line);
      for (int64_t off = begin; off < end; off += kBlock<T>) {
        const int64_t len = std::min(kBlock<T>, end - off);
        sum_block(acc, ins.data(), n, off, len);
        // Only this rank reads this slice of any in, and it has just read it, so writing it now is
        // safe even where a device's out is its in.
        for (int r = 0; r < n; ++r) store(outs[size_t(r)] + off, acc, size_t(len) * sizeof(T), stream);
      }
      break;
    }
    case Kind::ReduceScatter: {
      for (int r = 0; r < n; ++r) ins[size_t(r)] += rank * count;
      for (int64_t off = 0; off < count; off += kBlock<T>) {
        const int64_t len = std::min(kBlock<T>, count - off);
        sum_block(acc, ins.data(), n, off, len);
        store(out + off, acc, size_t(len) * sizeof(T), stream);
      }
      break;
    }
    case Kind::AllGather: {
      for (int r = 0; r < n; ++r) {
        T* dst = out + r * count;
        if (dst != ins[size_t(r)]) store(dst, ins[size_t(r)], size_t(count) * sizeof(T), stream);
      }
      break;
    }
    case Kind::AllToAll: {
      for (int r = 0; r < n; ++r) store(out + r * count, ins[size_t(r)] + rank * count, size_t(count) * sizeof(T), stream);
      break;
    }
    case Kind::Broadcast: {
      if (out != ins[size_t(root)]) store(out, ins[size_t(root)], size_t(count) * sizeof(T), stream);
      break;
    }
    case Kind::Recv: {
      // The receiver copies; the sender waits for it at the second arrival.
      store(out, ins[size_t(1 - rank)], size_t(count) * sizeof(T), stream);
      break;
    }
    case Kind::Send:
    case Kind::Barrier:
      break;
  }
  if (stream) store_fence();  // non-temporal stores are visible to peers before we arrive
}

void ThreadCollectives::barrier(int device, const std::vector<int>& group) {
  run(Kind::Barrier, device, group, nullptr, nullptr, 0, DType::F32);
}
void ThreadCollectives::all_reduce(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                   DType t) {
  run(Kind::AllReduce, device, group, in, out, count, t);
}
void ThreadCollectives::all_gather(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                   DType t) {
  run(Kind::AllGather, device, group, in, out, count, t);
}
void ThreadCollectives::reduce_scatter(int device, const std::vector<int>& group, const void* in, void* out,
                                       int64_t count, DType t) {
  run(Kind::ReduceScatter, device, group, in, out, count, t);
}
void ThreadCollectives::all_to_all(int device, const std::vector<int>& group, const void* in, void* out, int64_t count,
                                   DType t) {
  run(Kind::AllToAll, device, group, in, out, count, t);
}
void ThreadCollectives::broadcast(int device, const std::vector<int>& group, int root, const void* in, void* out,
                                  int64_t count, DType t) {
  run(Kind::Broadcast, device, group, in, out, count, t, root);
}

namespace {
// A pair's group, lowest id first, so both ends find the same one.
std::vector<int> pair_group(int device, int peer, const char* kind) {
  if (device == peer)
    throw Error(std::string("collectives: ") + kind + " on device " + std::to_string(device) + " names itself as the peer");
  return {std::min(device, peer), std::max(device, peer)};
}
}  // namespace

void ThreadCollectives::send(int device, int peer, const void* buf, int64_t count, DType t) {
  run(Kind::Send, device, pair_group(device, peer, "send"), buf, nullptr, count, t);
}
void ThreadCollectives::recv(int device, int peer, void* buf, int64_t count, DType t) {
  run(Kind::Recv, device, pair_group(device, peer, "recv"), nullptr, buf, count, t);
}

}  // namespace shardlab::backends::cpu

namespace shardlab::backends::cpu {

namespace {
std::string message_str(int from, int to, int64_t tag) {
  return "message " + std::to_string(tag) + " from device " + std::to_string(from) + " to device " + std::to_string(to);
}
}  // namespace

void ThreadCollectives::post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) {
  if (device == peer || peer < 0 || peer >= num_devices_ || device < 0 || device >= num_devices_)
    throw Error("collectives: post on device " + std::to_string(device) + " names peer " + std::to_string(peer));
  if (count < 0) throw Error("collectives: post on device " + std::to_string(device) + " passed a negative count");
  if (aborted()) {
    std::lock_guard<std::mutex> lk(abort_mu_);
    throw Error("collectives: post on device " + std::to_string(device) + " aborted: " + abort_reason_);
  }
  Message m;
  m.count = count;
  m.type = t;
  m.data.resize(size_t(count) * dtype_size(t));
  if (count > 0) std::memcpy(m.data.data(), buf, m.data.size());
  {
    std::lock_guard<std::mutex> lk(mail_mu_);
    if (!mail_.emplace(std::make_tuple(device, peer, tag), std::move(m)).second)
      throw Error("collectives: " + message_str(device, peer, tag) + " was posted twice before it was taken");
  }
  mail_cv_.notify_all();
}

void ThreadCollectives::take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) {
  if (device == peer || peer < 0 || peer >= num_devices_ || device < 0 || device >= num_devices_)
    throw Error("collectives: take on device " + std::to_string(device) + " names peer " + std::to_string(peer));
  const auto key = std::make_tuple(peer, device, tag);
  Message m;
  {
    std::unique_lock<std::mutex> lk(mail_mu_);
    auto arrived = [&] { return mail_.count(key) > 0 || aborted(); };
    if (!arrived()) {
      // Sleep at once, lending the core where cores are budgeted: a stage waiting for its
      // neighbour is the pipeline's bubble.
      if (budget_) budget_->release();
      mail_cv_.wait(lk, arrived);
      lk.unlock();
      if (budget_) budget_->acquire();
      lk.lock();
    }
    auto it = mail_.find(key);
    if (it == mail_.end()) {
      lk.unlock();
      std::lock_guard<std::mutex> alk(abort_mu_);
      throw Error("collectives: take of " + message_str(peer, device, tag) + " aborted: " + abort_reason_);
    }
    m = std::move(it->second);
    mail_.erase(it);
  }
  if (m.count != count || m.type != t)
    throw Error("collectives: " + message_str(peer, device, tag) + " has " + std::to_string(m.count) + " " + dtype_name(m.type) +
                " elements; the receiver expects " + std::to_string(count) + " " + dtype_name(t));
  if (count > 0) std::memcpy(buf, m.data.data(), m.data.size());
}

}  // namespace shardlab::backends::cpu
