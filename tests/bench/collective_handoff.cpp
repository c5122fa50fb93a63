// collective_handoff: what a small collective costs where virtual devices outnumber the cores.
// N devices on T cores (a ThreadBudget admits T at a time) each work `--work-us` microseconds
// (spinning, no memory) and then all-reduce one float, `--rounds` times. Prints the time per round,
// the ideal (N x work / T: the cores never idle and a collective costs nothing) and the overhead per
// collective (the difference), the median of `--repeats` runs.
//   build/tests/bench/collective_handoff [--devices 8] [--threads T] [--work-us 100] [--rounds 300] [--repeats 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cpu/device_workers.h"

using namespace shardlab;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One run: seconds per round.
double run(int devices, int threads, double work_s, int rounds) {
  backends::cpu::DeviceWorkers workers(devices, threads);
  backends::cpu::ThreadCollectives comm(devices);
  comm.share_cores(workers.budget());
  std::vector<int> group;
  for (int d = 0; d < devices; ++d) group.push_back(d);
  const auto t0 = Clock::now();
  workers.run(
      [&](int d) {
        float x = 1, y = 0;
        for (int r = 0; r < rounds; ++r) {
          const auto w0 = Clock::now();
          while (seconds_since(w0) < work_s) {
          }
          comm.all_reduce(d, group, &x, &y, 1, DType::F32);
        }
      },
      &comm);
  return seconds_since(t0) / rounds;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 8, threads = int(std::max(1u, std::thread::hardware_concurrency())), rounds = 300, repeats = 5;
  double work_us = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--devices")) devices = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--work-us")) work_us = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (devices < 1 || threads < 1 || rounds < 1 || repeats < 1 || work_us < 0) {
    std::fprintf(stderr, "collective_handoff: --devices, --threads, --rounds and --repeats must be positive\n");
    return 2;
  }
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) times.push_back(run(devices, threads, work_us * 1e-6, rounds));
  std::sort(times.begin(), times.end());
  const double t = times[times.size() / 2];
  const double ideal = work_us * 1e-6 * devices / std::min(devices, threads);
  std::printf("%d devices on %d threads, %.0f us of work between all-reduces of one float: %.3f ms per round "
              "(ideal %.3f ms), %.0f us per collective beyond the work\n",
              devices, threads, work_us, t * 1e3, ideal * 1e3, (t - ideal) * 1e6);
  return 0;
}
