// Measures a backend's hardware profile by running small programs through it, the same way a
// partitioned step runs: GEMMs of each shape family, a mix of streaming primitives, chains of tiny
// instructions (the fixed costs), and every collective kind over each group size, for 1, 2, 4, ...
// devices at once. What the advisor then predicts is what this backend does on this machine.
#pragma once

#include <functional>
#include <string>

#include "engine/advisor/hardware.h"

namespace shardlab::backends {
class Backend;
}

namespace shardlab::advisor {

struct CalibrateOptions {
  int max_devices = 8;  // device counts measured: 1, 2, 4, ... up to this
  // Called before each measurement with what is measured and the fraction done; may be empty.
  std::function<void(const std::string& what, double fraction)> progress;
};

// About 25 s on a 2-core machine for max_devices = 8.
Hardware calibrate(backends::Backend& backend, const CalibrateOptions& options = {});

}  // namespace shardlab::advisor
