#include "engine/runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/checkpoint/checkpoint.h"
#include "engine/data/batch_loader.h"
#include "engine/graph/init.h"
#include "engine/sharding/layout.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Trainer::Trainer(project::Project project, TrainOptions options) : project_(std::move(project)), options_(options) {
  if (options_.batch_size > 0) project_.training.batch_size = options_.batch_size;
  if (options_.seed >= 0) project_.training.seed = uint64_t(options_.seed);
  if (options_.steps >= 0) project_.training.steps = options_.steps;
  if (options_.epochs >= 0) {
    project_.training.epochs = options_.epochs;
    if (options_.steps < 0) project_.training.steps = 0;
  }
  trace_ = options_.trace ? options_.trace : std::make_shared<profiler::Trace>(options_.trace_detailed ? profiler::Trace::Mode::Detailed : profiler::Trace::Mode::Light,
                                             options_.trace_keep);
  threads_ = options_.threads > 0 ? options_.threads : backends::cpu::default_threads();
  backends::cpu::set_threads(threads_);
  report_ = project::analyze_project(project_);
  train_ = build_step(project_, report_, project_.training.batch_size, true);
  exec_ = std::make_unique<backends::cpu::Executor<float>>(train_.program, train_.memory);
  for (const ModelParam& mp : train_.params) initialize_param(mp, project_.training.seed, exec_->data(mp.value));
  const sharding::Mesh mesh = options_.mesh.empty() ? sharding::project_mesh(project_) : sharding::parse_mesh(options_.mesh);
  if (options_.devices > 0) sharding::check_device_count(mesh, options_.devices);
  if (mesh.device_count() > 1) {
    const sharding::LogicalRules rules =
        options_.rules.empty() ? sharding::project_rules(project_) : sharding::parse_rules(options_.rules);
    spmd_ = std::make_unique<SpmdSession>(project_, mesh, rules, project_.training.batch_size,
                                          std::max(1, threads_ / int(mesh.device_count())));
  }
}

Trainer::~Trainer() {
  if (saver_.joinable()) saver_.join();
}

void Trainer::wait_for_saves() {
  if (saver_.joinable()) saver_.join();
  if (!save_error_.empty()) {
    std::string e = save_error_;
    save_error_.clear();
    throw Error(e);
  }
}

void Trainer::save_checkpoint(const std::string& root, int64_t data_position, bool background) {
  wait_for_saves();
  // Copy every array now (the step may then go on), write it later.
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (const std::string& n : state_names()) arrays.push_back({n, state(n)});
  nlohmann::ordered_json meta;
  meta["format"] = "shardlab.checkpoint";
  meta["version"] = 1;
  meta["project"] = nlohmann::ordered_json::parse(project::to_json_string(project_));
  meta["data_position"] = data_position;
  meta["seed"] = project_.training.seed;
  meta["mesh"] = spmd_ ? spmd_->mesh().str() : std::string("(one device)");
  nlohmann::ordered_json specs = nlohmann::ordered_json::object();
  for (const std::string& n : state_names()) {
    const int v = state_value(n);
    specs[n] = spmd_ ? spmd_->partitioned().sharding[size_t(v)].str() : std::string("replicated");
  }
  meta["shardings"] = specs;
  // What a checkpoint browser lists beside the step: the newest loss and evaluation.
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [k, v] : last_metrics_)
    if (std::isfinite(v)) metrics[k] = v;
  meta["metrics"] = metrics;
  const int64_t step = step_;
  const int keep = options_.keep;
  const uint64_t shard_bytes = options_.max_shard_bytes;
  auto write = [this, root, step, keep, shard_bytes, arrays = std::move(arrays), meta = std::move(meta)]() mutable {
    try {
      const std::filesystem::path dir = checkpoint::save(root, step, arrays, meta, shard_bytes);
      checkpoint::prune(root, keep);
      for (auto* l : listeners_) l->on_saved(step, dir.string());
    } catch (const std::exception& e) {
      save_error_ = e.what();
    }
  };
  if (background) saver_ = std::thread(std::move(write));
  else {
    write();
    wait_for_saves();
  }
}

int64_t Trainer::restore_checkpoint(const std::string& dir) {
  checkpoint::Loaded c = checkpoint::load(dir);
  for (const std::string& n : state_names()) {
    auto it = c.arrays.find(n);
    if (it == c.arrays.end()) throw Error(dir + ": the checkpoint has no array '" + n + "' (saved from another model?)");
    set_state(n, it->second);
  }
  step_ = c.step;
  return c.meta.value("data_position", c.step);
}

StartInfo Trainer::plan_info() const {
  StartInfo s;
  s.batch = train_.batch;
  s.threads = threads_;
  s.step_flops = train_.step_flops;
  for (const ModelParam& mp : train_.params) s.param_count += numel(mp.info.shape);
  const plan::MemoryPlan& m = spmd_ ? spmd_->partitioned().memory : train_.memory;
  if (spmd_) {
    s.devices = int(spmd_->mesh().device_count());
    s.mesh = spmd_->mesh().str();
    s.collectives = int64_t(spmd_->partitioned().collectives.size());
    for (const auto& c : spmd_->partitioned().collectives) s.comm_bytes += c.bytes;
  }
  s.param_bytes = double(m.param_elems) * sizeof(float);
  s.opt_state_bytes = double(m.opt_state_elems) * sizeof(float);
  s.arena_bytes = double(m.arena_elems) * sizeof(float);
  s.total_bytes = double(m.total_elems()) * sizeof(float);
  return s;
}

const ModelParam& Trainer::param(const std::string& path) const { return find_param(train_, path); }

std::vector<std::string> Trainer::parameter_paths() const { return param_paths(train_); }

Tensor Trainer::parameter(const std::string& path) const {
  if (spmd_) return spmd_->parameter(path);
  const ModelParam& mp = param(path);
  Tensor t(mp.info.shape);
  std::memcpy(t.ptr(), exec_->data(mp.value), size_t(t.size()) * sizeof(float));
  return t;
}

void Trainer::set_parameter(const std::string& path, const Tensor& value) {
  if (spmd_) spmd_->set_parameter(path, value);
  const ModelParam& mp = param(path);
  if (value.shape != mp.info.shape)
    throw Error("parameter '" + path + "' has shape " + shape_str(mp.info.shape) + ", the value has " + shape_str(value.shape));
  std::memcpy(exec_->data(mp.value), value.ptr(), size_t(value.size()) * sizeof(float));
}

std::vector<std::string> Trainer::state_names() const {
  std::vector<std::string> out;
  for (const ModelParam& mp : train_.params) out.push_back("params/" + mp.path);
  for (const ModelParam& mp : train_.params)
    for (int v : mp.state) {
      const std::string& n = train_.program.values[size_t(v)].name;  // "<path>/<mu|nu|trace>"
      out.push_back("opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path);
    }
  return out;
}

int Trainer::state_value(const std::string& name) const {
  for (const ModelParam& mp : train_.params) {
    if (name == "params/" + mp.path) return mp.value;
    for (int v : mp.state) {
      const std::string& n = train_.program.values[size_t(v)].name;
      if (name == "opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path) return v;
    }
  }
  throw Error("the model has no state array '" + name + "'");
}

Tensor Trainer::state(const std::string& name) const {
  const int v = state_value(name);
  if (spmd_) return spmd_->value(v);
  Tensor t(train_.program.shape(v));
  std::memcpy(t.ptr(), exec_->data(v), size_t(t.size()) * sizeof(float));
  return t;
}

void Trainer::set_state(const std::string& name, const Tensor& value) {
  const int v = state_value(name);
  if (value.shape != train_.program.shape(v))
    throw Error("'" + name + "' has shape " + shape_str(train_.program.shape(v)) + ", the value has " + shape_str(value.shape));
  if (spmd_) spmd_->set_value(v, value);
  std::memcpy(exec_->data(v), value.ptr(), size_t(value.size()) * sizeof(float));
}

void Trainer::check_data(const data::Dataset& ds, const std::string& split) const {
  const std::string where = project_.display_name() + ": data (" + split + " split): ";
  const Shape& model_in = train_.program.shape(train_.input);
  Shape per_example(ds.features.shape.begin() + (ds.features.shape.empty() ? 0 : 1), ds.features.shape.end());
  if (per_example != Shape(model_in.begin() + 1, model_in.end()))
    throw Error(where + "examples have shape " + shape_str(per_example) + " but the Input node takes " +
                shape_str(Shape(model_in.begin() + 1, model_in.end())));
  const Shape& out = train_.program.shape(train_.output);
  if (project_.loss.type == "softmax_cross_entropy") {
    if (!ds.integer_labels)
      throw Error(where + "softmax_cross_entropy needs integer class labels, the data has targets of shape " +
                  shape_str(ds.targets.shape));
    if (ds.num_classes > out.back())
      throw Error(where + "labels go up to " + std::to_string(ds.num_classes - 1) + " but node '" + project_.loss.output +
                  "' gives " + std::to_string(out.back()) + " classes");
  } else {
    Shape t(ds.targets.shape.begin() + 1, ds.targets.shape.end());
    if (t != Shape(out.begin() + 1, out.end()))
      throw Error(where + "targets have shape " + shape_str(t) + " per example but node '" + project_.loss.output +
                  "' gives " + shape_str(Shape(out.begin() + 1, out.end())));
  }
}

void Trainer::feed(backends::cpu::Executor<float>& ex, const StepProgram& s, const Tensor& x, const Tensor& y) {
  const Shape& xs = s.program.shape(s.input);
  const Shape& ys = s.program.shape(s.target);
  if (x.size() != numel(xs) || y.size() != numel(ys))
    throw Error("batch of " + shape_str(x.shape) + " / " + shape_str(y.shape) + " does not fit the step's " + shape_str(xs) +
                " / " + shape_str(ys));
  std::memcpy(ex.data(s.input), x.ptr(), size_t(x.size()) * sizeof(float));
  std::memcpy(ex.data(s.target), y.ptr(), size_t(y.size()) * sizeof(float));
}

void Trainer::sync_from_devices() {
  for (const ModelParam& mp : train_.params) {
    Tensor t = spmd_->parameter(mp.path);
    std::memcpy(exec_->data(mp.value), t.ptr(), size_t(t.size()) * sizeof(float));
  }
}

profiler::Trace* Trainer::trace_for_next_step() {
  const int64_t n = step_ + 1;
  if (!trace_->detailed()) return trace_.get();  // light mode: every step's totals
  const bool in_range = n >= options_.trace_first && (options_.trace_last < 0 || n <= options_.trace_last);
  return in_range ? trace_.get() : nullptr;
}

double Trainer::train_step(const Tensor& features, const Tensor& targets) {
  profiler::Trace* trace = trace_for_next_step();
  const double wait = pending_data_wait_us_;
  pending_data_wait_us_ = 0;
  if (spmd_) {
    const double loss = spmd_->train_step(features, targets, project_.optimizer.learning_rate.at(step_), trace, wait);
    ++step_;
    return loss;
  }
  feed(*exec_, train_, features, targets);
  backends::StepContext ctx{step_, project_.optimizer.learning_rate.at(step_)};
  ctx.trace = trace;
  ctx.data_wait_us = wait;
  exec_->run(ctx);
  ++step_;
  return double(exec_->data(train_.loss)[0]);
}

backends::cpu::Executor<float>& Trainer::eval_executor(int64_t batch) {
  auto it = eval_.find(batch);
  if (it == eval_.end()) {
    auto prog = std::make_unique<StepProgram>(build_step(project_, report_, batch, false));
    auto ex = std::make_unique<backends::cpu::Executor<float>>(prog->program, prog->memory);
    exec_->share_persistent_with(*ex);
    it = eval_.emplace(batch, std::make_pair(std::move(prog), std::move(ex))).first;
  }
  return *it->second.second;
}

EvalEvent Trainer::evaluate(const data::Dataset& ds) {
  EvalEvent ev;
  ev.step = step_;
  if (ds.size() == 0) return ev;
  if (spmd_) sync_from_devices();  // evaluation runs on one device
  data::BatchLoader loader(ds, std::min(train_.batch, ds.size()), 0, false, false, 1);
  double loss = 0, acc = 0;
  data::Batch b;
  while (loader.next_in_epoch(b)) {
    const int64_t n = b.features.shape.at(0);
    auto& ex = eval_executor(n);
    const StepProgram& s = *eval_.at(n).first;
    feed(ex, s, b.features, b.targets);
    ex.run(backends::StepContext{step_, 0.0});
    loss += double(ex.data(s.loss)[0]) * double(n);
    if (s.accuracy >= 0) acc += double(ex.data(s.accuracy)[0]) * double(n);
    ev.examples += n;
  }
  ev.loss = loss / double(ev.examples);
  ev.accuracy = train_.accuracy >= 0 ? acc / double(ev.examples) : NAN;
  return ev;
}

void Trainer::run() {
  try {
    run_loop();
  } catch (const std::exception& e) {
    for (auto* l : listeners_) l->on_error(e.what());
    throw;
  }
}

void Trainer::run_loop() {
  cancelled_ = false;
  backends::cpu::set_threads(threads_);
  const project::TrainingSpec& t = project_.training;
  data::DataSplits splits = data::load_dataset(project_.data, project_.file.empty() ? std::filesystem::path(".")
                                                                                   : project_.file.parent_path());
  check_data(splits.train, "train");
  if (splits.test.size() > 0) check_data(splits.test, "test");
  if (splits.train.size() < t.batch_size)
    throw Error(project_.display_name() + ": training.batch_size: " + std::to_string(t.batch_size) +
                " is larger than the training split (" + std::to_string(splits.train.size()) + " examples)");
  data::BatchLoader loader(splits.train, t.batch_size, t.seed, t.shuffle, true, int(t.prefetch));
  int64_t start = 0;
  if (!options_.resume_from.empty()) {
    start = restore_checkpoint(options_.resume_from);
    loader.seek(start);
  } else if (options_.resume) {
    if (options_.checkpoint_dir.empty()) throw Error("resume: no checkpoint directory given");
    auto last = checkpoint::latest(options_.checkpoint_dir);
    if (!last) throw Error(options_.checkpoint_dir + ": no committed checkpoint to resume from");
    start = restore_checkpoint(last->string());
    loader.seek(start);
  }

  StartInfo info = plan_info();
  info.steps_per_epoch = loader.batches_per_epoch();
  info.total_steps = t.steps > 0 ? t.steps : t.epochs * info.steps_per_epoch;
  info.train_examples = splits.train.size();
  info.test_examples = splits.test.size();
  for (auto* l : listeners_) l->on_start(info);

  int64_t epoch = start / info.steps_per_epoch;
  for (int64_t i = start; i < info.total_steps && !cancelled_; ++i) {
    auto t0 = Clock::now();
    const double data_start = trace_->now_us();
    data::Batch b = loader.next();
    const double wait = seconds_since(t0);
    pending_data_wait_us_ = wait * 1e6;
    trace_->add(profiler::Span{0, profiler::Category::Data, "data", "", "batch", data_start, wait * 1e6, 0,
                               double(b.features.size() + b.targets.size()) * sizeof(float), step_});
    auto t1 = Clock::now();
    StepEvent ev;
    ev.learning_rate = project_.optimizer.learning_rate.at(step_);
    ev.loss = train_step(b.features, b.targets);
    ev.step_time_s = seconds_since(t1);
    if (train_.accuracy >= 0) ev.accuracy = spmd_ ? spmd_->last_accuracy() : double(exec_->data(train_.accuracy)[0]);
    ev.step = step_;
    ev.total_steps = info.total_steps;
    ev.epoch = b.epoch;
    ev.data_wait_s = wait;
    ev.examples_per_s = double(t.batch_size) / std::max(ev.step_time_s, 1e-12);
    last_metrics_["loss"] = ev.loss;
    if (!std::isnan(ev.accuracy)) last_metrics_["accuracy"] = ev.accuracy;
    for (auto* l : listeners_) l->on_step(ev);
    const bool epoch_end = (i + 1) % info.steps_per_epoch == 0;
    const bool last = i + 1 == info.total_steps;
    if (t.eval && splits.test.size() > 0 && ((epoch_end && t.steps == 0) || last) && !cancelled_) {
      EvalEvent e = evaluate(splits.test);
      e.epoch = epoch;
      last_metrics_["eval_loss"] = e.loss;
      last_metrics_["eval_accuracy"] = e.accuracy;
      for (auto* l : listeners_) l->on_eval(e);
    }
    if (epoch_end) ++epoch;
    const bool periodic = options_.save_every > 0 && (i + 1) % options_.save_every == 0;
    if (!options_.checkpoint_dir.empty() && (periodic || save_requested_.exchange(false)) && !last)
      save_checkpoint(options_.checkpoint_dir, i + 1, true);
  }
  if (!options_.checkpoint_dir.empty()) save_checkpoint(options_.checkpoint_dir, step_, false);
  wait_for_saves();
  for (auto* l : listeners_) l->on_finish(cancelled_);
}

}  // namespace shardlab::runtime
