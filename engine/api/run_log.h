// The run log (`train --log FILE`): one JSON object per line, each with an "event" ("start",
// "step", "eval", "saved", "warning", "end") and its wall-clock "time". Process 0 of a run writes
// it; the window reads it to draw a run it launched as processes, or one it attached to. One codec
// for both sides, so every field the trainer reports reaches the window: a process run shows what
// an in-process run shows.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/runtime/trainer_events.h"

namespace shardlab::api {

nlohmann::ordered_json start_record(const runtime::StartInfo& s);
nlohmann::ordered_json step_record(const runtime::StepEvent& e);
nlohmann::ordered_json eval_record(const runtime::EvalEvent& e);
nlohmann::ordered_json saved_record(int64_t step, const std::string& dir);
nlohmann::ordered_json warning_record(const std::string& message);
nlohmann::ordered_json end_record(bool cancelled);
// `record` with its wall-clock time (seconds since the epoch, to the millisecond, as TensorBoard's
// wall_time): a window that attaches later reads how long the run took and how long it has been quiet.
std::string timed_line(const nlohmann::ordered_json& record);

struct LogRecord {
  enum class Kind { Start, Step, Eval, Saved, Warning, End, Other };
  Kind kind = Kind::Other;  // Other: not JSON, or a record this reader does not know (a newer CLI's)
  double time = std::numeric_limits<double>::quiet_NaN();  // where the record has none
  runtime::StartInfo start;
  runtime::StepEvent step;  // step.total_steps from `run`'s start record
  runtime::EvalEvent eval;  // eval.epoch from `run`'s steps per epoch: evaluations follow the step that ended one
  int64_t saved_step = 0;
  std::string dir;          // a saved checkpoint's directory, as the run named it
  std::string message;      // a warning's
  bool cancelled = false;   // an end's
};
// One line of a run log; `run` is the start record read before it (for what later records leave out).
LogRecord parse_log_line(std::string_view line, const runtime::StartInfo& run);

}  // namespace shardlab::api
