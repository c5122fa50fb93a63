// Run under mpirun by test_mpi_runs: every collective of the interface over processes (MpiCollectives)
// against the same collective in one process (ThreadCollectives), on groups inside one process,
// across processes and interleaved, float and double. Prints "ok" and exits 0 when every result is
// bitwise equal; else names the first difference and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/mpi/mpi_processes.h"
#include "engine/sharding/mesh.h"

using namespace shardlab;
using backends::Collectives;

namespace {

// A device's input: values that differ by device and index and do not add exactly.
template <class T>
std::vector<T> input_of(int device, int64_t n, int salt) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = T(std::sin(0.37 * double(i + 1) * double(device + 3 + salt)) * 1.7);
  return v;
}

// One case: each device of `devices` (the ones a transport runs here) calls `fn` with its own
// input, in its own thread; returns every device's output by device id.
template <class T>
std::vector<std::vector<T>> run_devices(Collectives& c, const std::vector<int>& devices, int num_devices, int64_t out_len,
                                        const std::function<void(Collectives&, int, std::vector<T>&)>& fn) {
  std::vector<std::vector<T>> out(static_cast<size_t>(num_devices), std::vector<T>(static_cast<size_t>(out_len)));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(num_devices));
  for (int d : devices)
    threads.emplace_back([&, d] {
      try {
        fn(c, d, out[size_t(d)]);
      } catch (const std::exception& e) {
        errors[size_t(d)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int d : devices)
    if (!errors[size_t(d)].empty()) throw std::runtime_error("device " + std::to_string(d) + ": " + errors[size_t(d)]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  auto processes = backends::mpi::join_mpi_run(&argc, &argv);
  if (!processes) {
    std::fprintf(stderr, "collectives_check: run me under mpirun with 2 or more processes\n");
    return 2;
  }
  const int local = 2, n = local * processes->size(), rank = processes->rank();
  std::vector<int> mine, all;
  for (int d = 0; d < n; ++d) all.push_back(d);
  for (int d = rank * local; d < (rank + 1) * local; ++d) mine.push_back(d);
  auto over = processes->device_collectives(n, local);
  backends::cpu::ThreadCollectives one(n);
  // Groups: along each axis of a (process, local) mesh and over all of it.
  const sharding::Mesh mesh({{"proc", processes->size()}, {"dev", local}});
  const int64_t count = 1000;
  int checked = 0;
  try {
    for (const std::vector<std::string>& axes :
         std::vector<std::vector<std::string>>{{"proc"}, {"dev"}, {"proc", "dev"}, {"dev", "proc"}}) {
      // 6-8: all_reduce, all_gather and reduce_scatter in place (the forms the interface allows).
      for (int kind = 0; kind < 9; ++kind) {
        const bool wide_in = kind == 2 || kind == 3;  // reduce_scatter, all_to_all: n chunks in
        const bool wide_out = kind == 1 || kind == 3;  // all_gather, all_to_all: n chunks out
        auto body = [&](Collectives& c, int d, std::vector<double>& out) {
          const std::vector<int> g = mesh.group(d, axes);
          const int64_t gs = int64_t(g.size());
          std::vector<double> in = input_of<double>(d, wide_in ? gs * count : count, kind);
          std::vector<double> o(size_t(wide_out ? gs * count : count));
          switch (kind) {
            case 0: c.all_reduce(d, g, in.data(), o.data(), count); break;
            case 1: c.all_gather(d, g, in.data(), o.data(), count); break;
            case 2: c.reduce_scatter(d, g, in.data(), o.data(), count); break;
            case 3: c.all_to_all(d, g, in.data(), o.data(), count); break;
            case 4: c.broadcast(d, g, int(gs) - 1, in.data(), o.data(), count); break;
            case 5: c.barrier(d, g); break;
          }
          if (kind >= 6) {
            const int64_t rank = int64_t(std::find(g.begin(), g.end(), d) - g.begin());
            std::vector<double> buf = input_of<double>(d, kind == 6 ? count : gs * count, kind);
            if (kind == 6) c.all_reduce(d, g, buf.data(), buf.data(), count);
            if (kind == 7) {
              std::copy_n(input_of<double>(d, count, kind).begin(), count, buf.begin() + rank * count);
              c.all_gather(d, g, buf.data() + rank * count, buf.data(), count);
            }
            if (kind == 8) {
              c.reduce_scatter(d, g, buf.data(), buf.data() + rank * count, count);
              buf = std::vector<double>(buf.begin() + rank * count, buf.begin() + (rank + 1) * count);
            }
            o = buf;
          }
          out.assign(o.begin(), o.end());
        };
        auto bodyf = [&](Collectives& c, int d, std::vector<float>& out) {
          const std::vector<int> g = mesh.group(d, axes);
          std::vector<float> in = input_of<float>(d, count, kind);
          std::vector<float> o(static_cast<size_t>(count));
          c.all_reduce(d, g, in.data(), o.data(), count);
          out = o;
        };
        const int64_t len = n * count;
        auto want = run_devices<double>(one, all, n, len, body);
        auto got = run_devices<double>(*over, mine, n, len, body);
        for (int d : mine)
          if (want[size_t(d)] != got[size_t(d)]) {
            std::fprintf(stderr, "collectives_check: kind %d over %s differs on device %d\n", kind, axes[0].c_str(), d);
            processes->abort(1);
          }
        auto wantf = run_devices<float>(one, all, n, len, bodyf);
        auto gotf = run_devices<float>(*over, mine, n, len, bodyf);
        for (int d : mine)
          if (wantf[size_t(d)] != gotf[size_t(d)]) {
            std::fprintf(stderr, "collectives_check: float all_reduce over %s differs on device %d\n", axes[0].c_str(), d);
            processes->abort(1);
          }
        ++checked;
      }
    }
    // Point to point across processes: the last device of each process sends to the first of the next.
    std::vector<double> got(static_cast<size_t>(count)), want;
    const int from = rank * local + local - 1, to = ((rank + 1) % processes->size()) * local;
    const int prev = ((rank + processes->size() - 1) % processes->size()) * local + local - 1;
    std::thread sender([&] {
      std::vector<double> buf = input_of<double>(from, count, 9);
      over->send(from, to, buf.data(), count);
    });
    over->recv(rank * local, prev, got.data(), count);
    sender.join();
    want = input_of<double>(prev, count, 9);
    if (got != want) {
      std::fprintf(stderr, "collectives_check: send/recv from device %d differs\n", prev);
      processes->abort(1);
    }
    // Buffered messages (pipeline stages' post/take): every device posts three to every other device,
    // within its process and across, before any is taken; each is then taken in another order than
    // it was posted (last tag first, last peer first), as 1F1B's stages may.
    run_devices<float>(*over, mine, n, 1, [&](Collectives& c, int d, std::vector<float>&) {
      for (int peer = 0; peer < n; ++peer)
        for (int64_t tag = 0; tag < 3 && peer != d; ++tag) {
          const std::vector<float> msg = input_of<float>(d * 100 + peer, 10 + tag, int(tag));
          c.post(d, peer, tag, msg.data(), int64_t(msg.size()));
        }
      for (int peer = n - 1; peer >= 0; --peer)
        for (int64_t tag = 2; tag >= 0 && peer != d; --tag) {
          std::vector<float> msg(size_t(10 + tag));
          c.take(d, peer, tag, msg.data(), int64_t(msg.size()));
          if (msg != input_of<float>(peer * 100 + d, 10 + tag, int(tag)))
            throw std::runtime_error("message " + std::to_string(tag) + " from device " + std::to_string(peer) + " differs");
        }
    });
    processes->barrier();
    if (rank == 0) std::printf("ok: buffered messages between every pair of %d devices, taken out of order\n", n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_check: process %d: %s\n", rank, e.what());
    processes->abort(1);
  }
  processes->barrier();
  if (rank == 0) std::printf("ok: %d collective cases bitwise equal over %d processes of %d devices\n", checked, processes->size(), local);
  return 0;
}
