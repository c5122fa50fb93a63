// The engine's one exception type. Messages name the thing at fault (file, node, field) and why,
// so callers (CLI, GUI) can show them as they are.
#pragma once

#include <stdexcept>
#include <string>

namespace shardlab {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace shardlab
