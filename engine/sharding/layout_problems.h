// The layout errors of a whole model grouped by their cause. A mesh axis of size 3 that divides no
// batch is one problem listing the arrays it hits and the sizes of that axis that would divide them
// all, not one error per array; a mesh axis the rules name but the mesh lacks is one problem with a
// "did you mean". Other errors pass through as they are. Each array keeps its own message too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/sharding/mesh.h"
#include "engine/sharding/partition_spec.h"
#include "engine/util/diagnostic.h"

namespace shardlab::sharding {

class LayoutProblems {
 public:
  explicit LayoutProblems(Mesh mesh) : mesh_(std::move(mesh)) {}
  // Records array `name`'s layout error (`error`, from validation_error or the rules) under its cause.
  void add(const std::string& name, const PartitionSpec& spec, const Shape& shape, const std::string& error);
  // One problem per cause, in the order the causes were first seen: the arrays it hits, the field
  // at fault and the fix (the mesh sizes that divide, the axis probably meant).
  std::vector<Diagnostic> diagnostics() const;

 private:
  struct Hit {
    std::string array;
    size_t dim = 0;
    int64_t size = 0;
  };
  struct Group {
    size_t order = 0;
    std::vector<std::string> axes;  // the mesh axes splitting the dimension, or the one missing axis
    bool missing = false;
    std::vector<Hit> hits;
    std::string text;   // a problem with no group (an axis used twice ...)
    std::string array;  // ... and its array
  };
  Mesh mesh_;
  std::map<std::string, Group> groups_;
};

}  // namespace shardlab::sharding
