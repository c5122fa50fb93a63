#include "engine/runtime/inference.h"

#include <cstring>

#include "engine/backends/cpu/executor.h"
#include "engine/runtime/train_step.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

Tensor predict(const project::Project& project, const std::map<std::string, Tensor>& params, const Tensor& features) {
  if (features.shape.empty() || features.size() != numel(features.shape))
    throw Error("predict: features " + shape_str(features.shape) + " do not hold a batch");
  const int64_t batch = features.shape[0];
  // The evaluation step at this batch size, its output kept live past the loss.
  StepProgram s = build_step(project, project::analyze_project(project), batch, false);
  if (s.program.shape(s.input) != features.shape)
    throw Error("predict: features " + shape_str(features.shape) + " do not fit the model's input " +
                shape_str(s.program.shape(s.input)));
  s.memory = plan::plan_memory(s.program, {s.output, s.loss});
  backends::cpu::Executor<float> ex(s.program, s.memory);
  for (const ModelParam& mp : s.params) {
    auto it = params.find(mp.path);
    if (it == params.end()) throw Error("predict: parameter '" + mp.path + "' is missing");
    if (it->second.shape != mp.info.shape || it->second.size() != numel(mp.info.shape))
      throw Error("predict: parameter '" + mp.path + "' is " + shape_str(it->second.shape) + ", the model needs " +
                  shape_str(mp.info.shape));
    std::memcpy(ex.data(mp.value), it->second.ptr(), size_t(it->second.size()) * sizeof(float));
  }
  std::memcpy(ex.data(s.input), features.ptr(), size_t(features.size()) * sizeof(float));
  // Class 0 (or zeros) as targets: the loss is computed but not wanted.
  std::memset(ex.data(s.target), 0, size_t(numel(s.program.shape(s.target))) * sizeof(float));
  ex.run(backends::StepContext{});
  Tensor out(s.program.shape(s.output));
  std::memcpy(out.ptr(), ex.data(s.output), size_t(out.size()) * sizeof(float));
  return out;
}

}  // namespace shardlab::runtime
