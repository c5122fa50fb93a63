// What the advisor predicts a step on: a device's GEMM rate and memory bandwidth, how many cores
// the virtual devices share, and the cost of a collective. This machine's profile is measured
// (the backend's GEMM peak, a streaming copy for the bandwidth); others can be written by hand.
#pragma once

#include <string>

namespace shardlab::backends {
class Backend;
}

namespace shardlab::advisor {

struct Hardware {
  std::string name;
  // CPU: the cores every virtual device shares; devices beyond them take turns. 0: devices have
  // their own (GPUs), and all run at once.
  int shared_cores = 0;
  double gemm_flops = 0;            // FLOP/s of a float32 GEMM: on all shared cores, or on one GPU
  double memory_bytes_per_s = 0;    // streaming bandwidth (read + write): all shared cores, or one GPU
  double collective_latency_s = 0;  // the fixed cost of one collective (its alpha)
};

// This machine's CPU as `cpu` runs it: its GEMM peak and core count, and the bandwidth of a copy
// across those cores, measured once per process (about a quarter of a second).
Hardware this_machine(backends::Backend& cpu);

}  // namespace shardlab::advisor
