// `shardlab-cli advise`: the layouts a project could run with on N devices, ranked by predicted step
// time among those that fit, each with its memory per device (from its partitioned step) and what
// bounds it.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/advisor/advisor.h"
#include "engine/backends/backend.h"
#include "engine/util/bytes.h"

namespace shardlab::cli {

int run_advise(const AdviseArgs& a) {
  project::Project p = project::load_project(a.project);
  if (a.batch_size > 0) p.training.batch_size = a.batch_size;
  std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu", backends::BackendOptions{a.threads});
  const advisor::Hardware hw = advisor::this_machine(*cpu);
  const double capacity = double(cpu->capacity_per_device(int(a.devices)));
  const std::vector<advisor::Candidate> ranked = advisor::advise(p, a.devices, hw, capacity);

  if (a.json) {
    nlohmann::ordered_json j;
    j["project"] = p.display_name();
    j["devices"] = a.devices;
    j["hardware"] = {{"name", hw.name},
                     {"shared_cores", hw.shared_cores},
                     {"gemm_flops", hw.gemm_flops},
                     {"memory_bytes_per_s", hw.memory_bytes_per_s},
                     {"collective_latency_s", hw.collective_latency_s}};
    j["candidates"] = nlohmann::ordered_json::array();
    for (const advisor::Candidate& c : ranked) {
      nlohmann::ordered_json o{{"strategy", c.strategy}, {"mesh", c.mesh}, {"rules", c.rules}};
      if (!c.runs()) {
        o["error"] = c.error;
      } else {
        o["fits"] = c.fits;
        o["bytes_per_device"] = c.bytes_per_device;
        o["capacity_bytes"] = c.capacity_bytes;
        o["predicted_step_ms"] = c.prediction.step_s * 1e3;
        o["compute_ms"] = c.prediction.compute_s * 1e3;
        o["memory_ms"] = c.prediction.memory_s * 1e3;
        o["communication_ms"] = c.prediction.communication_s * 1e3;
        o["bound_by"] = c.prediction.bound_by;
      }
      j["candidates"].push_back(o);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::printf("%s on %lld devices of %s (%d cores shared; GEMM %.1f GFLOP/s, copy %.1f GB/s)\n\n", p.display_name().c_str(),
              (long long)a.devices, hw.name.c_str(), hw.shared_cores, hw.gemm_flops / 1e9, hw.memory_bytes_per_s / 1e9);
  std::printf("%-4s %-20s %-18s %12s %6s %13s %-14s %s\n", "rank", "strategy", "mesh", "per device", "fits", "predicted ms",
              "bound by", "rules");
  int rank = 0;
  for (const advisor::Candidate& c : ranked) {
    ++rank;
    if (!c.runs()) {
      std::printf("%-4s %-20s %-18s cannot run: %s\n", "-", c.strategy.c_str(), c.mesh.c_str(), c.error.c_str());
      continue;
    }
    std::printf("%-4d %-20s %-18s %12s %6s %13.1f %-14s %s\n", rank, c.strategy.c_str(), c.mesh.empty() ? "-" : c.mesh.c_str(),
                util::format_bytes(c.bytes_per_device).c_str(), c.fits ? "yes" : "NO", c.prediction.step_s * 1e3,
                c.prediction.bound_by.c_str(), c.rules.empty() ? "-" : c.rules.c_str());
  }
  std::printf("\nPredicted from each plan's FLOPs and bytes per primitive (a roofline on this machine's GEMM rate and\n"
              "copy bandwidth) and its collectives. Runs keep this order but take longer, most for many devices\n"
              "sharing few cores (up to about 40%% for 8 data-parallel devices on 2 cores). Try one with:\n"
              "  shardlab-cli train %s --mesh MESH --rules RULES\n",
              a.project.c_str());
  return 0;
}

}  // namespace shardlab::cli
