// gemm_peak: how fast can Eigen multiply row-major float matrices on this machine?
//
// Times C = A * B (A: M x K, B: K x N, C: M x N, all row-major float32) with Eigen 3.4's
// OpenMP-parallel GEMM, takes the best repetition as the attainable peak, and extrapolates that
// rate to a given FLOP count (e.g. one training step's matmul FLOPs). It is a benchmark, not a
// test: tests/bench/cpu_step.py runs it beside the training-step peers.
//
// Usage:
//   gemm_peak [--threads T] [--flops F] [--min-seconds S] [--min-reps R] [M N K]
//   gemm_peak --m M --n N --k K ...
// Defaults: M=512 N=2048 K=2048 (deep-mlp-small's largest layer), T = omp_get_max_threads(),
// F = 2*M*N*K (one GEMM), S = 1.0, R = 10.
// Output (one JSON object on stdout):
//   {"gflops": best-rep GFLOP/s, "seconds_for_flops": F / best rate, "gflops_median": ...,
//    "m":..,"n":..,"k":..,"threads":..,"flops":..,"reps":..,"best_s":..,"median_s":..,"checksum":..}

#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

[[noreturn]] void usage(const char* argv0, const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "gemm_peak: %s\n", error.c_str());
  std::fprintf(stderr,
               "usage: %s [--threads T] [--flops F] [--min-seconds S] [--min-reps R] "
               "[--m M --n N --k K | M N K]\n",
               argv0);
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

}  // namespace

int main(int argc, char** argv) {
  long m = 512, n = 2048, k = 2048;
  int threads = omp_get_max_threads();
  double flops = 0.0;  // 0: one GEMM
  double min_seconds = 1.0;
  long min_reps = 10;

  std::vector<long> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0], std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--threads") {
      threads = static_cast<int>(parse_size(argv[0], arg, value()));
    } else if (arg == "--flops") {
      flops = parse_number(argv[0], arg, value());
    } else if (arg == "--min-seconds") {
      min_seconds = parse_number(argv[0], arg, value());
    } else if (arg == "--min-reps") {
      min_reps = parse_size(argv[0], arg, value());
    } else if (arg == "--m") {
      m = parse_size(argv[0], arg, value());
    } else if (arg == "--n") {
      n = parse_size(argv[0], arg, value());
    } else if (arg == "--k") {
      k = parse_size(argv[0], arg, value());
    } else if (arg == "-h" || arg == "--help") {
      usage(argv[0], "");
    } else if (!arg.empty() && arg[0] != '-') {
      positional.push_back(parse_size(argv[0], "M N K", argv[i]));
    } else {
      usage(argv[0], "unknown option " + std::string(arg));
    }
  }
  if (!positional.empty()) {
    if (positional.size() != 3) usage(argv[0], "give all three of M N K");
    m = positional[0];
    n = positional[1];
    k = positional[2];
  }

  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);

  const double gemm_flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (flops <= 0) flops = gemm_flops;

  std::srand(1234);
  const RowMatrix a = RowMatrix::Random(m, k);
  const RowMatrix b = RowMatrix::Random(k, n);
  RowMatrix c(m, n);

  using Clock = std::chrono::steady_clock;
  double checksum = 0.0;
  for (int i = 0; i < 2; ++i) {  // warm-up: page in, spin up the OpenMP pool
    c.noalias() = a * b;
    checksum += c(i % m, i % n);
  }

  std::vector<double> times;
  const auto start = Clock::now();
  while (static_cast<long>(times.size()) < min_reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    c.noalias() = a * b;
    const auto t1 = Clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
    checksum += c(times.size() % m, (3 * times.size()) % n);  // keeps the product observable
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double best = sorted.front();
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  const double gflops = gemm_flops / best / 1e9;
  const double gflops_median = gemm_flops / median / 1e9;

  std::printf(
      "{\"gflops\": %.3f, \"seconds_for_flops\": %.6f, \"gflops_median\": %.3f, "
      "\"seconds_for_flops_median\": %.6f, \"m\": %ld, \"n\": %ld, \"k\": %ld, \"threads\": %d, "
      "\"eigen_threads\": %d, \"flops\": %.0f, \"gemm_flops\": %.0f, \"reps\": %zu, "
      "\"best_s\": %.6f, \"median_s\": %.6f, \"layout\": \"row-major float32\", \"checksum\": %.6g}\n",
      gflops, flops / (gflops * 1e9), gflops_median, flops / (gflops_median * 1e9), m, n, k, threads,
      Eigen::nbThreads(), flops, gemm_flops, times.size(), best, median, checksum);
  return 0;
}
