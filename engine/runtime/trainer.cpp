#include "engine/runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <numeric>

#include "engine/backends/processes.h"
#include "engine/data/batch_loader.h"
#include "engine/graph/init.h"
#include "engine/runtime/data_fit.h"
#include "engine/project/run_overrides.h"
#include "engine/runtime/checkpoint_session.h"
#include "engine/runtime/preflight.h"
#include "engine/sharding/layout.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

project::RunOverrides overrides_of(const TrainOptions& o) {
  project::RunOverrides r;
  r.batch_size = o.batch_size;
  r.accumulate = o.accumulate;
  r.pipeline_schedule = o.pipeline_schedule;
  r.seed = o.seed;
  r.steps = o.steps;
  r.epochs = o.epochs;
  r.learning_rate = o.learning_rate;
  r.dtype = o.dtype;
  r.param_dtype = o.param_dtype;
  r.matmul_precision = o.matmul_precision;
  return r;
}

}  // namespace

// The run's own project: the options laid over it, in the sections checkpoint.json records too.
Trainer::Trainer(project::Project project, TrainOptions options)
    : project_(project::with_overrides(std::move(project), overrides_of(options))), options_(options) {
  trace_ = options_.trace ? options_.trace : std::make_shared<profiler::Trace>(options_.trace_detailed ? profiler::Trace::Mode::Detailed : profiler::Trace::Mode::Light,
                                             options_.trace_keep);
  backends::BackendOptions bo{options_.threads, options_.processes};
  // Processes that share a machine share its cores.
  if (bo.processes && bo.threads == 0)
    bo.threads = std::max(1, int(std::thread::hardware_concurrency()) / bo.processes->processes_on_this_host());
  backend_ = backends::make_backend(options_.backend, bo);
  threads_ = backend_->threads();
  if (backend_->kind() == backends::DeviceKind::Cuda) trace_->set_device_label("GPU");
  // Everything `check` refuses, refused here before anything is allocated, in the same words. The
  // data is checked in run() against what it loads, with the same messages.
  PreflightOptions checks;
  checks.mesh = options_.mesh;
  checks.rules = options_.rules;
  checks.devices = options_.devices;
  const Preflight preflight_result = preflight(project_, *backend_, checks);
  preflight_result.throw_first();
  // The mesh and rules that run are the project's from here on, as the run saves it.
  if (!options_.mesh.empty()) project_.mesh = sharding::mesh_to_json(preflight_result.mesh);
  if (!options_.rules.empty()) project_.logical_axis_rules = sharding::rules_to_json(preflight_result.rules);
  // The step the check compiled is the step that runs: compiled once.
  session_ = std::make_unique<SpmdSession>(project_, preflight_result.mesh, preflight_result.rules, project_.training.batch_size,
                                           backend_, sharding::WeightUpdate::Sharded,
                                           SpmdSession::Compiled{preflight_result.step, preflight_result.plan});
  CheckpointSettings cs;
  cs.dir = options_.checkpoint_dir;
  cs.resume_from = options_.resume_from;
  cs.resume = options_.resume;
  cs.continue_run = options_.continue_run;
  cs.start_over = options_.start_over;
  cs.keep = options_.keep;
  cs.max_shard_bytes = options_.max_shard_bytes;
  cs.processes = options_.processes;
  checkpoints_ = std::make_unique<CheckpointSession>(*session_, project_, std::move(cs), listeners_);
}

Trainer::~Trainer() = default;

void Trainer::save_checkpoint(const std::string& root, int64_t data_position, bool background) {
  checkpoints_->save(root, data_position, last_metrics_, background);
}
int64_t Trainer::restore_checkpoint(const std::string& step_dir) { return checkpoints_->restore(step_dir); }
void Trainer::wait_for_saves() { checkpoints_->wait_for_saves(); }
void Trainer::wait_for_saves_or(const std::function<std::string(const std::string&)>& message) {
  checkpoints_->wait_for_saves_or(message);
}
std::vector<std::string> Trainer::state_names() const { return runtime::state_names(*session_); }
int Trainer::state_value(const std::string& name) const { return runtime::state_value(*session_, name); }

StartInfo Trainer::plan_info() const {
  StartInfo s;
  const StepProgram& g = session_->global_step();
  s.batch = g.batch;
  s.microbatches = g.microbatches;
  s.threads = threads_;
  s.step_flops = g.step_flops;
  for (const ModelParam& mp : g.params) s.param_count += numel(mp.info.shape);
  const plan::MemoryPlan& m = session_->partitioned().memory;
  s.devices = int(session_->mesh().device_count());
  if (options_.processes) s.processes = options_.processes->size();
  if (s.devices > 1) {
    s.mesh = session_->mesh().str();
    s.collectives = int64_t(session_->partitioned().collectives.size());
    for (const auto& c : session_->partitioned().collectives) s.comm_bytes += c.bytes;
  }
  s.param_bytes = double(m.param_bytes);
  s.opt_state_bytes = double(m.opt_state_bytes);
  s.arena_bytes = double(m.arena_bytes + m.staging_bytes);
  s.total_bytes = double(m.total_bytes());
  s.precision = project_.precision.str();
  s.loss_scaling = session_->loss_scaling();
  return s;
}

const ModelParam& Trainer::param(const std::string& path) const { return find_param(session_->global_step(), path); }

std::vector<std::string> Trainer::parameter_paths() const { return session_->parameter_paths(); }

Tensor Trainer::parameter(const std::string& path) const { return session_->parameter(path); }

void Trainer::set_parameter(const std::string& path, const Tensor& value) {
  const ModelParam& mp = param(path);
  if (value.shape != mp.info.shape)
    throw Error("parameter '" + path + "' has shape " + shape_str(mp.info.shape) + ", the value has " + shape_str(value.shape));
  session_->set_parameter(path, value);
}

Tensor Trainer::state(const std::string& name) const {
  return session_->value(state_value(name));
}

void Trainer::set_state(const std::string& name, const Tensor& value) {
  const int v = state_value(name);
  const Shape& shape = session_->global_step().program.shape(v);
  if (value.shape != shape)
    throw Error("'" + name + "' has shape " + shape_str(shape) + ", the value has " + shape_str(value.shape));
  session_->set_value(v, value);
}

profiler::Trace* Trainer::trace_for_next_step() {
  const int64_t n = steps_done() + 1;
  if (!trace_->detailed()) return trace_.get();  // light mode: every step's totals
  const bool in_range = n >= options_.trace_first && (options_.trace_last < 0 || n <= options_.trace_last);
  return in_range ? trace_.get() : nullptr;
}

double Trainer::train_step(const Tensor& features, const Tensor& targets) {
  profiler::Trace* trace = trace_for_next_step();
  const double wait = pending_data_wait_us_;
  pending_data_wait_us_ = 0;
  return session_->train_step(features, targets, project_.optimizer.learning_rate.at(session_->updates_applied()), trace, wait);
}

EvalEvent Trainer::evaluate(const data::Dataset& ds) {
  EvalEvent ev;
  ev.step = steps_done();
  if (ds.size() == 0) return ev;
  data::BatchLoader loader(ds, std::min(session_->global_step().batch, ds.size()), 0, false, false, 1);
  double loss = 0, acc = 0;
  data::Batch b;
  while (loader.next_in_epoch(b)) {
    const int64_t n = b.features.shape.at(0);
    const SpmdSession::Eval e = session_->evaluate(b.features, b.targets);
    loss += e.loss * double(n);
    acc += e.accuracy * double(n);
    ev.examples += n;
  }
  ev.loss = loss / double(ev.examples);
  ev.accuracy = session_->global_step().accuracy >= 0 ? acc / double(ev.examples) : NAN;
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
  const project::TrainingSpec& t = project_.training;
  data::DataSplits splits = data::load_dataset(project_.data, data_base_dir(project_));
  {
    const StepProgram& g = session_->global_step();
    const std::vector<Diagnostic> misfits = data_fit_problems(
        project_, {data::shape_of(splits.train), data::shape_of(splits.test)}, g.program.shape(g.input), g.program.shape(g.output));
    if (!misfits.empty()) throw Error(misfits.front().message);
  }
  // Over several processes each loads only the rows of each batch its own devices are fed, in the
  // global order every process shares.
  data::BatchLoader loader(splits.train, t.batch_size, t.seed, t.shuffle, true, int(t.prefetch),
                           options_.processes ? session_->batch_rows_fed() : std::vector<char>{});
  const int64_t start = checkpoints_->claim_and_restore();
  if (start > 0) loader.seek(start);

  StartInfo info = plan_info();
  info.steps_per_epoch = loader.batches_per_epoch();
  info.total_steps = t.steps > 0 ? t.steps : t.epochs * info.steps_per_epoch;
  info.first_step = start;
  info.train_examples = splits.train.size();
  info.test_examples = splits.test.size();
  for (auto* l : listeners_) l->on_start(info);

  int64_t epoch = start / info.steps_per_epoch;
  for (int64_t i = start; i < info.total_steps && !stop_requested(); ++i) {
    auto t0 = Clock::now();
    const double data_start = trace_->now_us();
    data::Batch b = loader.next();
    const double wait = seconds_since(t0);
    pending_data_wait_us_ = wait * 1e6;
    trace_->add(profiler::Span{session_->first_local_device(), profiler::Category::Data, "data", "", "batch", data_start, wait * 1e6, 0,
                               double(b.features.size() + b.targets.size()) * sizeof(float), steps_done()});
    auto t1 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    StepEvent ev;
    ev.learning_rate = project_.optimizer.learning_rate.at(session_->updates_applied());
    ev.loss = train_step(b.features, b.targets);
    if (session_->loss_scaling()) {
      ev.skipped = session_->loss_scale().last_skipped;
      ev.loss_scale = session_->loss_scale().scale;
      ev.skipped_steps = session_->loss_scale().skipped;
    }
    ev.step_time_s = seconds_since(t1);
    ev.cpu_time_s = process_cpu_seconds() - cpu0;
    ev.comm_time_s = session_->last_comm_seconds();
    if (session_->global_step().accuracy >= 0) ev.accuracy = session_->last_accuracy();
    ev.step = steps_done();
    ev.total_steps = info.total_steps;
    ev.epoch = b.epoch;
    ev.data_wait_s = wait;
    ev.examples_per_s = double(t.batch_size) / std::max(ev.step_time_s, 1e-12);
    last_metrics_["loss"] = ev.loss;
    if (!std::isnan(ev.accuracy)) last_metrics_["accuracy"] = ev.accuracy;
    for (auto* l : listeners_) l->on_step(ev);
    const bool epoch_end = (i + 1) % info.steps_per_epoch == 0;
    const bool last = i + 1 == info.total_steps;
    // Over several processes every decision below must be every process's: a stop asked for
    // mid-step waits for the agreement at the next step (stop_requested).
    const bool stopping = !options_.processes && cancelled_;
    if (t.eval && splits.test.size() > 0 && ((epoch_end && t.steps == 0) || last) && !stopping) {
      EvalEvent e = evaluate(splits.test);
      e.epoch = epoch;
      last_metrics_["eval_loss"] = e.loss;
      last_metrics_["eval_accuracy"] = e.accuracy;
      for (auto* l : listeners_) l->on_eval(e);
    }
    if (epoch_end) ++epoch;
    const bool periodic = options_.save_every > 0 && (i + 1) % options_.save_every == 0;
    bool requested = false;
    if (!options_.checkpoint_dir.empty()) {
      requested = save_requested_.exchange(false);
      if (options_.processes) requested = options_.processes->any(requested);
    }
    if (!options_.checkpoint_dir.empty() && (periodic || requested) && !last)
      save_checkpoint(options_.checkpoint_dir, i + 1, true);
    // A background save that failed stops the run at once, saying where it stopped, rather than
    // at the next save or the end.
    if (checkpoints_->save_failed()) {
      wait_for_saves_or([&](const std::string& e) {
        return e + "; training stopped after step " + std::to_string(steps_done()) + " (the newest committed checkpoint is the one before)";
      });
    }
  }
  if (!options_.checkpoint_dir.empty()) save_checkpoint(options_.checkpoint_dir, steps_done(), false);
  wait_for_saves();
  checkpoints_->release();
  // No process reports the end before the last checkpoint is committed.
  if (options_.processes) options_.processes->barrier();
  for (auto* l : listeners_) l->on_finish(cancelled_);
}

bool Trainer::stop_requested() {
  if (!options_.processes) return cancelled_;
  // Over several processes only the agreement decides: a cancel that lands while this process
  // waits inside any() (a SIGTERM wakes it there) was not counted, so this process goes on with
  // the others and the next agreement stops them all.
  if (!options_.processes->any(cancelled_)) return false;
  cancelled_ = true;
  if (options_.on_stop_agreed) options_.on_stop_agreed();
  return true;
}

}  // namespace shardlab::runtime
