// What the advisor predicts a step on: a hardware profile. For each number of devices running at
// once, what one of them sustains (GEMM FLOP/s by the GEMM's shape, streaming bandwidth, the fixed
// cost of an instruction and of a run), and what each collective costs (latency plus bytes over a
// rate, by kind and group size). This machine's profile is measured through the backend that runs
// the plans (advisor/calibrate.h); others are written by hand from datasheets (hardware_file.h).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shardlab::advisor {

// (size, value) points, read by interpolation in log-log space and held flat beyond the ends.
struct Curve {
  std::vector<std::pair<double, double>> points;  // ascending sizes
  double at(double size) const;
};

// The three places a GEMM's smallest dimension can be, each with its own efficiency: the rows (a
// small batch per device), the inner dimension (a weight gradient over a small batch) or the
// columns (a narrow layer).
enum class GemmSide { Rows, Inner, Cols };

// What one device sustains while `devices` devices run at once: on a CPU they share its cores, so
// each gets less as more run; a GPU has its own.
struct DeviceRates {
  int devices = 1;
  Curve gemm_rows, gemm_inner, gemm_cols;  // float32 GEMM FLOP/s by the smallest dimension, per side
  double memory_bytes_per_s = 0;           // streaming primitives (updates, elementwise), bytes read + written
  double instruction_s = 0;                // fixed cost of one instruction
  double run_s = 0;                        // fixed cost of one run of the program (waking and joining devices)
  const Curve& gemm(GemmSide side) const;
  Curve& gemm(GemmSide side);
};

// One collective's time: latency_s + bytes / rate, where bytes are the larger of its operand and
// its result (the whole array), and the rate is bytes_per_s, or read off `by_size` where measured
// (on a CPU, arrays that stay in the caches move faster than those that do not).
struct CollectiveRate {
  std::string kind;      // "all_reduce", "all_gather", "reduce_scatter" or "all_to_all"
  int devices = 0;       // devices running at once when measured (0: any)
  int group = 0;         // devices in the group (0: any)
  bool network = false;  // between nodes (profiles with devices_per_node)
  double latency_s = 0;
  double bytes_per_s = 0;
  // Instead of bytes_per_s: a bus bandwidth as nccl-tests reports it, turned into bytes_per_s for
  // each group size by NCCL's factors (an all-reduce moves 2(g-1)/g of the array over each link).
  double bus_bytes_per_s = 0;
  Curve by_size;  // (array bytes, bytes/s); empty: bytes_per_s for every size
  double seconds(double bytes) const;
};

struct Hardware {
  std::string name;
  std::string kind = "cpu";          // "cpu": virtual devices sharing the host's cores; "gpu"
  std::vector<std::string> sources;  // where a written profile's figures come from
  std::string measured;              // how and when a calibrated profile was measured
  // A calibrated profile: how much its probes varied from round to round (the median over probes
  // of (slowest - fastest) / median): the band a prediction on it carries. 0: not measured (written).
  double spread = 0;
  int shared_cores = 0;              // CPU: the cores every device shares
  int devices_per_node = 0;          // devices joined by the fast link (0: all of them)
  double memory_bytes = 0;           // per device; 0: the host's memory, split among the devices
  double host_to_device_bytes_per_s = 0;          // how fast batches reach a device (GPU: its PCIe link)
  std::map<std::string, double> peak_flops;       // dense GEMM peak by precision ("float32", "tf32", "bfloat16")
  std::vector<DeviceRates> rates;                 // ascending device counts; at least one
  std::vector<CollectiveRate> collectives;

  // The rates for `devices` running at once: the entry measured with the most devices not above
  // it; on shared cores, beyond that entry's count each device's share shrinks in proportion.
  DeviceRates rates_for(int devices) const;
  // The rate of `kind` over `group` devices of `devices` running at once: the nearest measured
  // (device count first, then group size). Throws Error when the profile has none of that kind.
  CollectiveRate collective(const std::string& kind, int devices, int group, bool network) const;
  // The largest GEMM rate `devices` devices reach together (for display).
  double gemm_flops(int devices) const;
};

}  // namespace shardlab::advisor
