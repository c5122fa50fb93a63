// The model's forward pass on a batch, outside training: what an exported model must reproduce.
// It runs the same lowered program as the evaluation step (dropout off), on one CPU device.
#pragma once

#include <map>
#include <string>

#include "engine/project/project.h"
#include "engine/tensor/tensor.h"

namespace shardlab::runtime {

// The loss output node's values for `features` ([batch, ...per-example shape]), with `params` by
// path ("dense1/kernel"; a Repeat's stacked). Errors name the parameter or the shape that is wrong.
Tensor predict(const project::Project& project, const std::map<std::string, Tensor>& params, const Tensor& features);

}  // namespace shardlab::runtime
