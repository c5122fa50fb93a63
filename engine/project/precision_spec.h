// A project's precision policy (its "precision" section), in Flax's vocabulary: the dtype parameters
// are stored in (param_dtype, the master weights), the dtype activations and matmul inputs are
// computed in (dtype), how float32 matmuls round their operands (matmul_precision, as
// jax.default_matmul_precision), and dynamic loss scaling for float16. Optimizer state is float32
// whatever the policy; a node may override dtype and param_dtype for itself (its "precision").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/graph/graph.h"
#include "engine/tensor/dtype.h"

namespace shardlab::project {

// flax.training.dynamic_scale.DynamicScale's settings and defaults: the loss is multiplied by
// `initial` before the backward pass; a step whose gradients hold an inf or NaN is skipped and the
// scale multiplied by backoff_factor; after growth_interval finite steps in a row it is multiplied
// by growth_factor.
struct LossScaleSpec {
  double initial = 65536.0;
  int64_t growth_interval = 2000;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
};

struct PrecisionSpec {
  DType param_dtype = DType::F32;
  DType dtype = DType::F32;
  MatmulPrecision matmul_precision = MatmulPrecision::Highest;
  // Set: dynamic loss scaling. Absent from the file it is on for dtype float16 (whose range loses
  // small gradients) and off otherwise; "loss_scale": false turns it off.
  std::optional<LossScaleSpec> loss_scale;
  // "float32", or "bfloat16 compute, float32 parameters, tf32 matmuls": how results are labelled.
  std::string str() const;
};

// `j` is the section as written (null: every default); errors name `where` and the field.
PrecisionSpec parse_precision(const graph::Json& j, const std::string& where);
// What check --json and shard --json report: every field, defaults included.
graph::Json summary_json(const PrecisionSpec& s);

}  // namespace shardlab::project
