// Byte counts as people read them.
#pragma once

#include <string>

namespace shardlab::util {

// "1.25 GiB"
std::string format_bytes(double bytes);

}  // namespace shardlab::util
