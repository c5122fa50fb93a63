// Fields several layers read the same way: a per-example shape and its axis names (Input,
// Reshape), an initializer (Dense and the transformer layers); errors name the field.
#pragma once

#include <string>
#include <vector>

#include "engine/graph/layer.h"

namespace shardlab::graph::fields {

// "shape": positive dims per example (the batch dimension is not in it); `example` shows one in
// the error when it is missing.
Shape per_example_shape(const Json& params, const std::string& example);
// "axes": a logical name per dim, by default dim0, dim1, ..., embed.
std::vector<std::string> axis_names(const Json& params, size_t rank);
// An initializer field, or `fallback` where the node leaves it out.
InitSpec init(const Json& params, const char* key, const Json& fallback);

}  // namespace shardlab::graph::fields
