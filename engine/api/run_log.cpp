#include "engine/api/run_log.h"

#include <chrono>
#include <cmath>

namespace shardlab::api {

namespace {

// A loss or accuracy that is not a number is written as null (JSON has no NaN).
nlohmann::ordered_json num(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }

double number(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : NAN;
}
int64_t integer(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number() ? int64_t(std::llround(it->get<double>())) : 0;
}
std::string text(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool flag(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

nlohmann::ordered_json start_record(const runtime::StartInfo& s) {
  return {{"event", "start"},
          {"total_steps", s.total_steps},
          {"steps_per_epoch", s.steps_per_epoch},
          {"batch_size", s.batch},
          {"accumulate", s.microbatches},
          {"threads", s.threads},
          {"param_count", s.param_count},
          {"train_examples", s.train_examples},
          {"test_examples", s.test_examples},
          {"step_flops", s.step_flops},
          {"plan_param_bytes", s.param_bytes},
          {"plan_opt_state_bytes", s.opt_state_bytes},
          {"plan_arena_bytes", s.arena_bytes},
          {"plan_total_bytes", s.total_bytes},
          {"devices", s.devices},
          {"processes", s.processes},
          {"collectives", s.collectives},
          {"comm_bytes", s.comm_bytes},
          {"first_step", s.first_step},
          {"mesh", s.mesh},
          {"precision", s.precision},
          {"loss_scaling", s.loss_scaling}};
}

nlohmann::ordered_json step_record(const runtime::StepEvent& e) {
  nlohmann::ordered_json j{{"event", "step"},
                           {"step", e.step},
                           {"epoch", e.epoch},
                           {"loss", num(e.loss)},
                           {"accuracy", num(e.accuracy)},
                           {"learning_rate", e.learning_rate},
                           {"step_time_s", e.step_time_s},
                           {"cpu_time_s", e.cpu_time_s},
                           {"comm_time_s", e.comm_time_s},
                           {"data_wait_s", e.data_wait_s},
                           {"examples_per_s", e.examples_per_s}};
  if (std::isfinite(e.loss_scale)) {  // dynamic loss scaling
    j["skipped"] = e.skipped;
    j["loss_scale"] = e.loss_scale;
    j["skipped_steps"] = e.skipped_steps;
  }
  return j;
}

nlohmann::ordered_json eval_record(const runtime::EvalEvent& e) {
  return {{"event", "eval"}, {"step", e.step}, {"loss", num(e.loss)}, {"accuracy", num(e.accuracy)}, {"examples", e.examples}};
}

nlohmann::ordered_json saved_record(int64_t step, const std::string& dir) { return {{"event", "saved"}, {"step", step}, {"dir", dir}}; }
nlohmann::ordered_json warning_record(const std::string& message) { return {{"event", "warning"}, {"message", message}}; }
nlohmann::ordered_json end_record(bool cancelled) { return {{"event", "end"}, {"cancelled", cancelled}}; }

std::string timed_line(const nlohmann::ordered_json& record) {
  nlohmann::ordered_json timed = record;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  timed["time"] = std::round(now * 1e3) / 1e3;
  return timed.dump();
}

LogRecord parse_log_line(std::string_view line, const runtime::StartInfo& run) {
  LogRecord r;
  const nlohmann::json o = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (o.is_discarded() || !o.is_object()) return r;
  r.time = number(o, "time");
  const std::string event = text(o, "event");
  if (event == "start") {
    runtime::StartInfo& s = r.start;
    r.kind = LogRecord::Kind::Start;
    s.total_steps = integer(o, "total_steps");
    s.steps_per_epoch = integer(o, "steps_per_epoch");
    s.batch = integer(o, "batch_size");
    s.microbatches = std::max<int64_t>(1, integer(o, "accumulate"));
    s.threads = int(integer(o, "threads"));
    s.param_count = integer(o, "param_count");
    s.train_examples = integer(o, "train_examples");
    s.test_examples = integer(o, "test_examples");
    s.step_flops = number(o, "step_flops");
    s.param_bytes = number(o, "plan_param_bytes");
    s.opt_state_bytes = number(o, "plan_opt_state_bytes");
    s.arena_bytes = number(o, "plan_arena_bytes");
    s.total_bytes = number(o, "plan_total_bytes");
    s.devices = std::max(1, int(integer(o, "devices")));
    s.processes = std::max(1, int(integer(o, "processes")));
    s.collectives = integer(o, "collectives");
    s.comm_bytes = number(o, "comm_bytes");
    s.first_step = integer(o, "first_step");
    s.mesh = text(o, "mesh");
    if (o.contains("precision")) s.precision = text(o, "precision");
    s.loss_scaling = flag(o, "loss_scaling");
    // A log from before these fields: what it lacks reads as none, not as NaN.
    for (double* v : {&s.param_bytes, &s.opt_state_bytes, &s.arena_bytes, &s.comm_bytes, &s.step_flops, &s.total_bytes})
      if (!std::isfinite(*v)) *v = 0;
  } else if (event == "step") {
    runtime::StepEvent& e = r.step;
    r.kind = LogRecord::Kind::Step;
    e.step = integer(o, "step");
    e.total_steps = run.total_steps;
    e.epoch = integer(o, "epoch");
    e.loss = number(o, "loss");
    e.accuracy = number(o, "accuracy");
    e.learning_rate = number(o, "learning_rate");
    e.step_time_s = number(o, "step_time_s");
    e.cpu_time_s = number(o, "cpu_time_s");
    e.comm_time_s = number(o, "comm_time_s");
    e.data_wait_s = number(o, "data_wait_s");
    e.examples_per_s = number(o, "examples_per_s");
    if (o.contains("loss_scale")) {
      e.loss_scale = number(o, "loss_scale");
      e.skipped = flag(o, "skipped");
      e.skipped_steps = integer(o, "skipped_steps");
    }
  } else if (event == "eval") {
    runtime::EvalEvent& e = r.eval;
    r.kind = LogRecord::Kind::Eval;
    e.step = integer(o, "step");
    e.epoch = run.steps_per_epoch > 0 ? (e.step - 1) / run.steps_per_epoch : 0;
    e.examples = integer(o, "examples");
    e.loss = number(o, "loss");
    e.accuracy = number(o, "accuracy");
  } else if (event == "saved") {
    r.kind = LogRecord::Kind::Saved;
    r.saved_step = integer(o, "step");
    r.dir = text(o, "dir");
  } else if (event == "warning") {
    r.kind = LogRecord::Kind::Warning;
    r.message = text(o, "message");
  } else if (event == "end") {
    r.kind = LogRecord::Kind::End;
    r.cancelled = flag(o, "cancelled");
  }
  return r;
}

}  // namespace shardlab::api
