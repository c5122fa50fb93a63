#include "engine/api/advice.h"

#include <memory>

#include "engine/backends/backend.h"

namespace shardlab::api {

std::vector<advisor::Candidate> advise_layouts(const project::Project& p, int64_t devices) {
  const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
  const advisor::Hardware hw = advisor::this_machine(*cpu);
  return advisor::advise(p, devices, hw, double(cpu->capacity_per_device(int(devices))));
}

}  // namespace shardlab::api
