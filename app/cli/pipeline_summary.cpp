#include "app/cli/pipeline_summary.h"

#include <cstdio>

#include "engine/runtime/train_step.h"

namespace shardlab::cli {

namespace {
std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(no parameters)" : s;
}
}  // namespace

std::string pipeline_text(const sharding::ShardingReport& r) {
  if (r.stages.empty()) return {};
  char line[512];
  std::snprintf(line, sizeof line,
                "pipeline over mesh axis '%s': %zu stages, %s schedule, %lld microbatches; each stage idles %.1f%% of the "
                "step while the pipeline fills and drains ((S-1)/(M+S-1))\n",
                r.pipeline_axis.c_str(), r.stages.size(), r.pipeline_schedule.c_str(), (long long)r.microbatches, 100.0 * r.bubble);
  std::string out = line;
  for (size_t s = 0; s < r.stages.size(); ++s) {
    std::snprintf(line, sizeof line, "  stage %zu: step arena %s per device; layers %s\n", s,
                  runtime::format_bytes(r.stages[s].arena).c_str(), joined(r.stages[s].layers).c_str());
    out += line;
  }
  return out;
}

nlohmann::ordered_json pipeline_json(const sharding::ShardingReport& r) {
  if (r.stages.empty()) return nullptr;
  nlohmann::ordered_json j{{"axis", r.pipeline_axis},
                           {"stages", r.stages.size()},
                           {"schedule", r.pipeline_schedule},
                           {"microbatches", r.microbatches},
                           {"bubble", r.bubble}};
  j["per_stage"] = nlohmann::ordered_json::array();
  for (size_t s = 0; s < r.stages.size(); ++s)
    j["per_stage"].push_back({{"stage", s}, {"layers", r.stages[s].layers}, {"arena_bytes", r.stages[s].arena}});
  return j;
}

}  // namespace shardlab::cli
