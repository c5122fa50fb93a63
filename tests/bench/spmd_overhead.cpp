// spmd_overhead: what splitting a step over virtual devices costs on the same cores.
// deep-mlp-small trained on 1 device and on N virtual devices with data parallelism (batch over
// 'data', parameters replicated, the weight update sharded over 'data'); prints the median step
// times, their ratio (target <= 1.5x) and the time each device spent in collectives.
//   build/tests/bench/spmd_overhead [--devices 8] [--steps 7] [--threads T] [--project P]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/backends/backend.h"
#include "engine/runtime/spmd_session.h"
#include "engine/runtime/trainer.h"

using namespace shardlab;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 8, steps = 7, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::string project = std::string(SHARDLAB_SOURCE_DIR) + "/projects/deep-mlp-small.shardlab.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--devices")) devices = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--project")) project = argv[i + 1];
  }
  const int warmup = 2;
  project::Project p = project::load_project(project);
  const int64_t batch = p.training.batch_size;

  runtime::TrainOptions o;
  o.threads = threads;
  runtime::Trainer one(p, o);
  const Shape xs = one.step_program().program.shape(one.step_program().input);
  const Shape ys = one.step_program().program.shape(one.step_program().target);
  Tensor x(xs, 1.f), y(ys, 1.f);
  std::vector<double> t1;
  for (int s = 0; s < warmup + steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    one.train_step(x, y);
    if (s >= warmup) t1.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  // The devices share the same `threads` cores (a budget admits `threads` of them at a time).
  runtime::SpmdSession many(p, sharding::parse_mesh("data=" + std::to_string(devices)), sharding::parse_rules("batch=data"), batch,
                            std::shared_ptr<backends::Backend>(backends::make_backend("cpu", backends::BackendOptions{.threads = threads})));
  std::vector<double> tn, comm;
  for (int s = 0; s < warmup + steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    many.train_step(x, y, p.optimizer.learning_rate.at(s));
    if (s >= warmup) {
      tn.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      comm.push_back(many.last_comm_seconds());
    }
  }
  const double a = median(t1), b = median(tn), c = median(comm);
  std::printf("%s, batch %lld, %d threads, median of %d steps after %d warm-up\n", p.display_name().c_str(), (long long)batch,
              threads, steps, warmup);
  std::printf("1 device:                 %8.1f ms per step\n", a * 1e3);
  std::printf("%d devices (data=%d):     %8.1f ms per step, of which %.1f ms in collectives per device (%.0f%%)\n", devices,
              devices, b * 1e3, c * 1e3, 100.0 * c / b);
  std::printf("ratio %d devices / 1 device: %.3fx (target <= 1.5x): %s\n", devices, b / a, b / a <= 1.5 ? "PASS" : "FAIL");
  double bytes = 0;
  for (const auto& col : many.partitioned().collectives) bytes += col.bytes;
  std::printf("collectives per step: %zu, %.1f MiB per device\n", many.partitioned().collectives.size(), bytes / 1048576.0);
  return 0;
}
