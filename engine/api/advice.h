// The layout advisor as the editor asks for it: the project's candidate meshes and rules on N
// devices, ranked (engine/advisor), on a hardware profile's name or file, or on this machine's CPU
// (its saved calibration, measured first when there is none). Takes a fraction of a second, or a
// few seconds when it calibrates: callers off the UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/advisor/advisor.h"
#include "engine/project/project.h"

namespace shardlab::api {

// The written hardware profiles that ship with Shardlab, by name ("h100-sxm-node", ...).
std::vector<std::string> hardware_profile_names();

std::vector<advisor::Candidate> advise_layouts(const project::Project& p, int64_t devices, const std::string& hardware = "");

}  // namespace shardlab::api
