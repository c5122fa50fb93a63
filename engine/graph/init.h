// Parameter initializers with Flax's definitions (variance scaling, truncated normals), drawn from
// a counter-based generator keyed by the parameter's path and the project seed: a parameter's
// values never depend on its sharding or on the order parameters are created in.
#pragma once

#include <cstdint>
#include <string>

#include "engine/graph/graph.h"
#include "engine/tensor/tensor.h"

namespace shardlab::graph {

struct InitSpec {
  // lecun_normal, xavier_normal, xavier_uniform, normal, embed_normal (stddev 1/sqrt(last dim)), zeros, ones
  std::string type = "zeros";
  double stddev = 0.01;        // normal only
  // How many leading dims make the fan-in (the rest the fan-out); -1: all but the last. Set by a
  // layer, not read from JSON: Flax's DenseGeneral initialises (embed, heads, kv) as (embed, heads * kv).
  int in_dims = -1;
};

// Parses "lecun_normal" or {"type": "normal", "stddev": 0.02}; throws Error naming the reason.
InitSpec parse_init(const Json& j);
Json init_to_json(const InitSpec& s);

// Fills `out` (count * numel(shape) elements: `count` stacked layers, each of `shape`).
// Layer i of a stacked parameter is keyed as "<path>#i".
void initialize(float* out, const Shape& shape, int64_t count, const InitSpec& spec, const std::string& path,
                uint64_t seed);

}  // namespace shardlab::graph
