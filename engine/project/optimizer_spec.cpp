#include "engine/project/optimizer_spec.h"

#include <algorithm>
#include <cmath>

#include "engine/util/error.h"

namespace shardlab::project {

double ScheduleSpec::at(int64_t step) const {
  if (type == "constant") return value;
  if (step < warmup_steps)
    return init_value + (peak_value - init_value) * double(step) / double(std::max<int64_t>(warmup_steps, 1));
  const double span = double(std::max<int64_t>(decay_steps - warmup_steps, 1));
  const double t = std::min(double(step - warmup_steps), span) / span;
  const double alpha = peak_value == 0 ? 0 : end_value / peak_value;
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * t));
  return peak_value * ((1.0 - alpha) * cosine + alpha);
}

namespace {

struct Reader {
  const graph::Json& j;
  std::string where;
  double num(const char* key, double fallback, double lo, double hi) const {
    if (!j.contains(key)) return fallback;
    const auto& v = j[key];
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
      throw Error(where + "." + key + ": bad value " + v.dump() + " (expected a number in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "])");
    return v.get<double>();
  }
  int64_t integer(const char* key, int64_t fallback, int64_t lo) const {
    if (!j.contains(key)) return fallback;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo)
      throw Error(where + "." + key + ": bad value " + v.dump() + " (expected an integer >= " + std::to_string(lo) + ")");
    return v.get<int64_t>();
  }
  void only(std::initializer_list<const char*> keys) const {
    if (!j.is_object()) throw Error(where + ": expected an object, got " + j.dump());
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
        throw Error(where + "." + it.key() + ": unknown field");
  }
};

ScheduleSpec parse_schedule(const graph::Json& j, const std::string& where) {
  ScheduleSpec s;
  if (j.is_number()) {
    if (j.get<double>() < 0) throw Error(where + ": bad value " + j.dump() + " (a learning rate is >= 0)");
    s.value = j.get<double>();
    return s;
  }
  Reader r{j, where};
  r.only({"schedule", "value", "init_value", "peak_value", "end_value", "warmup_steps", "decay_steps"});
  s.type = j.value("schedule", std::string("constant"));
  if (s.type == "constant") {
    s.value = r.num("value", 1e-3, 0, 1e9);
  } else if (s.type == "warmup_cosine_decay") {
    s.init_value = r.num("init_value", 0, 0, 1e9);
    s.peak_value = r.num("peak_value", 1e-3, 0, 1e9);
    s.end_value = r.num("end_value", 0, 0, 1e9);
    s.warmup_steps = r.integer("warmup_steps", 0, 0);
    s.decay_steps = r.integer("decay_steps", 1, 1);
    if (s.decay_steps < s.warmup_steps)
      throw Error(where + ".decay_steps: " + std::to_string(s.decay_steps) + " is less than warmup_steps " +
                  std::to_string(s.warmup_steps) + " (decay_steps counts the warmup, as in Optax)");
  } else {
    throw Error(where + ".schedule: unknown schedule '" + s.type + "' (expected constant or warmup_cosine_decay)");
  }
  return s;
}

}  // namespace

OptimizerSpec parse_optimizer(const graph::Json& j, const std::string& where) {
  Reader r{j, where};
  r.only({"type", "learning_rate", "b1", "b2", "eps", "weight_decay", "momentum", "nesterov"});
  OptimizerSpec o;
  if (!j.contains("type") || !j["type"].is_string()) throw Error(where + ".type: missing (expected sgd, adam or adamw)");
  o.type = j["type"].get<std::string>();
  if (o.type != "sgd" && o.type != "adam" && o.type != "adamw")
    throw Error(where + ".type: unknown optimizer '" + o.type + "' (expected sgd, adam or adamw)");
  o.learning_rate = parse_schedule(j.contains("learning_rate") ? j["learning_rate"] : graph::Json(1e-3), where + ".learning_rate");
  bool is_adam = o.type != "sgd";
  auto adam_only = [&](const char* k) {
    if (!is_adam && j.contains(k)) throw Error(where + "." + k + ": only adam and adamw take this field");
  };
  auto sgd_only = [&](const char* k) {
    if (is_adam && j.contains(k)) throw Error(where + "." + k + ": only sgd takes this field");
  };
  for (const char* k : {"b1", "b2", "eps"}) adam_only(k);
  for (const char* k : {"momentum", "nesterov"}) sgd_only(k);
  if (o.type != "adamw" && j.contains("weight_decay")) throw Error(where + ".weight_decay: only adamw takes this field");
  o.b1 = r.num("b1", 0.9, 0, 1);
  o.b2 = r.num("b2", 0.999, 0, 1);
  o.eps = r.num("eps", 1e-8, 0, 1);
  o.weight_decay = r.num("weight_decay", o.type == "adamw" ? 1e-4 : 0.0, 0, 1e3);
  o.momentum = r.num("momentum", 0.0, 0, 1);
  if (j.contains("nesterov")) {
    if (!j["nesterov"].is_boolean()) throw Error(where + ".nesterov: bad value " + j["nesterov"].dump() + " (expected true or false)");
    o.nesterov = j["nesterov"].get<bool>();
  }
  return o;
}

}  // namespace shardlab::project
