#include "engine/advisor/calibration_check.h"

#include <cstdio>
#include <fstream>

#include "engine/backends/backend.h"

namespace shardlab::advisor {

CalibrationCheck check_calibration(backends::Backend& cpu, const Hardware& saved, double measured_now) {
  CalibrationCheck c;
  const auto it = saved.peak_flops.find("float32");
  if (it == saved.peak_flops.end() || it->second <= 0) return c;  // nothing to compare with
  c.saved_flops = it->second;
  c.now_flops = measured_now > 0 ? measured_now : cpu.gemm_peak_flops();
  if (c.now_flops <= 0) return c;
  c.factor = c.now_flops / c.saved_flops;
  c.stale = c.factor > kStaleFactor;
  if (c.stale) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "this machine runs GEMMs at %.0f GFLOP/s now, where its calibration (%s) measured %.0f: the "
                  "profile was measured while the machine was busy, and predicted times may be about %.1fx too "
                  "long. Measure it again with `shardlab-cli calibrate` while the machine is quiet",
                  c.now_flops / 1e9, saved.measured.c_str(), c.saved_flops / 1e9, c.factor);
    c.message = text;
  }
  return c;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  if (!(in >> one)) return -1;
  return one;
}

}  // namespace shardlab::advisor
