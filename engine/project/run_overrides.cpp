#include "engine/project/run_overrides.h"

#include "engine/util/error.h"

namespace shardlab::project {

Project with_overrides(Project p, const RunOverrides& o) {
  if (!p.training_json.is_object()) p.training_json = graph::Json::object();
  if (o.batch_size > 0) p.training_json["batch_size"] = p.training.batch_size = o.batch_size;
  if (o.accumulate > 0) p.training_json["accumulate"] = p.training.accumulate = o.accumulate;
  if (p.training.batch_size % p.training.accumulate != 0)
    throw Error(p.display_name() + ": training.accumulate: " + std::to_string(p.training.accumulate) +
                " microbatches do not divide the batch size " +
                std::to_string(p.training.batch_size));
  if (!o.pipeline_schedule.empty()) {
    if (o.pipeline_schedule != "gpipe" && o.pipeline_schedule != "1f1b")
      throw Error("pipeline schedule: '" + o.pipeline_schedule + "' (expected gpipe or 1f1b)");
    p.training_json["pipeline_schedule"] = p.training.pipeline_schedule = o.pipeline_schedule;
  }
  if (o.seed >= 0) {
    p.training.seed = uint64_t(o.seed);
    p.training_json["seed"] = o.seed;
  }
  if (o.steps >= 0) p.training_json["steps"] = p.training.steps = o.steps;
  if (o.epochs >= 0) {
    p.training_json["epochs"] = p.training.epochs = o.epochs;
    if (o.steps < 0) p.training_json["steps"] = p.training.steps = 0;
  }
  if (!o.dtype.empty() || !o.param_dtype.empty() || !o.matmul_precision.empty()) {
    graph::Json j = p.precision_json.is_object() ? p.precision_json : graph::Json::object();
    for (auto [key, value] : {std::pair{"dtype", &o.dtype}, std::pair{"param_dtype", &o.param_dtype},
                              std::pair{"matmul_precision", &o.matmul_precision}})
      if (!value->empty()) j[key] = *value;
    // Parsed as the file's section is, so a bad value is refused in the same words and float16's
    // loss scaling follows the dtype.
    p.precision = parse_precision(j, "precision");
    p.precision_json = j;
  }
  if (o.learning_rate) {
    const double rate = *o.learning_rate;
    if (!(rate >= 0)) throw Error("learning rate: " + std::to_string(rate) + " (a learning rate is >= 0)");
    if (!p.optimizer_json.is_object()) p.optimizer_json = graph::Json::object();
    ScheduleSpec& s = p.optimizer.learning_rate;
    graph::Json& j = p.optimizer_json["learning_rate"];
    if (s.type == "warmup_cosine_decay") {
      s.peak_value = rate;
      j["peak_value"] = rate;
    } else {
      // A constant is written as a plain number, as the project format allows.
      s.value = rate;
      j = rate;
    }
  }
  return p;
}

}  // namespace shardlab::project
