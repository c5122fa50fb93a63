#include "engine/runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <numeric>

#include "engine/backends/processes.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/checkpoint/sharded.h"
#include "engine/data/batch_loader.h"
#include "engine/graph/init.h"
#include "engine/runtime/data_fit.h"
#include "engine/project/run_overrides.h"
#include "engine/runtime/preflight.h"
#include "engine/runtime/process_checkpoint.h"
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
  session_ = std::make_unique<SpmdSession>(project_, preflight_result.mesh, preflight_result.rules,
                                           project_.training.batch_size, backend_);
}

Trainer::~Trainer() {
  if (saver_.joinable()) saver_.join();
}

void Trainer::wait_for_saves() {
  wait_for_saves_or([](const std::string& e) { return e; });
}

void Trainer::wait_for_saves_or(const std::function<std::string(const std::string&)>& message) {
  if (saver_.joinable()) saver_.join();
  save_failed_ = false;
  if (!save_error_.empty()) {
    std::string e = save_error_;
    save_error_.clear();
    throw Error(message(e));
  }
}

void Trainer::save_checkpoint(const std::string& root, int64_t data_position, bool background) {
  wait_for_saves();
  nlohmann::ordered_json meta;
  meta["format"] = "shardlab.checkpoint";
  meta["version"] = 1;
  meta["project"] = nlohmann::ordered_json::parse(project::to_json_string(project_));
  meta["data_position"] = data_position;
  meta["seed"] = project_.training.seed;
  const bool sharded = session_->mesh().device_count() > 1;
  meta["mesh"] = sharded ? session_->mesh().str() : std::string("(one device)");
  nlohmann::ordered_json specs = nlohmann::ordered_json::object();
  for (const std::string& n : state_names()) {
    const int v = state_value(n);
    specs[n] = sharded ? session_->partitioned().sharding[size_t(v)].str() : std::string("replicated");
  }
  meta["shardings"] = specs;
  // What a checkpoint browser lists beside the step: the newest loss and evaluation.
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [k, v] : last_metrics_)
    if (std::isfinite(v)) metrics[k] = v;
  meta["metrics"] = metrics;
  if (session_->loss_scaling()) {
    const SpmdSession::LossScale& ls = session_->loss_scale();
    meta["loss_scale"] = {{"scale", ls.scale}, {"good_steps", ls.good_steps}, {"skipped", ls.skipped}};
  }
  // Each array as the step holds it: a bfloat16 parameter is written as BF16.
  checkpoint::StoredDTypes dtypes;
  for (const std::string& n : state_names())
    if (const DType d = session_->global_step().program.dtype(state_value(n)); is_16bit(d))
      dtypes[n] = d == DType::BF16 ? checkpoint::StoredDType::BF16 : checkpoint::StoredDType::F16;
  const int64_t step = steps_done();
  if (options_.processes) {
    // Each process writes its own devices' blocks, in the foreground: every process takes part.
    save_blocks(*session_, *options_.processes, state_arrays(dtypes), root, step, std::move(meta), [&](const std::filesystem::path& dir) {
      if (dir_lock_) dir_lock_->check_held();
      checkpoint::prune(root, options_.keep);
      for (auto* l : listeners_) l->on_saved(step, dir.string());
    });
    return;
  }
  // Copy every array now (the step may then go on), write it later. Each is copied straight into
  // the bytes it is stored as, one at a time: the state is held once more, not twice.
  checkpoint::SafetensorsFile tensors;
  std::string error;
  try {
    for (const std::string& n : state_names()) {
      const auto d = dtypes.find(n);
      checkpoint::SafetensorsFile one = checkpoint::tensor_file({{n, state(n)}}, step, {{n, d == dtypes.end() ? checkpoint::StoredDType::F32 : d->second}});
      tensors.tensors.push_back(std::move(one.tensors.front()));
      tensors.metadata = std::move(one.metadata);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const int keep = options_.keep;
  const uint64_t shard_bytes = options_.max_shard_bytes;
  auto write = [this, root, step, keep, shard_bytes, error, tensors = std::move(tensors), meta = std::move(meta)]() mutable {
    try {
      if (!error.empty()) throw Error(error);  // a NaN found while copying: nothing is written
      const std::filesystem::path dir = checkpoint::save(root, step, std::move(tensors), meta, shard_bytes);
      if (dir_lock_) dir_lock_->check_held();
      checkpoint::prune(root, keep);
      for (auto* l : listeners_) l->on_saved(step, dir.string());
    } catch (const std::exception& e) {
      save_error_ = "checkpoint of step " + std::to_string(step) + " failed: " + e.what();
      save_failed_ = true;
    }
  };
  if (background) saver_ = std::thread(std::move(write));
  else {
    write();
    wait_for_saves();
  }
}

std::vector<StateArray> Trainer::state_arrays(const checkpoint::StoredDTypes& dtypes) const {
  std::vector<StateArray> out;
  for (const std::string& n : state_names()) {
    const auto d = dtypes.find(n);
    out.push_back({n, state_value(n), d == dtypes.end() ? checkpoint::StoredDType::F32 : d->second});
  }
  return out;
}

int64_t Trainer::restore_checkpoint(const std::string& dir) {
  backends::Processes* procs = options_.processes.get();
  // Over several processes, a checkpoint of blocks (saved over processes) is read by every
  // process, each reading only the blocks its devices need; one of whole arrays is read by process
  // 0, which hands every array to the others, so they need not see its files. An error in either
  // is every process's.
  int blocks = 0;
  if (procs) {
    if (writes_files()) blocks = holds_blocks(dir) ? 1 : 0;
    procs->broadcast(&blocks, sizeof blocks, 0);
  }
  checkpoint::Loaded c;
  std::string error;
  if (blocks) {
    checkpoint::LoadedBlocks b = restore_blocks(*session_, *procs, state_arrays({}), dir);
    c.step = b.step;
    c.meta = std::move(b.meta);
    c.dtypes = std::move(b.dtypes);
  } else if (writes_files()) {
    try {
      c = checkpoint::load(dir);
      for (const std::string& n : state_names())
        if (!c.arrays.count(n)) throw Error(dir + ": the checkpoint has no array '" + n + "' (saved from another model?)");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (procs) error = backends::broadcast_string(*procs, error, 0);
  if (!error.empty()) throw Error(error);
  int64_t position[2] = {c.step, writes_files() ? c.meta.value("data_position", c.step) : 0};
  if (procs) procs->broadcast(position, sizeof position, 0);
  // An array stored in another dtype than this project's policy keeps it converts as it loads;
  // say so once (process 0 has read the files).
  if (writes_files()) {
    std::map<std::string, int> conversions;  // "BF16 -> float32" -> arrays
    for (const std::string& n : state_names()) {
      const DType want = session_->global_step().program.dtype(state_value(n));
      const checkpoint::StoredDType got = c.dtypes.at(n);
      const checkpoint::StoredDType want_stored = want == DType::BF16 ? checkpoint::StoredDType::BF16
                                                  : want == DType::F16 ? checkpoint::StoredDType::F16
                                                                       : checkpoint::StoredDType::F32;
      if (got != want_stored) ++conversions[std::string(checkpoint::dtype_name(got)) + " to " + dtype_name(want)];
    }
    for (const auto& [what, count] : conversions)
      for (auto* l : listeners_)
        l->on_warning(dir + ": " + std::to_string(count) + (count == 1 ? " array was" : " arrays were") + " converted from " + what +
                      ": the checkpoint was saved under another precision policy than this project's (" + project_.precision.str() + ")");
  }
  // The loss scale where both the run and the checkpoint scale; else the project's initial one.
  if (session_->loss_scaling()) {
    double ls[3] = {session_->loss_scale().scale, 0, 0};
    if (writes_files() && c.meta.contains("loss_scale")) {
      const auto& j = c.meta["loss_scale"];
      ls[0] = j.value("scale", ls[0]);
      ls[1] = j.value("good_steps", 0.0);
      ls[2] = j.value("skipped", 0.0);
    }
    if (procs) procs->broadcast(ls, sizeof ls, 0);
    SpmdSession::LossScale s;
    s.scale = ls[0];
    s.good_steps = int64_t(ls[1]);
    s.skipped = int64_t(ls[2]);
    session_->set_loss_scale(s);
  }
  for (const std::string& n : state_names()) {
    if (blocks) break;  // restored above, each process its own devices' blocks
    Tensor t = writes_files() ? c.arrays.at(n) : Tensor(session_->global_step().program.shape(state_value(n)));
    if (procs) {
      if (t.shape != session_->global_step().program.shape(state_value(n))) error = "'" + n + "' has shape " + shape_str(t.shape);
      error = backends::broadcast_string(*procs, error, 0);
      if (!error.empty()) throw Error(dir + ": " + error + ", unlike the model's");
      procs->broadcast(t.ptr(), size_t(t.size()) * sizeof(float), 0);
    }
    set_state(n, t);
  }
  session_->set_steps_done(position[0]);
  return position[1];
}

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

std::vector<std::string> Trainer::state_names() const {
  const StepProgram& g = session_->global_step();
  std::vector<std::string> out;
  for (const ModelParam& mp : g.params) out.push_back("params/" + mp.path);
  for (const ModelParam& mp : g.params)
    for (int v : mp.state) {
      const std::string& n = g.program.values[size_t(v)].name;  // "<path>/<mu|nu|trace>"
      out.push_back("opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path);
    }
  return out;
}

int Trainer::state_value(const std::string& name) const {
  const StepProgram& g = session_->global_step();
  for (const ModelParam& mp : g.params) {
    if (name == "params/" + mp.path) return mp.value;
    for (int v : mp.state) {
      const std::string& n = g.program.values[size_t(v)].name;
      if (name == "opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path) return v;
    }
  }
  throw Error("the model has no state array '" + name + "'");
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
  const int64_t start = claim_and_restore();
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
    if (save_failed_) {
      wait_for_saves_or([&](const std::string& e) {
        return e + "; training stopped after step " + std::to_string(steps_done()) + " (the newest committed checkpoint is the one before)";
      });
    }
  }
  if (!options_.checkpoint_dir.empty()) save_checkpoint(options_.checkpoint_dir, steps_done(), false);
  wait_for_saves();
  dir_lock_.reset();
  // No process reports the end before the last checkpoint is committed.
  if (options_.processes) options_.processes->barrier();
  for (auto* l : listeners_) l->on_finish(cancelled_);
}

bool Trainer::writes_files() const { return !options_.processes || options_.processes->rank() == 0; }

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

// Claims the checkpoint directory (process 0 alone, over several processes: its refusal reaches
// every process) and restores the step the run continues from, on every process. Returns the data
// position to continue at.
int64_t Trainer::claim_and_restore() {
  backends::Processes* procs = options_.processes.get();
  ResumePoint at;
  std::string error;
  if (writes_files()) {
    try {
      at = claim_checkpoint_dir();
    } catch (const std::exception& e) {
      if (!procs) throw;
      error = e.what();
    }
  }
  if (procs) {
    error = backends::broadcast_string(*procs, error, 0);
    if (!error.empty()) throw Error(error);
    at.dir = backends::broadcast_string(*procs, at.dir, 0);
    at.advice = backends::broadcast_string(*procs, at.advice, 0);
  }
  if (at.dir.empty()) return 0;
  if (at.advice.empty()) return restore_checkpoint(at.dir);
  try {
    return restore_checkpoint(at.dir);
  } catch (const Error& e) {
    throw Error(at.dir + ": the newest checkpoint cannot be read: " + e.what() + at.advice);
  }
}

// Locks the checkpoint directory, makes sure it holds only this run's steps (or refuses), and
// names the step the run continues from (none: a fresh start).
Trainer::ResumePoint Trainer::claim_checkpoint_dir() {
  dir_lock_.reset();
  const std::string& root = options_.checkpoint_dir;
  if (options_.resume && root.empty() && options_.resume_from.empty()) throw Error("resume: no checkpoint directory given");
  if (!root.empty()) {
    dir_lock_ = std::make_unique<checkpoint::DirectoryLock>(root);
    // Under the lock every temporary is a dead writer's: put back what it moved aside, clear the rest.
    for (const std::string& line : checkpoint::recover(root))
      for (auto* l : listeners_) l->on_warning(line);
    using checkpoint::ExistingRun;
    // An explicit step to continue from (resume_from) continues the directory's run too.
    const ExistingRun what = !options_.resume_from.empty() || options_.continue_run ? ExistingRun::Continue
                             : options_.resume                                       ? ExistingRun::Resume
                             : options_.start_over                                   ? ExistingRun::StartOver
                                                                                     : ExistingRun::Refuse;
    const checkpoint::Claim claim = checkpoint::claim_directory(root, checkpoint::identity_of(project_), what);
    for (const std::string& w : claim.warnings)
      for (auto* l : listeners_) l->on_warning(w);
    if (!claim.moved_to.empty())
      for (auto* l : listeners_) l->on_warning(root + ": the previous run's checkpoints are now in " + claim.moved_to.string());
    if (claim.resume && options_.resume_from.empty()) {
      // The newest step, or a refusal naming it: never an older step in its place.
      const std::vector<checkpoint::Entry> steps = checkpoint::list(root);
      const checkpoint::Entry& newest = steps.back();
      const std::string older = steps.size() > 1 ? steps[steps.size() - 2].dir.string() : std::string("<an older step directory>");
      const std::string advice = "; to continue from an older step, pass it as resume_from (--resume-from " + older + ")";
      if (!newest.error.empty())
        throw Error(newest.dir.string() + ": the newest checkpoint cannot be read: " + newest.error + advice);
      return ResumePoint{newest.dir.string(), advice};
    }
  }
  return ResumePoint{options_.resume_from, ""};
}

}  // namespace shardlab::runtime
