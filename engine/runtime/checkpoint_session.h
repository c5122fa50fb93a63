// A training run's checkpoints, apart from its steps: claiming the checkpoint directory (its lock,
// a dead writer's leftovers, another run's steps), saving the training state (copied at once and
// written on a background thread in one process; each process its own blocks over several) and
// restoring it onto whatever mesh the run has, with the protocol that keeps processes agreeing on
// every outcome. The Trainer runs steps and asks this for the rest.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/run_identity.h"
#include "engine/project/project.h"
#include "engine/runtime/process_checkpoint.h"
#include "engine/runtime/spmd_session.h"
#include "engine/runtime/trainer_events.h"

namespace shardlab::backends {
class Processes;
}

namespace shardlab::runtime {

// Everything a checkpoint holds of `session`: parameters ("params/<path>") and optimizer state
// ("opt_state/<mu|nu|trace>/<path>"), in the order they are saved; and the session value of one.
std::vector<std::string> state_names(const SpmdSession& session);
int state_value(const SpmdSession& session, const std::string& name);  // throws naming an unknown one

struct CheckpointSettings {
  std::string dir;          // where the run saves (empty: nowhere)
  std::string resume_from;  // a step directory to continue from; wins over `resume`
  bool resume = false, continue_run = false, start_over = false;  // TrainOptions says what each does
  int keep = 3;
  uint64_t max_shard_bytes = 0;
  std::shared_ptr<backends::Processes> processes;  // null: this process alone
};

class CheckpointSession {
 public:
  // `session`, `project` and `listeners` are the run's and outlive this.
  CheckpointSession(SpmdSession& session, const project::Project& project, CheckpointSettings settings,
                    const std::vector<TrainerListener*>& listeners);
  ~CheckpointSession();  // waits for a background save

  // Claims the directory (process 0; its refusal reaches every process) and restores the step the
  // run continues from, on every process. Returns the data position to continue at (0: a fresh start).
  int64_t claim_and_restore();
  // Saves the current state as step session.steps_done() under `root`; `metrics` are what a
  // checkpoint browser lists beside the step. In the background where `background` (one process).
  void save(const std::string& root, int64_t data_position, const std::map<std::string, double>& metrics, bool background);
  // Restores a step directory onto the session's mesh; returns the data position it recorded.
  int64_t restore(const std::string& step_dir);
  void wait_for_saves();
  // The same, the error (if any) worded by `message`.
  void wait_for_saves_or(const std::function<std::string(const std::string&)>& message);
  // A background save failed: the run stops at once (wait_for_saves_or says why).
  bool save_failed() const { return save_failed_; }
  // The run is over: the directory's lock goes.
  void release() { dir_lock_.reset(); }

 private:
  // The step directory a run continues from ("": none), and what a failure to read it should add.
  struct ResumePoint {
    std::string dir, advice;
  };
  ResumePoint claim_directory();
  bool writes_files() const;  // process 0 of a run over processes, or a run alone
  std::vector<StateArray> state_arrays(const checkpoint::StoredDTypes& dtypes) const;
  void warn(const std::string& message) const;

  SpmdSession& session_;
  const project::Project& project_;
  CheckpointSettings settings_;
  const std::vector<TrainerListener*>& listeners_;
  std::thread saver_;
  // Held while a run writes into the directory; the destructor joins a background save first, so
  // the lock outlives every write.
  std::unique_ptr<checkpoint::DirectoryLock> dir_lock_;
  std::string save_error_;
  std::atomic<bool> save_failed_{false};  // set by a background save after save_error_
};

}  // namespace shardlab::runtime
