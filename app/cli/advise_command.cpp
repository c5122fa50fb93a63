// `shardlab-cli advise`: the layouts a project could run with on N devices (the named strategies
// and what a search of the model's own axes finds), ranked by predicted step time among those that fit, each with its memory per device (from its partitioned step) and what
// bounds it; then whether a GPU would pay for the project.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/advisor/advisor.h"
#include "engine/advisor/calibration_check.h"
#include "engine/advisor/gpu_worth.h"
#include "engine/advisor/hardware_file.h"
#include "engine/backends/backend.h"
#include "engine/util/bytes.h"

namespace shardlab::cli {

namespace {

nlohmann::ordered_json prediction_json(const advisor::Prediction& p) {
  return {{"predicted_step_ms", p.step_s * 1e3},
          {"compute_ms", p.compute_s * 1e3},
          {"memory_ms", p.memory_s * 1e3},
          {"communication_ms", p.communication_s * 1e3},
          {"bound_by", p.bound_by},
          {"band_ms", p.band_s * 1e3}};
}

}  // namespace

int run_advise(const AdviseArgs& a) {
  project::Project p = project::load_project(a.project);
  if (a.batch_size > 0) p.training.batch_size = a.batch_size;
  std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu", backends::BackendOptions{.threads = a.threads});
  bool calibrated_now = false;
  const advisor::Hardware here = advisor::this_machine(*cpu, int(a.devices), &calibrated_now);
  if (calibrated_now && !a.json)
    std::fprintf(stderr, "Measured this machine (saved to %s; `shardlab-cli calibrate` measures it again)\n",
                 advisor::saved_calibration_path().c_str());
  // A saved profile checked against a GEMM timed now: one measured under load (or on a faster
  // day) puts every predicted time off by one factor.
  advisor::CalibrationCheck calibration;
  if (!calibrated_now) calibration = advisor::check_calibration(*cpu, here);
  if (calibration.stale && !a.json) std::fprintf(stderr, "warning: %s\n", calibration.message.c_str());
  const advisor::Hardware hw = a.hardware.empty() ? here : advisor::find_hardware(a.hardware);
  const double capacity = hw.memory_bytes > 0 ? hw.memory_bytes : double(cpu->capacity_per_device(int(a.devices)));
  advisor::AdviseOptions options;
  options.search = a.search;
  options.max_partitions = a.search_limit;
  // The search can take seconds on a large model: say how far it is, on a terminal.
  const bool show_progress = !a.json && isatty(fileno(stderr));
  if (show_progress)
    options.progress = [](int64_t done, int64_t survivors) {
      if (done % 10 == 0) std::fprintf(stderr, "\rsearching: partitioned %lld of %lld layouts left after pruning", (long long)done, (long long)survivors);
    };
  advisor::SearchSummary summary;
  const std::vector<advisor::Candidate> ranked = advisor::advise(p, a.devices, hw, capacity, options, &summary);
  if (show_progress && summary.partitioned >= 10) std::fprintf(stderr, "\r%80s\r", "");
  // "Is a GPU worth it?" compares this machine's CPU with a GPU, whatever --hardware is.
  const advisor::GpuVerdict gpu = advisor::gpu_worth_it(p, here, advisor::find_hardware(a.gpu));

  if (a.json) {
    nlohmann::ordered_json j;
    j["project"] = p.display_name();
    j["devices"] = a.devices;
    j["hardware"] = {{"name", hw.name},
                     {"kind", hw.kind},
                     {"measured", hw.measured},
                     {"shared_cores", hw.shared_cores},
                     {"gemm_flops", hw.gemm_flops(int(a.devices))},
                     {"memory_bytes_per_s", hw.rates_for(int(a.devices)).memory_bytes_per_s * double(a.devices)},
                     {"capacity_bytes_per_device", capacity}};
    if (calibration.now_flops > 0)
      j["calibration"] = {{"saved_gemm_flops", calibration.saved_flops},
                          {"gemm_flops_now", calibration.now_flops},
                          {"stale", calibration.stale},
                          {"message", calibration.message}};
    j["candidates"] = nlohmann::ordered_json::array();
    for (const advisor::Candidate& c : ranked) {
      nlohmann::ordered_json o{{"strategy", c.strategy}, {"mesh", c.mesh}, {"rules", c.rules}};
      if (c.microbatches > 0) o["microbatches"] = c.microbatches;
      o["splits"] = c.splits;
      if (!c.runs()) {
        o["error"] = c.error;
      } else {
        o["fits"] = c.fits;
        o["bytes_per_device"] = c.bytes_per_device;
        o["capacity_bytes"] = c.capacity_bytes;
        o.update(prediction_json(c.prediction));
        o["moved_bytes_per_device"] = c.moved_bytes;
        o["collectives"] = c.collectives;
        if (c.bound_s > 0) o["lower_bound_ms"] = c.bound_s * 1e3;
      }
      j["candidates"].push_back(o);
    }
    if (a.search && a.devices > 1)
      j["search"] = {{"axes", summary.counts.axes},
                     {"meshes", summary.counts.meshes},
                     {"assignments", summary.counts.assignments},
                     {"pruned_indivisible", summary.counts.indivisible},
                     {"pruned_idle_axis", summary.counts.idle_axis},
                     {"pruned_too_big", summary.counts.too_big},
                     {"repeats", summary.counts.duplicates},
                     {"survivors", summary.survivors},
                     {"partitioned", summary.partitioned},
                     {"refused", summary.failed},
                     {"equal_to_a_strategy", summary.same_as_strategy},
                     {"bounded_out", summary.past_bound},
                     {"past_limit", summary.past_limit},
                     {"seconds", summary.seconds}};
    if (!ranked.empty()) j["why_the_first"] = advisor::explain(ranked.front());
    j["gpu_worth_it"] = {{"cpu", gpu.cpu_name},
                         {"gpu", gpu.gpu_name},
                         {"cpu_step_ms", gpu.cpu.step_s * 1e3},
                         {"gpu_step_ms", gpu.gpu.step_s * 1e3},
                         {"gpu_bound_by", gpu.gpu.bound_by},
                         {"speedup", gpu.speedup},
                         {"fits_gpu", gpu.fits_gpu},
                         {"bytes_per_device", gpu.bytes_per_step},
                         {"examples_per_s_needed", gpu.examples_per_s_needed},
                         {"input_bytes_per_s_needed", gpu.bytes_per_s_needed},
                         {"host_link_fraction", gpu.host_link_fraction},
                         {"verdict", gpu.verdict}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::printf("%s on %lld devices of %s", p.display_name().c_str(), (long long)a.devices, hw.name.c_str());
  if (hw.kind == "cpu")
    std::printf(" (%d cores shared; GEMM %.1f GFLOP/s, stream %.1f GB/s with %lld devices)\n\n", hw.shared_cores,
                hw.gemm_flops(int(a.devices)) / 1e9, hw.rates_for(int(a.devices)).memory_bytes_per_s * double(a.devices) / 1e9,
                (long long)a.devices);
  else
    std::printf(" (%s per device)\n\n", util::format_bytes(capacity).c_str());
  // The strategy column as wide as its longest name ("data parallel (4 of 6 devices)").
  int width = 28;
  for (const advisor::Candidate& c : ranked) width = std::max(width, int(c.strategy.size()));
  std::printf("%-4s %-*s %-22s %12s %6s %15s %-14s %s\n", "rank", width, "strategy", "mesh", "per device", "fits", "predicted ms",
              "bound by", "rules");
  int rank = 0;
  for (const advisor::Candidate& c : ranked) {
    ++rank;
    if (!c.runs()) {
      std::printf("%-4s %-*s %-22s cannot run: %s\n", "-", width, c.strategy.c_str(), c.mesh.c_str(), c.error.c_str());
      continue;
    }
    const std::string rules = (c.rules.empty() ? std::string("-") : c.rules) +
                              (c.microbatches > 0 ? "  (--microbatches " + std::to_string(c.microbatches) + ")" : "");
    // The step, and where the profile was calibrated, the band its probes' spread gives it.
    char predicted[48];
    if (c.prediction.band_s > 0) std::snprintf(predicted, sizeof predicted, "%.2f +-%.2f", c.prediction.step_s * 1e3, c.prediction.band_s * 1e3);
    else std::snprintf(predicted, sizeof predicted, "%.2f", c.prediction.step_s * 1e3);
    std::printf("%-4d %-*s %-22s %12s %6s %15s %-14s %s\n", rank, width, c.strategy.c_str(), c.mesh.empty() ? "-" : c.mesh.c_str(),
                util::format_bytes(c.bytes_per_device).c_str(), c.fits ? "yes" : "NO", predicted, c.prediction.bound_by.c_str(), rules.c_str());
  }
  if (!ranked.empty()) std::printf("\nWhy the first: %s\n", advisor::explain(ranked.front()).c_str());
  if (a.search && a.devices > 1) std::printf("%s\n", advisor::describe(summary).c_str());
  std::printf("\nPredicted per instruction of each partitioned step from the profile's measured rates: GEMMs by shape,\n"
              "streaming primitives by bandwidth, fixed costs per instruction, collectives as latency + bytes / rate.\n");
  if (hw.spread > 0)
    std::printf("+- is the profile's spread: its calibration's probes varied by %.0f%% from round to round.\n", hw.spread * 100);
  std::printf("tests/bench/advise_accuracy.py sets them beside measured steps. Try one with:\n"
              "  shardlab-cli train %s --mesh MESH --rules RULES [--microbatches M]\n\n",
              a.project.c_str());
  std::printf("Is a GPU worth it? One step on one device: %.2f ms on %s, %.2f ms on %s (%s-bound).\n", gpu.cpu.step_s * 1e3,
              gpu.cpu_name.c_str(), gpu.gpu.step_s * 1e3, gpu.gpu_name.c_str(), gpu.gpu.bound_by.c_str());
  std::printf("Keeping the GPU busy takes %.0f examples/s (%s/s of inputs and targets", gpu.examples_per_s_needed,
              util::format_bytes(gpu.bytes_per_s_needed).c_str());
  if (gpu.host_link_fraction > 0) std::printf(", %.1f%% of its host link", gpu.host_link_fraction * 100);
  std::printf(").\n%s\n", gpu.verdict.c_str());
  return 0;
}

}  // namespace shardlab::cli
