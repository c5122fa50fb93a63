// `shardlab-cli calibrate`: measures this machine through the CPU backend (advisor/calibrate.h) and
// saves the profile that `advise` then reuses, or writes it where --out says.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "app/cli/commands.h"
#include "engine/advisor/calibrate.h"
#include "engine/advisor/calibration_check.h"
#include "engine/advisor/hardware_file.h"
#include "engine/backends/backend.h"
#include "engine/util/output_file.h"

namespace shardlab::cli {

int run_calibrate(const CalibrateArgs& a) {
  // Where --out goes, checked before a minute of measuring rather than after.
  if (!a.out.empty()) util::output_path(a.out, "--out");
  std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu", backends::BackendOptions{.threads = a.threads});
  advisor::CalibrateOptions options;
  options.max_devices = a.max_devices;
  const bool tty = isatty(STDERR_FILENO);
  options.progress = [tty](const std::string& what, double fraction) {
    if (tty) std::fprintf(stderr, "\r\033[Kcalibrating: %3.0f%% %s", fraction * 100, what.c_str());
  };
  // Measured under load, the profile measures the load: say so before the minute is spent.
  const double load = advisor::load_average();
  const bool busy = load > 0.5 * cpu->threads();
  if (busy)
    std::fprintf(stderr,
                 "warning: the machine is busy (load average %.1f over %d cores): the rates measured now will be slower "
                 "than the machine, and every prediction slower to match; calibrate again when it is quiet\n",
                 load, cpu->threads());
  advisor::Hardware hw = advisor::calibrate(*cpu, options);
  if (busy) {
    char note[64];
    std::snprintf(note, sizeof note, ", while busy (load average %.1f)", load);
    hw.measured += note;
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  const std::string path = a.out.empty() ? advisor::saved_calibration_path() : a.out;
  advisor::save_hardware_file(hw, path);

  if (a.json) {
    std::cout << advisor::hardware_to_json(hw).dump(2) << "\n";
    return 0;
  }
  std::printf("%s, %d cores shared (%s)\n\n", hw.name.c_str(), hw.shared_cores, hw.measured.c_str());
  std::printf("%-8s %14s %14s %14s %12s %12s %12s\n", "devices", "GEMM GFLOP/s", "  at 64 rows", " at 8 rows", "stream GB/s",
              "instr us", "run us");
  for (const advisor::DeviceRates& r : hw.rates)
    std::printf("%-8d %14.1f %14.1f %14.1f %12.1f %12.2f %12.1f\n", r.devices, r.gemm_rows.at(1e9) * r.devices / 1e9,
                r.gemm_rows.at(64) * r.devices / 1e9, r.gemm_rows.at(8) * r.devices / 1e9, r.memory_bytes_per_s * r.devices / 1e9,
                r.instruction_s * 1e6, r.run_s * 1e6);
  std::printf("(all devices together; each device gets its share)\n\n%-16s %8s %6s %12s %12s\n", "collective", "devices", "group",
              "latency us", "GB/s");
  for (const advisor::CollectiveRate& c : hw.collectives)
    std::printf("%-16s %8d %6d %12.1f %12.2f\n", c.kind.c_str(), c.devices, c.group, c.latency_s * 1e6, c.bytes_per_s / 1e9);
  std::printf("\nSaved to %s%s\n", path.c_str(), a.out.empty() ? " (advise uses it from now on)" : "");
  return 0;
}

}  // namespace shardlab::cli
