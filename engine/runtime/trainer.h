// The training loop: data with prefetch, steps, metrics, evaluation, cancellation between steps.
// It reports to listeners (the CLI prints, the GUI draws) and never touches a terminal itself.
#pragma once

#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/backends/backend.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/run_identity.h"
#include "engine/data/dataset.h"
#include "engine/profiler/trace.h"
#include "engine/project/project.h"
#include "engine/runtime/checkpoint_session.h"
#include "engine/runtime/process_checkpoint.h"
#include "engine/runtime/spmd_session.h"
#include "engine/runtime/train_step.h"
#include "engine/runtime/trainer_events.h"

namespace shardlab::runtime {

struct TrainOptions {
  int64_t steps = -1, epochs = -1, batch_size = -1;  // -1: the project's setting
  int64_t accumulate = -1;  // microbatches per step; -1: the project's training.accumulate
  std::string pipeline_schedule;  // "gpipe" or "1f1b"; empty: the project's training.pipeline_schedule
  int64_t seed = -1;
  std::optional<double> learning_rate;  // the schedule's constant value or its peak
  // Non-empty: override the project's precision.dtype, param_dtype, matmul_precision.
  std::string dtype, param_dtype, matmul_precision;
  int threads = 0;    // 0: every core
  std::string backend = "cpu";  // backends::make_backend's kind: "cpu" or "cuda"
  // A run over several processes (mpirun, srun): every process makes the same Trainer with the
  // same options; each runs its share of the mesh's devices, reads the same data and takes part in
  // every save and restore, which process 0 writes and reads. Null: this process runs alone.
  std::shared_ptr<backends::Processes> processes;
  // Called when every process has agreed to stop after a cancel (so none of them is dead): the
  // CLI then stops waiting to see whether a peer hangs.
  std::function<void()> on_stop_agreed;
  int devices = 0;    // virtual CPU devices; 0: as many as the mesh has
  std::string mesh;   // "data=8": overrides the project's mesh
  std::string rules;  // "batch=data": overrides the project's logical axis rules
  // Tracing: per-step totals are always kept; `trace_detailed` keeps every span of steps
  // [trace_first, trace_last] (1-based; trace_last < 0: to the end), the last `trace_keep` of them.
  bool trace_detailed = false;
  int64_t trace_first = 1, trace_last = -1;
  int trace_keep = 20;
  // A trace the caller keeps (a GUI reads it live while the run goes); its own mode and ring size
  // apply then. Null: the trainer makes one from the settings above.
  std::shared_ptr<profiler::Trace> trace;
  // Checkpoints under checkpoint_dir every save_every steps (and at the end), keeping the newest
  // `keep`; `resume` continues from the newest one there.
  std::string checkpoint_dir;
  int64_t save_every = 0;
  int keep = 3;
  bool resume = false;
  // A particular checkpoint step directory to continue from (a GUI's choice); wins over `resume`.
  std::string resume_from;
  // A fresh run into a checkpoint_dir holding another run's steps is refused unless told what to
  // do: `continue_run` continues that run as `resume` does (and starts afresh when there are no
  // steps); `start_over` moves its steps into checkpoint_dir/old-run-<id>/ and starts a new run.
  bool continue_run = false;
  bool start_over = false;
  // > 0: split each checkpoint's tensors over safetensors shards of at most this many bytes of
  // tensor data, with a model.safetensors.index.json, as Hugging Face does; 0: one file.
  uint64_t max_shard_bytes = 0;
};

class Trainer {
 public:
  // Builds the step and initialises parameters (from the seed); loads no data yet.
  Trainer(project::Project project, TrainOptions options = {});
  ~Trainer();

  void add_listener(TrainerListener* l) { listeners_.push_back(l); }
  // Loads the data and trains to the end or until cancel(); on an error it tells the listeners
  // (on_error) and throws Error.
  void run();
  // Thread-safe; takes effect between steps (over several processes, a cancel on any one stops
  // all of them after the same step).
  void cancel() { cancelled_ = true; }
  // Thread-safe: save a checkpoint under options.checkpoint_dir after the current step (the end of
  // the run saves one anyway).
  void request_save() { save_requested_ = true; }

  const project::Project& project() const { return project_; }
  // The global training step (before partitioning), and the session that runs it.
  const StepProgram& step_program() const { return session_->global_step(); }
  const SpmdSession& session() const { return *session_; }
  StartInfo plan_info() const;

  std::vector<std::string> parameter_paths() const;
  Tensor parameter(const std::string& path) const;
  void set_parameter(const std::string& path, const Tensor& value);

  // Everything a checkpoint holds: parameters ("params/<path>") and optimizer state
  // ("opt_state/<mu|nu|trace>/<path>"), as global arrays whatever the mesh.
  std::vector<std::string> state_names() const;
  Tensor state(const std::string& name) const;
  void set_state(const std::string& name, const Tensor& value);
  void set_steps_done(int64_t steps) { session_->set_steps_done(steps); }

  // Saves a checkpoint of the current state (arrays copied now, written on a background thread
  // when `background`); and restores one, on whatever mesh this trainer runs. Returns the
  // data-stream position the checkpoint recorded.
  void save_checkpoint(const std::string& root, int64_t data_position, bool background = false);
  int64_t restore_checkpoint(const std::string& step_dir);
  void wait_for_saves();
  // The same, the error (if any) worded by `message`.
  void wait_for_saves_or(const std::function<std::string(const std::string&)>& message);

  // One training step on an explicit batch (features [batch, ...], targets); returns the loss
  // computed before the update, as value_and_grad does.
  double train_step(const Tensor& features, const Tensor& targets);
  EvalEvent evaluate(const data::Dataset& ds);
  int64_t steps_done() const { return session_->steps_done(); }
  profiler::Trace& trace() { return *trace_; }

 private:
  const ModelParam& param(const std::string& path) const;
  int state_value(const std::string& name) const;
  void run_loop();
  bool stop_requested();
  profiler::Trace* trace_for_next_step();

  project::Project project_;
  TrainOptions options_;
  std::shared_ptr<backends::Backend> backend_;
  // Every step runs here, on a mesh of one device or many; it owns the parameters.
  std::unique_ptr<SpmdSession> session_;
  std::shared_ptr<profiler::Trace> trace_;
  double pending_data_wait_us_ = 0;
  std::vector<TrainerListener*> listeners_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> save_requested_{false};
  int threads_ = 1;
  std::map<std::string, double> last_metrics_;  // loss, accuracy, eval_loss, eval_accuracy of the newest step
  // Claims, saves and restores; last, so it goes (joining a background save) before what it uses.
  std::unique_ptr<CheckpointSession> checkpoints_;
};

}  // namespace shardlab::runtime
