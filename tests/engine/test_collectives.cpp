// ThreadCollectives: the shared-memory collectives among the CPU backend's virtual devices, one
// std::thread per device, against serial references computed in the same (rank) order, so every
// comparison is bitwise. Every multi-device run has a watchdog that aborts the collectives when the
// devices have not finished in time, so a deadlock fails the test instead of hanging CI.
#include <QtTest>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cpu/thread_budget.h"
#include "engine/util/error.h"
#include "test_support.h"

using shardlab::Error;
using shardlab::backends::cpu::ThreadCollectives;
using namespace std::chrono_literals;

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll };

const char* op_name(Op op) {
  switch (op) {
    case Op::AllReduce: return "all_reduce";
    case Op::AllGather: return "all_gather";
    case Op::ReduceScatter: return "reduce_scatter";
    case Op::AllToAll: return "all_to_all";
  }
  return "?";
}

// Runs fn(rank) for every rank on its own thread; returns each rank's Error message ("" if none).
// If the ranks are not all done after `limit`, aborts the collectives, so blocked ranks throw.
// Polls `done` until it holds or `limit` passes; whether it held.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::vector<std::string> run_devices(ThreadCollectives& coll, int ranks, const std::function<void(int)>& fn,
                                     std::chrono::milliseconds limit = 60s) {
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lk(mu);
    if (!cv.wait_for(lk, limit, [&] { return done; })) coll.abort("watchdog: the devices did not finish in time");
  });
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const Error& e) {
        errors[size_t(r)] = e.what();
        if (errors[size_t(r)].empty()) errors[size_t(r)] = "(empty Error)";
      } catch (const std::exception& e) {
        errors[size_t(r)] = std::string("non-Error exception: ") + e.what();
      }
    });
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lk(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  return errors;
}

QString first_error(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) return QString("rank %1: %2").arg(r).arg(QString::fromStdString(errors[r]));
  return {};
}

// Device ids of a group of n among n + 2 devices, deliberately not in id order: rank order is the
// group's order, so rank 0 is device n + 1 and rank n - 1 is device 2.
std::vector<int> make_group(int n) {
  std::vector<int> g;
  for (int i = 0; i < n; ++i) g.push_back(n + 1 - i);
  return g;
}

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Values spread over 24 binary orders of magnitude with both signs, so sums depend on their order.
template <class T>
std::vector<T> make_input(uint64_t seed, int rank, int64_t elems) {
  std::vector<T> v(static_cast<size_t>(elems));
  const uint64_t base = mix(seed * 1000003 + uint64_t(rank));
  for (int64_t i = 0; i < elems; ++i) {
    const uint64_t h = mix(base + uint64_t(i));
    const double m = double(int64_t(h >> 11) - (int64_t(1) << 52)) / double(int64_t(1) << 52);  // [-1, 1)
    v[size_t(i)] = T(std::ldexp(m, int((h & 0xff) % 25) - 12));
  }
  return v;
}

// sum[i] = ((x_0[i] + x_1[i]) + x_2[i]) + ... over ranks, `count` elements from offset `at`.
template <class T>
std::vector<T> serial_sum(const std::vector<std::vector<T>>& in, int64_t at, int64_t count) {
  std::vector<T> sum(in[0].begin() + at, in[0].begin() + at + count);
  for (size_t r = 1; r < in.size(); ++r)
    for (int64_t i = 0; i < count; ++i) sum[size_t(i)] += in[r][size_t(at + i)];
  return sum;
}

template <class T>
QString compare_bits(const T* got, const std::vector<T>& want, const QString& what) {
  if (want.empty() || std::memcmp(got, want.data(), want.size() * sizeof(T)) == 0) return {};
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return QString("%1: element %2 of %3 is %4, want %5")
          .arg(what)
          .arg(i)
          .arg(want.size())
          .arg(double(got[i]), 0, 'g', 17)
          .arg(double(want[i]), 0, 'g', 17);
  return {};
}

// The collective's expected output for each rank, computed serially.
template <class T>
std::vector<std::vector<T>> reference(Op op, const std::vector<std::vector<T>>& in, int64_t count) {
  const int n = int(in.size());
  std::vector<std::vector<T>> want(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    switch (op) {
      case Op::AllReduce:
        want[size_t(r)] = r == 0 ? serial_sum(in, 0, count) : want[0];
        break;
      case Op::AllGather:
        for (int k = 0; k < n; ++k) want[size_t(r)].insert(want[size_t(r)].end(), in[size_t(k)].begin(), in[size_t(k)].end());
        break;
      case Op::ReduceScatter:
        want[size_t(r)] = serial_sum(in, r * count, count);
        break;
      case Op::AllToAll:
        for (int k = 0; k < n; ++k)
          want[size_t(r)].insert(want[size_t(r)].end(), in[size_t(k)].begin() + r * count,
                                 in[size_t(k)].begin() + (r + 1) * count);
        break;
    }
  }
  return want;
}

// Runs `op` over a group of n devices (one thread each) and compares every rank's output with the
// serial reference. in_place: all_reduce in == out, all_gather in == out + rank * count,
// reduce_scatter out == in + rank * count, all_to_all in == out. `shift` moves every buffer that many
// elements past the start of its allocation (to test unaligned buffers).
template <class T>
QString check_collective(Op op, int n, int64_t count, bool in_place, int shift = 0, uint64_t seed = 1) {
  ThreadCollectives coll(n + 2);
  const std::vector<int> group = make_group(n);
  const int64_t in_elems = op == Op::ReduceScatter || op == Op::AllToAll ? n * count : count;
  const int64_t out_elems = op == Op::AllGather || op == Op::AllToAll ? n * count : count;
  std::vector<std::vector<T>> in(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) in[size_t(r)] = make_input<T>(seed, r, in_elems);
  const std::vector<std::vector<T>> want = reference(op, in, count);
  if (shift)
    for (auto& v : in) v.insert(v.begin(), size_t(shift), T(0));

  // Each rank's buffer; for in-place calls the input is laid into it where the op reads it.
  std::vector<std::vector<T>> buf(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (in_place) {
      buf[size_t(r)].assign(size_t(shift + std::max(in_elems, out_elems)), T(-7));
      const int64_t at = shift + (op == Op::AllGather ? r * count : 0);
      std::copy(in[size_t(r)].begin() + shift, in[size_t(r)].end(), buf[size_t(r)].begin() + at);
    } else {
      out[size_t(r)].assign(size_t(shift + out_elems), T(-7));
    }
  }
  const auto errors = run_devices(coll, n, [&](int r) {
    const int d = group[size_t(r)];
    T* b = buf[size_t(r)].data() + shift;
    const T* x = in_place ? (op == Op::AllGather ? b + r * count : b) : in[size_t(r)].data() + shift;
    T* y = in_place ? (op == Op::ReduceScatter ? b + r * count : b) : out[size_t(r)].data() + shift;
    switch (op) {
      case Op::AllReduce: coll.all_reduce(d, group, x, y, count); break;
      case Op::AllGather: coll.all_gather(d, group, x, y, count); break;
      case Op::ReduceScatter: coll.reduce_scatter(d, group, x, y, count); break;
      case Op::AllToAll: coll.all_to_all(d, group, x, y, count); break;
    }
  });
  if (QString e = first_error(errors); !e.isEmpty()) return e;
  for (int r = 0; r < n; ++r) {
    const T* got = shift + (in_place ? buf[size_t(r)].data() + (op == Op::ReduceScatter ? r * count : 0) : out[size_t(r)].data());
    QString e = compare_bits(got, want[size_t(r)], QString("%1 rank %2 (device %3)").arg(op_name(op)).arg(r).arg(group[size_t(r)]));
    if (!e.isEmpty()) return e;
  }
  return {};
}

void add_rows(Op op) {
  QTest::addColumn<int>("n");
  QTest::addColumn<qint64>("count");
  QTest::addColumn<bool>("dbl");
  for (bool dbl : {false, true})
    for (int n : {1, 2, 3, 4, 8}) {
      // About a million elements per device buffer: for the ops whose buffers hold n chunks, the
      // chunk is a million / n (kept odd).
      const qint64 big = op == Op::AllReduce ? 1000003 : (1000003 / n) | 1;
      for (qint64 count : {qint64(0), qint64(1), qint64(1001), big})
        QTest::addRow("%s n=%d count=%lld", dbl ? "double" : "float", n, count) << n << count << dbl;
    }
}

void run_row(Op op, bool in_place) {
  QFETCH(int, n);
  QFETCH(qint64, count);
  QFETCH(bool, dbl);
  const QString e = dbl ? check_collective<double>(op, n, count, in_place) : check_collective<float>(op, n, count, in_place);
  QVERIFY2(e.isEmpty(), qPrintable(e));
}

template <class Fn>
QString expect_error(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& needle : needles)
      if (what.find(needle) == std::string::npos)
        return QString("message \"%1\" does not mention \"%2\"").arg(what.c_str(), needle.c_str());
    return {};
  }
  return "no Error thrown";
}

}  // namespace

class TestCollectives : public QObject {
  Q_OBJECT

 private slots:
  // ---- results against the serial reference: groups of 1, 2, 3, 4, 8; float and double;
  // ---- counts 0, 1, 1001 and about a million.
  void allReduceMatchesSerial_data() { add_rows(Op::AllReduce); }
  void allReduceMatchesSerial() { run_row(Op::AllReduce, false); }
  void allGatherMatchesSerial_data() { add_rows(Op::AllGather); }
  void allGatherMatchesSerial() { run_row(Op::AllGather, false); }
  void reduceScatterMatchesSerial_data() { add_rows(Op::ReduceScatter); }
  void reduceScatterMatchesSerial() { run_row(Op::ReduceScatter, false); }
  void allToAllMatchesSerial_data() { add_rows(Op::AllToAll); }
  void allToAllMatchesSerial() { run_row(Op::AllToAll, false); }

  // ---- in-place forms.
  void allReduceInPlace_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<qint64>("count");
    QTest::addColumn<bool>("dbl");
    for (bool dbl : {false, true})
      for (int n : {2, 3, 8})
        for (qint64 count : {qint64(1), qint64(1001), qint64(1000003)})
          QTest::addRow("%s n=%d count=%lld", dbl ? "double" : "float", n, count) << n << count << dbl;
  }
  void allReduceInPlace() { run_row(Op::AllReduce, true); }

  void otherCollectivesInPlace() {
    for (Op op : {Op::AllGather, Op::ReduceScatter, Op::AllToAll})
      for (int n : {2, 3, 8})
        for (int64_t count : {1, 1001, 65537}) {
          const QString e = check_collective<float>(op, n, count, true);
          QVERIFY2(e.isEmpty(), qPrintable(QString("n=%1 count=%2: %3").arg(n).arg(count).arg(e)));
        }
  }

  // Outputs larger than 32 MiB over the group go through non-temporal stores; buffers one element
  // off alignment exercise their unaligned head and tail.
  void largeUnalignedBuffers() {
    struct Case {
      Op op;
      int n;
      int64_t count;
      bool in_place;
    };
    for (const Case& c : {Case{Op::AllReduce, 8, 1100001, false}, Case{Op::AllReduce, 8, 1100001, true},
                          Case{Op::AllGather, 8, 140001, false}, Case{Op::AllToAll, 8, 140001, false},
                          Case{Op::ReduceScatter, 2, 4200001, false}}) {
      const QString e = check_collective<float>(c.op, c.n, c.count, c.in_place, 1);
      QVERIFY2(e.isEmpty(), qPrintable(QString("%1 n=%2 count=%3: %4").arg(op_name(c.op)).arg(c.n).arg(c.count).arg(e)));
    }
  }

  // ---- order and determinism.
  // In float, (1e8 + 1) - 1e8 == 0 but (1e8 - 1e8) + 1 == 1: the sum follows the group's rank order,
  // not device ids or thread timing.
  void reductionFollowsRankOrder() {
    ThreadCollectives coll(8);
    auto value = [](int device) { return device == 5 ? 1e8f : device == 2 ? 1.0f : -1e8f; };
    for (auto [group, want] : {std::pair{std::vector<int>{5, 2, 7}, 0.0f}, std::pair{std::vector<int>{5, 7, 2}, 1.0f}}) {
      std::vector<float> ar(3), rs(3);
      const auto errors = run_devices(coll, 3, [&](int r) {
        const int d = group[size_t(r)];
        const float x = value(d);
        const float chunks[3] = {x, x, x};
        coll.all_reduce(d, group, &x, &ar[size_t(r)], 1);
        coll.reduce_scatter(d, group, chunks, &rs[size_t(r)], 1);
      });
      QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
      for (int r = 0; r < 3; ++r) {
        QCOMPARE(ar[size_t(r)], want);
        QCOMPARE(rs[size_t(r)], want);
      }
    }
  }

  // 20 runs with random sleeps and yields between calls: every device's result is bitwise the same
  // as every other device's and as the first run's.
  void deterministicAcrossDevicesAndRuns() {
    constexpr int n = 8, runs = 20;
    constexpr int64_t count = 100003;
    ThreadCollectives coll(n);
    std::vector<int> group(n);
    for (int i = 0; i < n; ++i) group[size_t(i)] = i;
    std::vector<std::vector<float>> in(n);
    for (int r = 0; r < n; ++r) in[size_t(r)] = make_input<float>(7, r, n * count);
    std::vector<float> first_ar, first_rs;
    for (int run = 0; run < runs; ++run) {
      std::vector<std::vector<float>> ar(n, std::vector<float>(n * count)), rs(n, std::vector<float>(count));
      const auto errors = run_devices(coll, n, [&](int r) {
        std::mt19937 rng(uint32_t(run * 131 + r));
        auto jitter = [&] {
          switch (rng() % 4) {
            case 0: std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000)); break;
            case 1: std::this_thread::yield(); break;
            default: break;
          }
        };
        jitter();
        coll.all_reduce(r, group, in[size_t(r)].data(), ar[size_t(r)].data(), n * count);
        jitter();
        coll.reduce_scatter(r, group, in[size_t(r)].data(), rs[size_t(r)].data(), count);
        jitter();
      });
      QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
      if (run == 0) {
        first_ar = ar[0];
        // reduce_scatter's chunks together are the all_reduce of the same inputs.
        for (int r = 0; r < n; ++r) first_rs.insert(first_rs.end(), rs[size_t(r)].begin(), rs[size_t(r)].end());
        QVERIFY2(first_rs == first_ar, "reduce_scatter chunks differ from all_reduce");
      }
      for (int r = 0; r < n; ++r) {
        QString e = compare_bits(ar[size_t(r)].data(), first_ar, QString("run %1 all_reduce rank %2").arg(run).arg(r));
        QVERIFY2(e.isEmpty(), qPrintable(e));
        std::vector<float> chunk(first_rs.begin() + r * count, first_rs.begin() + (r + 1) * count);
        e = compare_bits(rs[size_t(r)].data(), chunk, QString("run %1 reduce_scatter rank %2").arg(run).arg(r));
        QVERIFY2(e.isEmpty(), qPrintable(e));
      }
    }
  }

  // ---- groups of a mesh.
  // A data=2 x model=4 mesh (device = row * 4 + col): every device all_reduces over its row, then
  // all_gathers over its column, then all_reduces over its column, ten times; rows (and then columns)
  // run concurrently and must not interfere.
  void meshRowsThenColumns() {
    constexpr int rows = 2, cols = 4, n = rows * cols;
    constexpr int64_t count = 30011;
    ThreadCollectives coll(n);
    auto row_group = [&](int d) {
      std::vector<int> g;
      for (int c = 0; c < cols; ++c) g.push_back(d / cols * cols + c);
      return g;
    };
    auto col_group = [&](int d) {
      std::vector<int> g;
      for (int r = 0; r < rows; ++r) g.push_back(r * cols + d % cols);
      return g;
    };
    for (int iter = 0; iter < 10; ++iter) {
      std::vector<std::vector<double>> in(n);
      for (int d = 0; d < n; ++d) in[size_t(d)] = make_input<double>(100 + iter, d, count);
      // Serial: row sums in column order, then column sums of those in row order.
      std::vector<std::vector<double>> row_sum(rows), gathered(cols), total(cols);
      for (int r = 0; r < rows; ++r) {
        std::vector<std::vector<double>> members;
        for (int c = 0; c < cols; ++c) members.push_back(in[size_t(r * cols + c)]);
        row_sum[size_t(r)] = serial_sum(members, 0, count);
      }
      for (int c = 0; c < cols; ++c) {
        for (int r = 0; r < rows; ++r) gathered[size_t(c)].insert(gathered[size_t(c)].end(), row_sum[size_t(r)].begin(), row_sum[size_t(r)].end());
        total[size_t(c)] = serial_sum(row_sum, 0, count);
      }
      std::vector<std::vector<double>> got_gather(n, std::vector<double>(rows * count)), got(n, std::vector<double>(count));
      const auto errors = run_devices(coll, n, [&](int d) {
        std::vector<double> x = in[size_t(d)];
        coll.all_reduce(d, row_group(d), x.data(), x.data(), count);
        coll.all_gather(d, col_group(d), x.data(), got_gather[size_t(d)].data(), count);
        coll.all_reduce(d, col_group(d), x.data(), got[size_t(d)].data(), count);
      });
      QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
      for (int d = 0; d < n; ++d) {
        QString e = compare_bits(got_gather[size_t(d)].data(), gathered[size_t(d % cols)], QString("iter %1 gather device %2").arg(iter).arg(d));
        QVERIFY2(e.isEmpty(), qPrintable(e));
        e = compare_bits(got[size_t(d)].data(), total[size_t(d % cols)], QString("iter %1 device %2").arg(iter).arg(d));
        QVERIFY2(e.isEmpty(), qPrintable(e));
      }
    }
  }

  // ---- many more threads than cores.
  void sixtyFourDevices() {
    constexpr int n = 64;
    constexpr int64_t count = 4099;
    ThreadCollectives coll(n);
    std::vector<int> group(n);
    for (int i = 0; i < n; ++i) group[size_t(i)] = n - 1 - i;
    std::vector<std::vector<float>> in(n);
    for (int r = 0; r < n; ++r) in[size_t(r)] = make_input<float>(3, r, count);
    const auto want_sum = reference(Op::AllReduce, in, count)[0];
    const auto want_gather = reference(Op::AllGather, in, count)[0];
    std::vector<std::vector<float>> sum(n, std::vector<float>(count)), gather(n, std::vector<float>(n * count));
    const auto errors = run_devices(coll, n, [&](int r) {
      const int d = group[size_t(r)];
      for (int iter = 0; iter < 5; ++iter) {
        coll.barrier(d, group);
        coll.all_reduce(d, group, in[size_t(r)].data(), sum[size_t(r)].data(), count);
        coll.all_gather(d, group, in[size_t(r)].data(), gather[size_t(r)].data(), count);
      }
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    for (int r = 0; r < n; ++r) {
      QString e = compare_bits(sum[size_t(r)].data(), want_sum, QString("all_reduce rank %1").arg(r));
      QVERIFY2(e.isEmpty(), qPrintable(e));
      e = compare_bits(gather[size_t(r)].data(), want_gather, QString("all_gather rank %1").arg(r));
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
  }

  // ---- broadcast and point to point (the interface's other calls).
  // Every rank's out gets the root's in, for every root, in place at the root too.
  void broadcastFromEveryRoot() {
    constexpr int n = 5;
    constexpr int64_t count = 1003;
    ThreadCollectives coll(n + 1);
    const std::vector<int> group{3, 0, 5, 1, 2};  // not in id order: the root is a rank
    for (int root = 0; root < n; ++root) {
      std::vector<std::vector<double>> out(n, std::vector<double>(count, -1.0));
      const auto errors = run_devices(coll, n, [&](int r) {
        std::vector<double> in(count);
        for (int64_t i = 0; i < count; ++i) in[size_t(i)] = double(r * 100000 + i);
        double* dst = out[size_t(r)].data();
        if (r == root) std::copy(in.begin(), in.end(), dst);  // the root broadcasts in place
        coll.broadcast(group[size_t(r)], group, root, r == root ? dst : nullptr, dst, count);
      });
      QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
      for (int r = 0; r < n; ++r)
        for (int64_t i = 0; i < count; i += 97) QCOMPARE(out[size_t(r)][size_t(i)], double(root * 100000 + i));
    }
  }

  // Peers that name different roots get an error on every device, not a wrong result.
  void broadcastRootsMustAgree() {
    ThreadCollectives coll(2);
    const std::vector<int> group{0, 1};
    const auto errors = run_devices(coll, 2, [&](int r) {
      float x[4] = {1, 2, 3, 4};
      coll.broadcast(r, group, r, x, x, 4);
    });
    for (const auto& e : errors) QVERIFY2(e.find("from root rank") != std::string::npos, e.c_str());
  }

  // A ring of sends and receives, as pipeline stages pass activations on: each device sends to the
  // next and receives from the previous (even ranks send first, so the ring cannot deadlock).
  void sendRecvAroundARing() {
    constexpr int n = 6;
    constexpr int64_t count = 4099;
    ThreadCollectives coll(n);
    std::vector<std::vector<float>> got(n, std::vector<float>(count, -1.f));
    const auto errors = run_devices(coll, n, [&](int r) {
      std::vector<float> mine(count);
      for (int64_t i = 0; i < count; ++i) mine[size_t(i)] = float(r) + float(i) * 1e-3f;
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      if (r % 2 == 0) {
        coll.send(r, next, mine.data(), count);
        coll.recv(r, prev, got[size_t(r)].data(), count);
      } else {
        coll.recv(r, prev, got[size_t(r)].data(), count);
        coll.send(r, next, mine.data(), count);
      }
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    for (int r = 0; r < n; ++r) {
      const int prev = (r + n - 1) % n;
      for (int64_t i = 0; i < count; i += 101) QCOMPARE(got[size_t(r)][size_t(i)], float(prev) + float(i) * 1e-3f);
    }
  }

  // Two sends, or a send whose receiver expects another count, fail on both ends; so does a send to itself.
  void sendRecvMismatchesAreErrors() {
    ThreadCollectives coll(2);
    float buf[8] = {};
    auto errors = run_devices(coll, 2, [&](int r) { coll.send(r, 1 - r, buf, 8); });
    for (const auto& e : errors) QVERIFY2(e.find("disagrees") != std::string::npos, e.c_str());
    ThreadCollectives coll2(2);
    errors = run_devices(coll2, 2, [&](int r) {
      if (r == 0) coll2.send(0, 1, buf, 8);
      else coll2.recv(1, 0, buf, 4);
    });
    for (const auto& e : errors) QVERIFY2(e.find("disagrees") != std::string::npos, e.c_str());
    const auto self = run_devices(coll2, 1, [&](int) { coll2.send(0, 0, buf, 8); });
    QVERIFY2(self[0].find("names itself") != std::string::npos, self[0].c_str());
  }

  // Buffered messages between pipeline stages: both neighbours post before either takes (1F1B's
  // steady state, which rendezvous sends would deadlock), messages are matched by tag whatever the
  // order they are taken in, a take waits for its post, and a count the receiver does not expect is
  // an error naming the message.
  void postedMessagesNeitherSideWaitsFor() {
    ThreadCollectives coll(2);
    std::vector<std::vector<float>> got(2, std::vector<float>(3, -1.f)), first(2, std::vector<float>(3, -1.f));
    auto errors = run_devices(coll, 2, [&](int r) {
      const float a[3] = {float(r), 1, 2}, b[3] = {float(r), 10, 20};
      coll.post(r, 1 - r, 7, a, 3);
      coll.post(r, 1 - r, 8, b, 3);
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // device 0 takes before 1 posts more
      coll.take(r, 1 - r, 8, got[size_t(r)].data(), 3);  // the later tag first
      coll.take(r, 1 - r, 7, first[size_t(r)].data(), 3);
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    QCOMPARE(got[0], (std::vector<float>{1, 10, 20}));
    QCOMPARE(got[1], (std::vector<float>{0, 10, 20}));
    QCOMPARE(first[0], (std::vector<float>{1, 1, 2}));
    errors = run_devices(coll, 2, [&](int r) {
      float x[4] = {};
      if (r == 0) coll.post(0, 1, 9, x, 4);
      else coll.take(1, 0, 9, x, 2);
    });
    QVERIFY2(errors[1].find("message 9 from device 0 to device 1") != std::string::npos, errors[1].c_str());
  }

  // A take whose post never comes throws once the collectives abort, instead of hanging.
  void aTakeWithoutItsPostIsAborted() {
    ThreadCollectives coll(2);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      coll.abort("stage 0 failed");
    });
    float x[2];
    const QString e = shardlab::testing::error_of([&] { coll.take(1, 0, 3, x, 2); });
    stopper.join();
    VERIFY_CONTAINS(e, "stage 0 failed");
  }

  // With more devices than cores, waiting devices lend their core to a ThreadBudget: results are the
  // same as without one, and no more devices than cores hold one at a time.
  // Both sizes: 1001 floats a device finish in one phase (the last device to arrive moves all of
  // them), 50000 in two.
  void budgetedDevicesGiveTheSameResults_data() {
    QTest::addColumn<qint64>("count");
    QTest::addRow("one phase, 1001") << qint64(1001);
    QTest::addRow("two phases, 50000") << qint64(50000);
  }
  void budgetedDevicesGiveTheSameResults() {
    constexpr int n = 8;
    QFETCH(qint64, count);
    ThreadCollectives coll(n);
    shardlab::backends::cpu::ThreadBudget budget(2);
    coll.share_cores(&budget);
    std::atomic<int> holding{0}, most{0};
    std::vector<int> group(n);
    for (int i = 0; i < n; ++i) group[size_t(i)] = i;
    std::vector<std::vector<float>> data(n, std::vector<float>(count));
    const auto errors = run_devices(coll, n, [&](int r) {
      budget.acquire();
      for (int round = 0; round < 5; ++round) {
        const int now = ++holding;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        for (int64_t i = 0; i < count; ++i) data[size_t(r)][size_t(i)] = float(r + round);
        --holding;
        coll.all_reduce(r, group, data[size_t(r)].data(), data[size_t(r)].data(), count);
      }
      budget.release();
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    for (int r = 0; r < n; ++r) QCOMPARE(data[size_t(r)][count - 1], float(28 + 8 * 4));  // sum of r + 4 over r < 8
    QVERIFY2(most.load() <= 2, qPrintable(QString("%1 devices computed at once with 2 cores").arg(most.load())));
  }

  // A core handed back goes to a device of that core: with core 0 held, a device of core 1 starts
  // at once and one of core 0 waits for exactly that core.
  void aFreedCoreGoesToADeviceOfItsOwnCore() {
    shardlab::backends::cpu::ThreadBudget budget(2);
    std::atomic<bool> a_holds{false}, a_go{false}, b_got{false}, c_got{false};
    std::thread a([&] {
      budget.bind(0);
      budget.acquire();
      a_holds = true;
      while (!a_go) std::this_thread::sleep_for(1ms);
      budget.release();
    });
    auto other = [&](int core, std::atomic<bool>& got) {
      budget.bind(core);
      while (!a_holds) std::this_thread::sleep_for(1ms);
      budget.acquire();
      got = true;
      budget.release();
    };
    std::thread b(other, 0, std::ref(b_got)), c(other, 1, std::ref(c_got));
    const bool c_ran = wait_until([&] { return c_got.load(); }, 10s);
    std::this_thread::sleep_for(50ms);
    const bool b_early = b_got;
    a_go = true;
    const bool b_ran = wait_until([&] { return b_got.load(); }, 10s);
    a.join();
    b.join();
    c.join();
    QVERIFY2(c_ran, "a device of core 1 waited while only core 0 was held");
    QVERIFY2(!b_early, "a device of core 0 ran while another held core 0");
    QVERIFY(b_ran);
  }

  // release_until hands the core over at once, and takes it back only once the condition holds
  // (announced by wake()) and the core is free again.
  void releaseUntilSleepsTillReadyAndTheCoreIsFree() {
    shardlab::backends::cpu::ThreadBudget budget(1);
    std::atomic<bool> ready{false}, woke{false}, y_holds{false}, y_go{false};
    std::thread w([&] {
      budget.bind(0);
      budget.acquire();
      budget.release_until([&] { return ready.load(); });
      woke = true;
      budget.release();
    });
    std::thread y([&] {
      budget.bind(0);
      std::this_thread::sleep_for(20ms);
      budget.acquire();
      y_holds = true;
      while (!y_go) std::this_thread::sleep_for(1ms);
      budget.release();
    });
    const bool y_ran = wait_until([&] { return y_holds.load(); }, 10s);
    ready = true;
    budget.wake();
    std::this_thread::sleep_for(50ms);
    const bool woke_while_held = woke;
    y_go = true;
    const bool w_ran = wait_until([&] { return woke.load(); }, 10s);
    w.join();
    y.join();
    QVERIFY2(y_ran, "the core was not handed over while its holder slept");
    QVERIFY2(!woke_while_held, "a sleeper woke while another device held the only core");
    QVERIFY2(w_ran, "a ready sleeper was not woken once the core came free");
  }

  // No device leaves a barrier before every device of the group has reached it.
  void barrierWaitsForTheWholeGroup() {
    constexpr int n = 16, rounds = 50;
    ThreadCollectives coll(n);
    std::vector<int> group(n);
    for (int i = 0; i < n; ++i) group[size_t(i)] = i;
    std::atomic<int> arrived{0};
    std::atomic<int> violations{0};
    const auto errors = run_devices(coll, n, [&](int r) {
      for (int round = 1; round <= rounds; ++round) {
        if (r == round % n) std::this_thread::sleep_for(200us);
        arrived.fetch_add(1);
        coll.barrier(r, group);
        if (arrived.load() < round * n) violations.fetch_add(1);
        coll.barrier(r, group);
      }
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    QCOMPARE(violations.load(), 0);
  }

  // ---- abort.
  // A device blocked in a collective whose peer never arrives throws instead of hanging. If abort
  // failed to wake it, the test fails after 10 s (the blocked thread is then left behind).
  void abortWakesBlockedDevice() {
    auto coll = std::make_shared<ThreadCollectives>(4);
    auto result = std::make_shared<std::promise<std::string>>();
    auto future = result->get_future();
    std::thread device([coll, result] {
      std::vector<float> x(1000, 1.0f);
      try {
        coll->all_reduce(0, {0, 1, 2}, x.data(), x.data(), 1000);
        result->set_value("all_reduce returned without its peers");
      } catch (const Error& e) {
        result->set_value(e.what());
      }
    });
    std::thread peer([coll] {  // arrives, but the third device never does
      try {
        std::vector<float> x(1000, 1.0f);
        coll->all_reduce(1, {0, 1, 2}, x.data(), x.data(), 1000);
      } catch (const Error&) {
      }
    });
    QVERIFY2(future.wait_for(100ms) == std::future_status::timeout, "all_reduce returned without its peers");
    coll->abort("device 2 failed: out of memory");
    if (future.wait_for(10s) != std::future_status::ready) {
      device.detach();
      peer.detach();
      QFAIL("abort() did not wake the blocked device within 10 s");
    }
    device.join();
    peer.join();
    const std::string what = future.get();
    QVERIFY2(what.find("device 2 failed: out of memory") != std::string::npos, what.c_str());
    QVERIFY2(what.find("aborted") != std::string::npos, what.c_str());
  }

  // After abort, every call throws at once, even on groups never used before.
  void abortFailsLaterCalls() {
    ThreadCollectives coll(4);
    coll.abort("stop");
    QVERIFY(coll.aborted());
    float x = 1;
    QString e = expect_error([&] { coll.all_reduce(0, {0, 1}, &x, &x, 1); }, {"aborted", "stop"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
    e = expect_error([&] { coll.barrier(3, {3}); }, {"aborted", "stop"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  // ---- bad arguments: the message names the device or the group.
  void rejectsZeroDevices() {
    const QString e = expect_error([] { ThreadCollectives coll(0); }, {"devices"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsDeviceOutOfRange() {
    ThreadCollectives coll(4);
    float x = 0;
    QString e = expect_error([&] { coll.all_reduce(4, {0, 4}, &x, &x, 1); }, {"device 4", "out of range"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
    e = expect_error([&] { coll.barrier(-1, {0, 1}); }, {"device -1", "out of range"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsGroupMemberOutOfRange() {
    ThreadCollectives coll(4);
    float x = 0;
    const QString e = expect_error([&] { coll.all_gather(0, {0, 9}, &x, &x, 1); }, {"[0, 9]", "device 9", "out of range"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsDeviceNotInGroup() {
    ThreadCollectives coll(4);
    double x = 0;
    const QString e = expect_error([&] { coll.all_reduce(3, {0, 1}, &x, &x, 1); }, {"device 3", "not in group [0, 1]"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsDuplicateInGroup() {
    ThreadCollectives coll(4);
    float x = 0;
    const QString e = expect_error([&] { coll.reduce_scatter(1, {0, 1, 1}, &x, &x, 1); }, {"[0, 1, 1]", "device 1 twice"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsEmptyGroup() {
    ThreadCollectives coll(4);
    const QString e = expect_error([&] { coll.barrier(0, {}); }, {"device 0", "empty"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  void rejectsNegativeCount() {
    ThreadCollectives coll(4);
    float x = 0;
    const QString e = expect_error([&] { coll.all_to_all(2, {2}, &x, &x, -5); }, {"device 2", "negative count"});
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
  // A device already inside a collective cannot start another one (on any group).
  void rejectsDeviceInTwoCollectives() {
    ThreadCollectives coll(4);
    std::vector<std::string> errors(2);
    std::thread blocked([&] {
      try {
        coll.barrier(0, {0, 1});  // device 1 never comes
      } catch (const Error& e) {
        errors[0] = e.what();
      }
    });
    std::this_thread::sleep_for(50ms);
    float x = 0;
    const QString e = expect_error([&] { coll.all_reduce(0, {0, 2}, &x, &x, 1); }, {"device 0", "already"});
    coll.abort("test over");
    blocked.join();
    QVERIFY2(e.isEmpty(), qPrintable(e));
    QVERIFY2(errors[0].find("test over") != std::string::npos, errors[0].c_str());
  }
  // Peers that disagree on the collective, element type or count all get an Error naming each
  // device's call, and the group stays usable.
  void rejectsMismatchedCalls() {
    ThreadCollectives coll(3);
    const std::vector<int> group{0, 1, 2};
    auto errors = run_devices(coll, 3, [&](int r) {
      std::vector<double> xd(8, 1.0);
      std::vector<float> xf(8, 1.0f);
      if (r == 0) coll.all_reduce(0, group, xd.data(), xd.data(), 4);
      if (r == 1) coll.all_reduce(1, group, xd.data(), xd.data(), 5);
      if (r == 2) coll.all_reduce(2, group, xf.data(), xf.data(), 4);
    });
    for (int r = 0; r < 3; ++r) {
      const std::string& what = errors[size_t(r)];
      QVERIFY2(what.find("group [0, 1, 2]") != std::string::npos && what.find("device 1 called all_reduce with 5 float64") != std::string::npos &&
                   what.find("device 2 called all_reduce with 4 float32") != std::string::npos,
               what.c_str());
    }
    errors = run_devices(coll, 3, [&](int r) {
      float x = 1;
      if (r == 2) coll.all_gather(2, group, &x, &x, 1);
      else coll.all_reduce(r, group, &x, &x, 1);
    });
    for (int r = 0; r < 3; ++r) QVERIFY2(errors[size_t(r)].find("device 2 called all_gather") != std::string::npos, errors[size_t(r)].c_str());
    // Still usable.
    std::vector<float> sums(3);
    errors = run_devices(coll, 3, [&](int r) {
      const float x = float(r + 1);
      coll.all_reduce(r, group, &x, &sums[size_t(r)], 1);
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    for (float s : sums) QCOMPARE(s, 6.0f);
  }

  // ---- the figure: all_reduce of 32 MB of float per device over 8 devices.
  void allReduceThroughput() {
    constexpr int n = 8, reps = 5;
    constexpr int64_t count = (32 << 20) / sizeof(float);
    ThreadCollectives coll(n);
    std::vector<int> group(n);
    for (int i = 0; i < n; ++i) group[size_t(i)] = i;
    std::vector<std::vector<float>> in(n), out(n);
    std::vector<double> seconds(reps);
    const auto errors = run_devices(coll, n, [&](int r) {
      // Each device fills its own buffers (first touch from its own thread).
      in[size_t(r)].assign(size_t(count), float(r + 1));
      out[size_t(r)].assign(size_t(count), 0.0f);
      coll.all_reduce(r, group, in[size_t(r)].data(), out[size_t(r)].data(), count);  // warm-up
      for (int rep = 0; rep < reps; ++rep) {
        coll.barrier(r, group);
        const auto t0 = std::chrono::steady_clock::now();
        coll.all_reduce(r, group, in[size_t(r)].data(), out[size_t(r)].data(), count);
        coll.barrier(r, group);
        if (r == 0) seconds[size_t(rep)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    });
    QVERIFY2(first_error(errors).isEmpty(), qPrintable(first_error(errors)));
    for (int r = 0; r < n; ++r) {
      QCOMPARE(out[size_t(r)].front(), 36.0f);
      QCOMPARE(out[size_t(r)].back(), 36.0f);
    }
    const double best = *std::min_element(seconds.begin(), seconds.end());
    double mean = 0;
    for (double s : seconds) mean += s / reps;
    const double bytes = double(count) * sizeof(float);
    qInfo("all_reduce, %d devices x %.0f MB float, %u hardware threads: best %.1f ms, mean %.1f ms; "
          "%.2f GB/s per device buffer (algbw), %.2f GB/s bus bandwidth (algbw * 2(n-1)/n)",
          n, bytes / (1 << 20), std::thread::hardware_concurrency(), best * 1e3, mean * 1e3, bytes / best / 1e9,
          bytes / best / 1e9 * 2 * (n - 1) / n);
  }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
