// The layout advisor as the editor asks for it: the project's candidate meshes and rules on N
// devices, ranked (engine/advisor), on a hardware profile's name or file, or on this machine's CPU
// (its saved calibration, measured first when there is none). Takes a fraction of a second, or a
// few seconds when it calibrates or searches a large model: callers off the UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/advisor/advisor.h"
#include "engine/project/project.h"

namespace shardlab::api {

// The written hardware profiles that ship with Shardlab, by name ("h100-sxm-node", ...).
std::vector<std::string> hardware_profile_names();

// The named strategies and what a search of the model's own axes finds (engine/advisor/search.h);
// `search` (when given) is told how the search went.
std::vector<advisor::Candidate> advise_layouts(const project::Project& p, int64_t devices, const std::string& hardware = "",
                                               advisor::SearchSummary* search = nullptr);

// What a candidate splits, moves per step and is bound by, in a few sentences.
std::string explain_layout(const advisor::Candidate& c);
// How the search went, in one line.
std::string describe_search(const advisor::SearchSummary& s);

}  // namespace shardlab::api
