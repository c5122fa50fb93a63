#include "engine/profiler/process_traces.h"

#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace shardlab::profiler {

std::string merge_process_traces(const std::vector<std::string>& traces, const std::vector<double>& origins_unix_us) {
  using Json = nlohmann::ordered_json;
  if (traces.empty() || traces.size() != origins_unix_us.size())
    throw Error("internal: merging " + std::to_string(traces.size()) + " traces with " + std::to_string(origins_unix_us.size()) +
                " origins");
  Json events = Json::array();
  for (size_t r = 0; r < traces.size(); ++r) {
    const Json one = Json::parse(traces[r]);
    const double shift = origins_unix_us[r] - origins_unix_us[0];
    for (Json e : one.at("traceEvents")) {
      e["pid"] = int(r);
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
        e["args"]["name"] = "shardlab process " + std::to_string(r);
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift;
      events.push_back(std::move(e));
    }
  }
  return Json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace shardlab::profiler
