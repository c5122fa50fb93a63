// gemm_peak: how fast do Shardlab's float GEMM kernels, Eigen and (where found) OpenBLAS multiply
// row-major float matrices on this machine?
//
// One product (default mode): times C = op(A) * op(B) (A: M x K, B: K x N, C: M x N, all row-major
// float32) with one implementation, takes the best repetition as the attainable peak, and extrapolates
// that rate to a given FLOP count (e.g. one training step's matmul FLOPs). tests/bench/cpu_step.py
// runs it beside the training-step peers and reads its JSON.
//
// Table (--table): every implementation on the example projects' training-step shapes, for each
// thread count in --thread-list, as GFLOP/s of the best repetition.
//
// Usage:
//   gemm_peak [--impl I] [--threads T] [--flops F] [--min-seconds S] [--min-reps R] [--ta] [--tb] [M N K]
//   gemm_peak --table [--thread-list 1,2] [--min-seconds S] [--min-reps R]
// I: eigen (default), shardlab (the kernel gemm() dispatches to), a kernel name (avx512, avx2), or
// openblas. Defaults: M=512 N=2048 K=2048 (deep-mlp-small's largest layer), T = omp_get_max_threads(),
// F = 2*M*N*K (one GEMM), S = 1.0 (0.3 for --table), R = 10 (5 for --table).
// Output of one product (one JSON object on stdout):
//   {"gflops": best-rep GFLOP/s, "seconds_for_flops": F / best rate, "gflops_median": ...,
//    "impl":..,"m":..,"n":..,"k":..,"threads":..,"flops":..,"reps":..,"best_s":..,"median_s":..,"checksum":..}

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/backends/cpu/gemm.h"
#include "engine/util/aligned_allocator.h"

#if defined(SHARDLAB_HAVE_OPENBLAS)
// Declared here rather than through cblas.h, whose location differs between OpenBLAS packagings.
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int threads);
char* openblas_get_config();
char* openblas_get_corename();
}
#endif

namespace {

namespace cpu = shardlab::backends::cpu;

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "gemm_peak: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: %s [--impl eigen|shardlab|avx512|avx2|openblas] [--threads T] [--flops F] [--min-seconds S]\n"
               "          [--min-reps R] [--ta] [--tb] [--m M --n N --k K | M N K]\n"
               "       %s --table [--thread-list 1,2] [--min-seconds S] [--min-reps R]\n",
               argv0, argv0);
  std::exit(2);
}

double parse_number(const char* argv0, std::string_view flag, const char* text) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value > 0)) {
    usage(argv0, std::string(flag) + ": expected a positive number, got '" + text + "'");
  }
  return value;
}

long parse_size(const char* argv0, std::string_view flag, const char* text) {
  const double value = parse_number(argv0, flag, text);
  if (value != static_cast<double>(static_cast<long>(value))) {
    usage(argv0, std::string(flag) + ": expected a whole number, got '" + text + "'");
  }
  return static_cast<long>(value);
}

struct Shape {
  const char* name;
  bool ta, tb;
  long m, n, k;
};

// One multiplication routine: C = op(A) op(B) with packed leading dimensions.
using Impl = std::function<void(const Shape&, const float*, const float*, float*)>;

Impl shardlab_kernel(cpu::GemmKernel kernel) {
  return [kernel](const Shape& s, const float* a, const float* b, float* c) {
    cpu::gemm_with(kernel, s.ta, s.tb, s.m, s.n, s.k, a, s.ta ? s.m : s.k, b, s.tb ? s.k : s.n, c, s.n);
  };
}

#if defined(SHARDLAB_HAVE_OPENBLAS)
void openblas(const Shape& s, const float* a, const float* b, float* c) {
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  cblas_sgemm(kRowMajor, s.ta ? kTrans : kNoTrans, s.tb ? kTrans : kNoTrans, int(s.m), int(s.n), int(s.k), 1.f, a,
              int(s.ta ? s.m : s.k), b, int(s.tb ? s.k : s.n), 0.f, c, int(s.n));
}
#endif

// The implementation named on the command line; exits when it cannot run here.
Impl impl_named(const char* argv0, const std::string& name) {
  if (name == "openblas") {
#if defined(SHARDLAB_HAVE_OPENBLAS)
    return openblas;
#else
    usage(argv0, "this build did not find OpenBLAS (apt-get install libopenblas-dev, then re-run cmake)");
#endif
  }
  if (name == "shardlab") return shardlab_kernel(cpu::available_kernels().front());
  for (cpu::GemmKernel k : cpu::available_kernels())
    if (name == cpu::kernel_name(k) || std::string(cpu::kernel_name(k)).rfind(name + " ", 0) == 0)
      return shardlab_kernel(k);
  usage(argv0, "--impl " + name + ": unknown or not supported by this CPU (gemm_kind: " + cpu::gemm_kind() + ")");
}

void set_threads(int threads) {
  omp_set_num_threads(threads);
#if defined(SHARDLAB_HAVE_OPENBLAS)
  openblas_set_num_threads(threads);
#endif
}

struct Timing {
  double best_s, median_s, checksum;
  size_t reps;
  double best_cpu_s;  // the least process CPU time of a repetition: not inflated by time slices lost to other processes
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

Timing time_product(const Impl& impl, const Shape& s, double min_seconds, long min_reps) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // 64-byte aligned, as the engine's buffers are (util::AlignedAllocator): a misaligned B makes
  // every 64-byte panel row straddle two cache lines and reads 5-25% slower than what runs.
  std::vector<float, shardlab::util::AlignedAllocator<float>> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c(size_t(s.m * s.n));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);

  using Clock = std::chrono::steady_clock;
  double checksum = 0.0;
  for (int i = 0; i < 2; ++i) {  // warm-up: page in, spin up the thread pool
    impl(s, a.data(), b.data(), c.data());
    checksum += c[size_t(i) % c.size()];
  }
  std::vector<double> times;
  double best_cpu = 1e30;
  const auto start = Clock::now();
  while (static_cast<long>(times.size()) < min_reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    impl(s, a.data(), b.data(), c.data());
    const auto t1 = Clock::now();
    best_cpu = std::min(best_cpu, process_cpu_seconds() - cpu0);
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
    checksum += c[(7 * times.size()) % c.size()];  // keeps the product observable
  }
  std::sort(times.begin(), times.end());
  const size_t h = times.size() / 2;
  const double median = times.size() % 2 ? times[h] : 0.5 * (times[h - 1] + times[h]);
  return {times.front(), median, checksum, times.size(), best_cpu};
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string one, five;
  f >> one >> five;
  return one.empty() ? "n/a" : one + " " + five;
}

// The matmuls of the example projects' training steps (forward, weight gradient = trans_a,
// input gradient = trans_b).
const Shape kTableShapes[] = {
    // deep-mlp-small, batch 512: 1024 -> 8 x Dense(2048) -> Dense(10)
    {"mlp fwd first", false, false, 512, 2048, 1024},
    {"mlp fwd hidden", false, false, 512, 2048, 2048},
    {"mlp wgrad hidden", true, false, 2048, 2048, 512},
    {"mlp wgrad first", true, false, 1024, 2048, 512},
    {"mlp igrad hidden", false, true, 512, 2048, 2048},
    {"mlp fwd head", false, false, 512, 10, 2048},
    // the same on one of 8 data-parallel shards (batch 64)
    {"shard fwd hidden", false, false, 64, 2048, 2048},
    {"shard wgrad hidden", true, false, 2048, 2048, 64},
    {"shard igrad hidden", false, true, 64, 2048, 2048},
    // fashion-mlp, batch 128: 784 -> Dense(256) -> Dense(10)
    {"fashion fwd 1", false, false, 128, 256, 784},
    {"fashion wgrad 1", true, false, 784, 256, 128},
    {"fashion fwd 2", false, false, 128, 10, 256},
    {"fashion wgrad 2", true, false, 256, 10, 128},
    {"fashion igrad 2", false, true, 128, 256, 10},
};

int table(const std::vector<int>& thread_list, double min_seconds, long min_reps) {
  std::vector<std::pair<std::string, Impl>> impls;
  impls.emplace_back("eigen", shardlab_kernel(cpu::GemmKernel::eigen));
#if defined(SHARDLAB_HAVE_OPENBLAS)
  impls.emplace_back("openblas", openblas);
  std::printf("# OpenBLAS: %s (core %s)\n", openblas_get_config(), openblas_get_corename());
#else
  std::printf("# OpenBLAS: not found by cmake, column left out\n");
#endif
  for (cpu::GemmKernel k : cpu::available_kernels())
    if (k != cpu::GemmKernel::eigen) impls.emplace_back(cpu::kernel_name(k), shardlab_kernel(k));
  std::printf("# gemm_kind: %s; GFLOP/s of the best repetition (at least %ld reps and %.2f s each), as\n"
              "# wall/cpu: by wall time, and by process CPU time x threads (robust to time slices lost to other\n"
              "# processes; low where threads wait or spin)\n",
              cpu::gemm_kind(), min_reps, min_seconds);
  std::printf("%-20s %2s %5s %5s %5s %3s", "shape", "op", "M", "N", "K", "T");
  for (const auto& [name, impl] : impls) std::printf(" %13s", name.c_str());
  std::printf("  %s\n", "loadavg");
  for (int threads : thread_list) {
    set_threads(threads);
    for (const Shape& s : kTableShapes) {
      const std::string load = loadavg();
      std::printf("%-20s %c%c %5ld %5ld %5ld %3d", s.name, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, threads);
      for (const auto& [name, impl] : impls) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the other pools stop spinning
        const Timing t = time_product(impl, s, min_seconds, min_reps);
        const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
        std::printf(" %6.1f/%6.1f", flops / t.best_s / 1e9, flops * threads / t.best_cpu_s / 1e9);
        std::fflush(stdout);
      }
      std::printf("  %s\n", load.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Shape shape{"", false, false, 512, 2048, 2048};
  int threads = omp_get_max_threads();
  double flops = 0.0;  // 0: one GEMM
  double min_seconds = 0;  // 0: the mode's default
  long min_reps = 0;
  std::string impl_name = "eigen";
  bool as_table = false;
  std::vector<int> thread_list;

  std::vector<long> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0], std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--threads") {
      threads = static_cast<int>(parse_size(argv[0], arg, value()));
    } else if (arg == "--thread-list") {
      std::string list = value();
      for (size_t p = 0; p <= list.size();) {
        const size_t q = std::min(list.find(',', p), list.size());
        thread_list.push_back(static_cast<int>(parse_size(argv[0], arg, list.substr(p, q - p).c_str())));
        p = q + 1;
      }
    } else if (arg == "--flops") {
      flops = parse_number(argv[0], arg, value());
    } else if (arg == "--min-seconds") {
      min_seconds = parse_number(argv[0], arg, value());
    } else if (arg == "--min-reps") {
      min_reps = parse_size(argv[0], arg, value());
    } else if (arg == "--impl") {
      impl_name = value();
    } else if (arg == "--table") {
      as_table = true;
    } else if (arg == "--ta") {
      shape.ta = true;
    } else if (arg == "--tb") {
      shape.tb = true;
    } else if (arg == "--m") {
      shape.m = parse_size(argv[0], arg, value());
    } else if (arg == "--n") {
      shape.n = parse_size(argv[0], arg, value());
    } else if (arg == "--k") {
      shape.k = parse_size(argv[0], arg, value());
    } else if (arg == "-h" || arg == "--help") {
      usage(argv[0], "");
    } else if (!arg.empty() && arg[0] != '-') {
      positional.push_back(parse_size(argv[0], "M N K", argv[i]));
    } else {
      usage(argv[0], "unknown option " + std::string(arg));
    }
  }
  if (as_table) {
    if (thread_list.empty()) thread_list = {1, omp_get_max_threads()};
    if (thread_list.size() == 2 && thread_list[0] == thread_list[1]) thread_list.pop_back();
    return table(thread_list, min_seconds > 0 ? min_seconds : 0.3, min_reps > 0 ? min_reps : 5);
  }
  if (!positional.empty()) {
    if (positional.size() != 3) usage(argv[0], "give all three of M N K");
    shape.m = positional[0];
    shape.n = positional[1];
    shape.k = positional[2];
  }

  const Impl impl = impl_named(argv[0], impl_name);
  set_threads(threads);
  const double gemm_flops = 2.0 * double(shape.m) * double(shape.n) * double(shape.k);
  if (flops <= 0) flops = gemm_flops;
  const Timing t = time_product(impl, shape, min_seconds > 0 ? min_seconds : 1.0, min_reps > 0 ? min_reps : 10);
  const double gflops = gemm_flops / t.best_s / 1e9;
  const double gflops_median = gemm_flops / t.median_s / 1e9;

  std::printf(
      "{\"gflops\": %.3f, \"seconds_for_flops\": %.6f, \"gflops_median\": %.3f, "
      "\"seconds_for_flops_median\": %.6f, \"impl\": \"%s\", \"m\": %ld, \"n\": %ld, \"k\": %ld, \"trans_a\": %s, "
      "\"trans_b\": %s, \"threads\": %d, \"flops\": %.0f, \"gemm_flops\": %.0f, \"reps\": %zu, "
      "\"best_s\": %.6f, \"median_s\": %.6f, \"layout\": \"row-major float32\", \"checksum\": %.6g}\n",
      gflops, flops / (gflops * 1e9), gflops_median, flops / (gflops_median * 1e9), impl_name.c_str(), shape.m,
      shape.n, shape.k, shape.ta ? "true" : "false", shape.tb ? "true" : "false", threads, flops, gemm_flops, t.reps,
      t.best_s, t.median_s, t.checksum);
  return 0;
}
