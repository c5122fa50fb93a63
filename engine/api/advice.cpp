#include "engine/api/advice.h"

#include <memory>

#include "engine/advisor/hardware_file.h"
#include "engine/backends/backend.h"

namespace shardlab::api {

std::vector<std::string> hardware_profile_names() {
  std::vector<std::string> names;
  for (const auto& [id, text] : advisor::bundled_profiles()) names.push_back(id);
  return names;
}

std::vector<advisor::Candidate> advise_layouts(const project::Project& p, int64_t devices, const std::string& hardware,
                                               advisor::SearchSummary* search) {
  const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
  const advisor::Hardware hw = hardware.empty() ? advisor::this_machine(*cpu, int(devices)) : advisor::find_hardware(hardware);
  const double capacity = hw.memory_bytes > 0 ? hw.memory_bytes : double(cpu->capacity_per_device(int(devices)));
  return advisor::advise(p, devices, hw, capacity, {}, search);
}

std::string explain_layout(const advisor::Candidate& c) { return advisor::explain(c); }

std::string describe_search(const advisor::SearchSummary& s) { return advisor::describe(s); }

}  // namespace shardlab::api
