#include "engine/runtime/checkpoint_session.h"

#include <cmath>

#include "engine/backends/processes.h"
#include "engine/checkpoint/checkpoint_meta.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/checkpoint/sharded.h"
#include "engine/project/project.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

std::vector<std::string> state_names(const SpmdSession& session) {
  const StepProgram& g = session.global_step();
  std::vector<std::string> out;
  for (const ModelParam& mp : g.params) out.push_back("params/" + mp.path);
  for (const ModelParam& mp : g.params)
    for (int v : mp.state) {
      const std::string& n = g.program.values[size_t(v)].name;  // "<path>/<mu|nu|trace>"
      out.push_back("opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path);
    }
  return out;
}

int state_value(const SpmdSession& session, const std::string& name) {
  const StepProgram& g = session.global_step();
  for (const ModelParam& mp : g.params) {
    if (name == "params/" + mp.path) return mp.value;
    for (int v : mp.state) {
      const std::string& n = g.program.values[size_t(v)].name;
      if (name == "opt_state/" + n.substr(mp.path.size() + 1) + "/" + mp.path) return v;
    }
  }
  throw Error("the model has no state array '" + name + "'");
}

CheckpointSession::CheckpointSession(SpmdSession& session, const project::Project& project, CheckpointSettings settings,
                                     const std::vector<TrainerListener*>& listeners)
    : session_(session), project_(project), settings_(std::move(settings)), listeners_(listeners) {}

CheckpointSession::~CheckpointSession() {
  if (saver_.joinable()) saver_.join();
}

bool CheckpointSession::writes_files() const { return !settings_.processes || settings_.processes->rank() == 0; }

void CheckpointSession::warn(const std::string& message) const {
  for (auto* l : listeners_) l->on_warning(message);
}

void CheckpointSession::wait_for_saves() {
  wait_for_saves_or([](const std::string& e) { return e; });
}

void CheckpointSession::wait_for_saves_or(const std::function<std::string(const std::string&)>& message) {
  if (saver_.joinable()) saver_.join();
  save_failed_ = false;
  if (!save_error_.empty()) {
    std::string e = save_error_;
    save_error_.clear();
    throw Error(message(e));
  }
}

std::vector<StateArray> CheckpointSession::state_arrays(const checkpoint::StoredDTypes& dtypes) const {
  std::vector<StateArray> out;
  for (const std::string& n : state_names(session_)) {
    const auto d = dtypes.find(n);
    out.push_back({n, state_value(session_, n), d == dtypes.end() ? checkpoint::StoredDType::F32 : d->second});
  }
  return out;
}

void CheckpointSession::save(const std::string& root, int64_t data_position, const std::map<std::string, double>& metrics,
                             bool background) {
  wait_for_saves();
  nlohmann::ordered_json meta;
  meta["format"] = checkpoint::kMetaFormat;
  meta["version"] = checkpoint::kMetaVersionWhole;
  meta["project"] = nlohmann::ordered_json::parse(project::to_json_string(project_));
  meta["data_position"] = data_position;
  meta["seed"] = project_.training.seed;
  const bool sharded = session_.mesh().device_count() > 1;
  meta["mesh"] = sharded ? session_.mesh().str() : std::string("(one device)");
  nlohmann::ordered_json specs = nlohmann::ordered_json::object();
  for (const std::string& n : state_names(session_)) {
    const int v = state_value(session_, n);
    specs[n] = sharded ? session_.partitioned().sharding[size_t(v)].str() : std::string("replicated");
  }
  meta["shardings"] = specs;
  // What a checkpoint browser lists beside the step: the newest loss and evaluation.
  nlohmann::ordered_json shown = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metrics)
    if (std::isfinite(v)) shown[k] = v;
  meta["metrics"] = shown;
  if (session_.loss_scaling()) {
    const SpmdSession::LossScale& ls = session_.loss_scale();
    meta["loss_scale"] = {{"scale", ls.scale}, {"good_steps", ls.good_steps}, {"skipped", ls.skipped}};
  }
  // Each array as the step holds it: a bfloat16 parameter is written as BF16.
  checkpoint::StoredDTypes dtypes;
  for (const std::string& n : state_names(session_))
    if (const DType d = session_.global_step().program.dtype(state_value(session_, n)); is_16bit(d))
      dtypes[n] = d == DType::BF16 ? checkpoint::StoredDType::BF16 : checkpoint::StoredDType::F16;
  const int64_t step = session_.steps_done();
  if (settings_.processes) {
    // Each process writes its own devices' blocks, in the foreground: every process takes part.
    auto committed = [&](const std::filesystem::path& dir) {
      if (dir_lock_) dir_lock_->check_held();
      checkpoint::prune(root, settings_.keep);
      for (auto* l : listeners_) l->on_saved(step, dir.string());
    };
    save_blocks(session_, *settings_.processes, state_arrays(dtypes), root, step, std::move(meta), committed);
    return;
  }
  // Copy every array now (the step may then go on), write it later. Each is copied straight into
  // the bytes it is stored as, one at a time: the state is held once more, not twice.
  checkpoint::SafetensorsFile tensors;
  std::string error;
  try {
    for (const std::string& n : state_names(session_)) {
      const auto d = dtypes.find(n);
      const checkpoint::StoredDType stored = d == dtypes.end() ? checkpoint::StoredDType::F32 : d->second;
      checkpoint::SafetensorsFile one = checkpoint::tensor_file({{n, session_.value(state_value(session_, n))}}, step, {{n, stored}});
      tensors.tensors.push_back(std::move(one.tensors.front()));
      tensors.metadata = std::move(one.metadata);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const int keep = settings_.keep;
  const uint64_t shard_bytes = settings_.max_shard_bytes;
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

int64_t CheckpointSession::restore(const std::string& dir) {
  backends::Processes* procs = settings_.processes.get();
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
    checkpoint::LoadedBlocks b = restore_blocks(session_, *procs, state_arrays({}), dir);
    c.step = b.step;
    c.meta = std::move(b.meta);
    c.dtypes = std::move(b.dtypes);
  } else if (writes_files()) {
    try {
      c = checkpoint::load(dir);
      for (const std::string& n : state_names(session_))
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
    for (const std::string& n : state_names(session_)) {
      const DType want = session_.global_step().program.dtype(state_value(session_, n));
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
  if (session_.loss_scaling()) {
    double ls[3] = {session_.loss_scale().scale, 0, 0};
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
    session_.set_loss_scale(s);
  }
  for (const std::string& n : state_names(session_)) {
    if (blocks) break;  // restored above, each process its own devices' blocks
    Tensor t = writes_files() ? c.arrays.at(n) : Tensor(session_.global_step().program.shape(state_value(session_, n)));
    if (procs) {
      if (t.shape != session_.global_step().program.shape(state_value(session_, n))) error = "'" + n + "' has shape " + shape_str(t.shape);
      error = backends::broadcast_string(*procs, error, 0);
      if (!error.empty()) throw Error(dir + ": " + error + ", unlike the model's");
      procs->broadcast(t.ptr(), size_t(t.size()) * sizeof(float), 0);
    }
    const Shape& shape = session_.global_step().program.shape(state_value(session_, n));
    if (t.shape != shape) throw Error("'" + n + "' has shape " + shape_str(shape) + ", the value has " + shape_str(t.shape));
    session_.set_value(state_value(session_, n), t);
  }
  session_.set_steps_done(position[0]);
  return position[1];
}

// Claims the checkpoint directory (process 0 alone, over several processes: its refusal reaches
// every process) and restores the step the run continues from, on every process. Returns the data
// position to continue at.
int64_t CheckpointSession::claim_and_restore() {
  backends::Processes* procs = settings_.processes.get();
  ResumePoint at;
  std::string error;
  if (writes_files()) {
    try {
      at = claim_directory();
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
  if (at.advice.empty()) return restore(at.dir);
  try {
    return restore(at.dir);
  } catch (const Error& e) {
    throw Error(at.dir + ": the newest checkpoint cannot be read: " + e.what() + at.advice);
  }
}

// Locks the checkpoint directory, makes sure it holds only this run's steps (or refuses), and
// names the step the run continues from (none: a fresh start).
CheckpointSession::ResumePoint CheckpointSession::claim_directory() {
  dir_lock_.reset();
  const std::string& root = settings_.dir;
  if (settings_.resume && root.empty() && settings_.resume_from.empty()) throw Error("resume: no checkpoint directory given");
  if (!root.empty()) {
    dir_lock_ = std::make_unique<checkpoint::DirectoryLock>(root);
    // Under the lock every temporary is a dead writer's: put back what it moved aside, clear the rest.
    for (const std::string& line : checkpoint::recover(root))
      warn(line);
    using checkpoint::ExistingRun;
    // An explicit step to continue from (resume_from) continues the directory's run too.
    const ExistingRun what = !settings_.resume_from.empty() || settings_.continue_run ? ExistingRun::Continue
                             : settings_.resume                                       ? ExistingRun::Resume
                             : settings_.start_over                                   ? ExistingRun::StartOver
                                                                                     : ExistingRun::Refuse;
    const checkpoint::Claim claim = checkpoint::claim_directory(root, checkpoint::identity_of(project_), what);
    for (const std::string& w : claim.warnings)
      warn(w);
    if (!claim.moved_to.empty())
      warn(root + ": the previous run's checkpoints are now in " + claim.moved_to.string());
    if (claim.resume && settings_.resume_from.empty()) {
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
  return ResumePoint{settings_.resume_from, ""};
}

}  // namespace shardlab::runtime
