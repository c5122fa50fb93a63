// The bounds on a project file that a loader and an editor enforce alike (README, "Projects"): far
// beyond any real project, they keep a hostile or broken file from stalling whoever reads it.
#pragma once

#include <cstddef>

namespace shardlab::project {

// Bytes of UTF-8 in any one string of a project (a description, a name, a key).
inline constexpr size_t kMaxProjectString = 64 * 1024;

}  // namespace shardlab::project
