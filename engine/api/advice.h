// The layout advisor as the editor asks for it: the project's candidate meshes and rules on N
// devices of this machine's CPU, ranked (engine/advisor). Takes a fraction of a second to seconds
// (every candidate is partitioned): callers off the UI thread.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/advisor/advisor.h"
#include "engine/project/project.h"

namespace shardlab::api {

std::vector<advisor::Candidate> advise_layouts(const project::Project& p, int64_t devices);

}  // namespace shardlab::api
