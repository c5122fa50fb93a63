#include "engine/runtime/inference.h"


#include "engine/backends/backend.h"
#include "engine/sharding/mesh.h"
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
  // On the CPU backend, as a mesh of one device.
  backends::LoadOptions lo;
  lo.what = "prediction";
  auto exe = backends::make_backend("cpu")->load(s.program, s.memory, sharding::Mesh(), lo);
  for (const ModelParam& mp : s.params) {
    auto it = params.find(mp.path);
    if (it == params.end()) throw Error("predict: parameter '" + mp.path + "' is missing");
    if (it->second.shape != mp.info.shape || it->second.size() != numel(mp.info.shape))
      throw Error("predict: parameter '" + mp.path + "' is " + shape_str(it->second.shape) + ", the model needs " +
                  shape_str(mp.info.shape));
    exe->write(0, mp.value, it->second.ptr());
  }
  exe->write(0, s.input, features.ptr());
  // Class 0 (or zeros) as targets: the loss is computed but not wanted.
  exe->write(0, s.target, Tensor(s.program.shape(s.target)).ptr());
  exe->run(backends::RunContext{});
  Tensor out(s.program.shape(s.output));
  exe->read(0, s.output, out.ptr());
  return out;
}

}  // namespace shardlab::runtime
