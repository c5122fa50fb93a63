#include "engine/advisor/hardware.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/util/error.h"

namespace shardlab::advisor {

double Curve::at(double size) const {
  if (points.empty()) return 0;
  if (size <= points.front().first) return points.front().second;
  if (size >= points.back().first) return points.back().second;
  for (size_t i = 1; i < points.size(); ++i)
    if (size <= points[i].first) {
      const auto& [x0, y0] = points[i - 1];
      const auto& [x1, y1] = points[i];
      const double t = std::log(size / x0) / std::log(x1 / x0);
      return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
    }
  return points.back().second;
}

const Curve& DeviceRates::gemm(GemmSide side) const { return const_cast<DeviceRates*>(this)->gemm(side); }

Curve& DeviceRates::gemm(GemmSide side) {
  switch (side) {
    case GemmSide::Rows: return gemm_rows;
    case GemmSide::Inner: return gemm_inner;
    case GemmSide::Cols: return gemm_cols;
  }
  return gemm_rows;
}

double CollectiveRate::seconds(double bytes) const {
  const double rate = by_size.points.empty() ? bytes_per_s : by_size.at(bytes);
  return latency_s + (rate > 0 ? bytes / rate : 0);
}

DeviceRates Hardware::rates_for(int devices) const {
  if (rates.empty()) throw Error("hardware profile '" + name + "' has no rates");
  const DeviceRates* best = &rates.front();
  for (const DeviceRates& r : rates)
    if (r.devices <= devices) best = &r;
  DeviceRates out = *best;
  // Devices beyond the measured count share the same cores: each gets that much less of them.
  if (kind == "cpu" && devices > best->devices && best->devices >= shared_cores) {
    const double share = double(best->devices) / double(devices);
    for (Curve* c : {&out.gemm_rows, &out.gemm_inner, &out.gemm_cols})
      for (auto& point : c->points) point.second *= share;
    out.memory_bytes_per_s *= share;
    out.instruction_s /= share;
  }
  out.devices = devices;
  return out;
}

CollectiveRate Hardware::collective(const std::string& kind_name, int devices, int group, bool network) const {
  auto distance = [](int measured, int wanted) {
    return measured == 0 ? 0.0 : std::abs(std::log(double(measured)) - std::log(double(std::max(1, wanted))));
  };
  const CollectiveRate* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const CollectiveRate& c : collectives) {
    if (c.kind != kind_name) continue;
    // A link of the right kind (within a node or across) first, then devices, then group size.
    const double d = (c.network != network ? 100.0 : 0.0) + 10.0 * distance(c.devices, devices) + distance(c.group, group);
    if (d < best_d) {
      best_d = d;
      best = &c;
    }
  }
  if (!best) throw Error("hardware profile '" + name + "' has no rate for " + kind_name);
  CollectiveRate out = *best;
  if (out.bus_bytes_per_s > 0) {
    const double g = double(std::max(2, group));
    const double moved = kind_name == "all_reduce" ? 2.0 * (g - 1) / g : (g - 1) / g;  // of the array, per link
    out.bytes_per_s = out.bus_bytes_per_s / moved;
  }
  return out;
}

double Hardware::gemm_flops(int devices) const {
  const DeviceRates r = rates_for(devices);
  double best = 0;
  for (const Curve* c : {&r.gemm_rows, &r.gemm_inner, &r.gemm_cols})
    if (!c->points.empty()) best = std::max(best, c->points.back().second);
  return best * double(devices);
}

}  // namespace shardlab::advisor
