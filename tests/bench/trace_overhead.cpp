// trace_overhead: what detailed tracing (every span, memory counters) costs per training step
// against the always-on light mode (per-step totals only), on deep-mlp-small. Target: <= 3%.
//   build/tests/bench/trace_overhead [--steps 9] [--threads T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backends/cpu/executor.h"
#include "engine/runtime/trainer.h"

using namespace shardlab;

namespace {

double median_step(bool detailed, int steps, int threads) {
  runtime::TrainOptions o;
  o.threads = threads;
  o.trace_detailed = detailed;
  o.trace_keep = steps;
  runtime::Trainer t(project::load_project(std::string(SHARDLAB_SOURCE_DIR) + "/projects/deep-mlp-small.shardlab.json"), o);
  const auto& s = t.step_program();
  Tensor x(s.program.shape(s.input), 1.f), y(s.program.shape(s.target), 1.f);
  std::vector<double> times;
  for (int i = 0; i < steps + 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    t.train_step(x, y);
    if (i >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 9, threads = backends::cpu::default_threads();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  // Alternate the two modes so drift in the machine's load falls on both.
  std::vector<double> light, detailed;
  for (int r = 0; r < 2; ++r) {
    light.push_back(median_step(false, steps, threads));
    detailed.push_back(median_step(true, steps, threads));
  }
  const double l = *std::min_element(light.begin(), light.end()), d = *std::min_element(detailed.begin(), detailed.end());
  std::printf("deep-mlp-small, %d threads, median of %d steps (best of 2 runs each)\n", threads, steps);
  std::printf("light tracing:    %8.1f ms per step\ndetailed tracing: %8.1f ms per step\n", l * 1e3, d * 1e3);
  std::printf("overhead %.2f%% (target <= 3%%): %s\n", 100.0 * (d - l) / l, d <= 1.03 * l ? "PASS" : "FAIL");
  return 0;
}
