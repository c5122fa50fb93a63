// Whether a saved calibration still describes this machine. Every prediction scales with the
// profile's rates, so a profile measured while the machine was busy (or on a faster day of a shared
// virtual machine) puts every step off by about one factor: cnn-fashion was predicted at 477 ms and
// ran in 50 with a profile whose GEMMs ran at 67 GFLOP/s, where they then ran at 177. A GEMM timed
// now (about 50 ms) against the profile's own says so before anyone trusts the ranking's times.
#pragma once

#include <string>

#include "engine/advisor/hardware.h"

namespace shardlab::backends {
class Backend;
}

namespace shardlab::advisor {

// A GEMM running this much faster now than the profile says calls the profile stale. Only that
// way: noise on a shared machine only ever slows a probe (the 50 ms probe read 67 to 183 GFLOP/s in
// consecutive runs on the 2-core EPYC), so a probe slower than the profile says little, and one
// faster says the profile was measured slow.
inline constexpr double kStaleFactor = 1.5;

struct CalibrationCheck {
  double saved_flops = 0;  // the profile's float32 GEMM peak
  double now_flops = 0;    // the same GEMM family timed now
  double factor = 1;       // now / saved
  bool stale = false;      // factor > kStaleFactor
  std::string message;     // what to do about it, when stale
};

// Compares `saved` (this machine's profile) with a GEMM `cpu` runs now. `measured_now` is the
// rate to compare with (0: time it here); a test passes its own.
CalibrationCheck check_calibration(backends::Backend& cpu, const Hardware& saved, double measured_now = 0);

// The busy cores' worth of load (the 1-minute load average), or -1 where it cannot be read: a
// calibration measured under load measures the load.
double load_average();

}  // namespace shardlab::advisor
