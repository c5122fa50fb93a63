// `shardlab-cli profile`: a few traced steps, then per device where the step time went (compute,
// collectives, optimizer, data wait, idle), achieved FLOP/s and MFU against this machine's GEMM
// peak, and the spans that took longest, by layer and by primitive.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "app/cli/commands.h"
#include "engine/backends/backend.h"
#include "engine/profiler/peak.h"
#include "engine/runtime/trainer.h"

namespace shardlab::cli {

int run_profile(const ProfileArgs& a) {
  runtime::TrainOptions opt;
  opt.steps = a.steps;
  opt.threads = a.threads;
  opt.backend = a.backend;
  opt.mesh = a.mesh;
  opt.rules = a.rules;
  opt.dtype = a.precision.dtype;
  opt.param_dtype = a.precision.param_dtype;
  opt.matmul_precision = a.precision.matmul_precision;
  opt.trace_detailed = true;
  opt.trace_keep = int(a.steps);
  project::Project p = project::load_project(a.project);
  p.training.eval = false;  // profiling times training steps only
  runtime::Trainer trainer(p, opt);
  trainer.run();
  if (!a.trace.empty()) trainer.trace().write_chrome_json(a.trace);

  // MFU against the GEMM at the run's precision: 16-bit operands under --dtype bfloat16/float16.
  const project::PrecisionSpec& prec = trainer.project().precision;
  const MatmulPrecision gemm = prec.dtype == DType::BF16  ? MatmulPrecision::Bf16
                               : prec.dtype == DType::F16 ? MatmulPrecision::F16
                                                          : prec.matmul_precision;
  const double peak = a.backend == "cpu" ? profiler::measure_gemm_peak_flops(trainer.plan_info().threads)
                                         : backends::make_backend(a.backend)->gemm_peak_flops(gemm);
  const auto summaries = trainer.trace().summaries();
  std::map<int, std::vector<profiler::StepSummary>> by_device;
  for (const auto& s : summaries)
    if (s.step > 0) by_device[s.device].push_back(s);  // step 1 is warm-up
  std::printf("%s: %lld steps, the first left out as warm-up; GEMM peak %.1f GFLOP/s on this machine (%s)\n\n",
              p.display_name().c_str(), (long long)a.steps, peak / 1e9,
              a.backend == "cpu" ? "float32" : matmul_precision_name(gemm));
  std::printf("%-8s %10s %10s %12s %10s %10s %10s %10s %8s\n", "device", "step ms", "compute", "collective", "optimizer",
              "data", "idle", "GFLOP/s", "MFU");
  for (const auto& [device, list] : by_device) {
    profiler::StepSummary avg;
    for (const auto& s : list) {
      avg.wall_us += s.wall_us / double(list.size());
      avg.compute_us += s.compute_us / double(list.size());
      avg.collective_us += s.collective_us / double(list.size());
      avg.optimizer_us += s.optimizer_us / double(list.size());
      avg.data_us += s.data_us / double(list.size());
      avg.flops += s.flops / double(list.size());
    }
    // Virtual devices share the cores: each one's fair share of the peak is peak / devices.
    const double achieved = avg.flops / (avg.wall_us * 1e-6);
    const double share = peak / double(by_device.size());
    std::printf("%s %-4d %10.1f %10.1f %12.1f %10.1f %10.1f %10.1f %10.1f %7.0f%%\n", a.backend == "cuda" ? "GPU" : "CPU", device, avg.wall_us / 1e3,
                avg.compute_us / 1e3, avg.collective_us / 1e3, avg.optimizer_us / 1e3, avg.data_us / 1e3, avg.idle_us() / 1e3,
                achieved / 1e9, 100.0 * achieved / share);
  }
  // Top spans, summed over devices and steps (warm-up left out).
  struct Total {
    double us = 0;
    int count = 0;
  };
  std::map<std::pair<std::string, std::string>, Total> totals;
  std::map<std::string, Total> by_kind;  // the same, every layer together
  double all = 0;
  for (const profiler::Span& s : trainer.trace().spans()) {
    if (s.step == 0 || s.category == profiler::Category::Step) continue;
    for (Total* t : {&totals[{s.name, s.node}], &by_kind[s.name]}) {
      t->us += s.dur_us;
      ++t->count;
    }
    all += s.dur_us;
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Total>> top(totals.begin(), totals.end());
  std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) { return x.second.us > y.second.us; });
  std::printf("\ntop spans (all devices, all steps after the first):\n%-28s %-22s %8s %12s %7s\n", "span", "layer", "count", "total ms", "share");
  for (size_t i = 0; i < top.size() && i < 12; ++i)
    std::printf("%-28s %-22s %8d %12.1f %6.1f%%\n", top[i].first.first.c_str(), top[i].first.second.c_str(), top[i].second.count,
                top[i].second.us / 1e3, 100.0 * top[i].second.us / std::max(all, 1e-9));
  std::vector<std::pair<std::string, Total>> kinds(by_kind.begin(), by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& x, const auto& y) { return x.second.us > y.second.us; });
  std::printf("\nby primitive (all layers, devices and steps after the first):\n%-28s %8s %12s %7s\n", "span", "count", "total ms", "share");
  for (size_t i = 0; i < kinds.size() && i < 12; ++i)
    std::printf("%-28s %8d %12.1f %6.1f%%\n", kinds[i].first.c_str(), kinds[i].second.count, kinds[i].second.us / 1e3,
                100.0 * kinds[i].second.us / std::max(all, 1e-9));
  return 0;
}

}  // namespace shardlab::cli
