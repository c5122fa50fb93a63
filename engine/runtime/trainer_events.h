// What a training run tells its listeners as it goes: how it starts (the plan, the mesh, the
// data), each step's metrics and timings, each evaluation, each committed checkpoint, warnings and
// the end. The CLI prints them and logs them (engine/api/run_log.h), the window draws them.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace shardlab::runtime {

struct StartInfo {
  int devices = 1;
  int processes = 1;  // processes the devices are spread over (mpirun, srun)
  std::string mesh;  // "data=2,model=4" when sharded
  int64_t collectives = 0;     // per step
  double comm_bytes = 0;       // per device per step
  int64_t total_steps = 0, steps_per_epoch = 0, batch = 0, param_count = 0, train_examples = 0, test_examples = 0;
  int64_t first_step = 0;  // steps done before this run began: a resumed run's checkpoint step, else 0
  int64_t microbatches = 1;  // gradient accumulation: the batch runs as this many microbatches
  int threads = 1;
  double step_flops = 0;
  // The plan's memory per device, in bytes: parameters, optimizer state, the step's arena (inputs included).
  double param_bytes = 0, opt_state_bytes = 0, arena_bytes = 0, total_bytes = 0;
  std::string precision = "float32";  // the precision policy (PrecisionSpec::str)
  bool loss_scaling = false;          // dynamic loss scaling (float16)
};

struct StepEvent {
  int64_t step = 0;  // 1-based
  int64_t total_steps = 0;
  int64_t epoch = 0;
  double loss = NAN, accuracy = NAN, learning_rate = 0;
  double step_time_s = 0, data_wait_s = 0, examples_per_s = 0;
  // CPU time the whole process used during the step (every device and thread): divided by
  // step_time_s, how many cores the step kept busy.
  double cpu_time_s = 0;
  // Seconds this process's devices spent in collectives, waiting for peers included (their mean).
  double comm_time_s = 0;
  // Dynamic loss scaling: whether this step overflowed and applied nothing, and the scale the next
  // step runs with (NaN without loss scaling).
  bool skipped = false;
  double loss_scale = NAN;
  int64_t skipped_steps = 0;  // so far, this one included
};

struct EvalEvent {
  int64_t step = 0, epoch = 0, examples = 0;
  double loss = NAN, accuracy = NAN;
};

class TrainerListener {
 public:
  virtual ~TrainerListener() = default;
  virtual void on_start(const StartInfo&) {}
  virtual void on_step(const StepEvent&) {}
  virtual void on_eval(const EvalEvent&) {}
  virtual void on_finish(bool cancelled) { (void)cancelled; }
  // The run stopped on an error (bad data, a label out of range); run() rethrows it afterwards.
  virtual void on_error(const std::string& message) { (void)message; }
  // A checkpoint of `step` is committed in `dir`. Called from the thread that wrote it (a
  // background save's own thread), so a listener that touches a UI must hand it over.
  virtual void on_saved(int64_t step, const std::string& dir) { (void)step, (void)dir; }
  // Something the user should know that does not stop the run (a continued run's seed or optimizer
  // differs from the one it started with).
  virtual void on_warning(const std::string& message) { (void)message; }
};

}  // namespace shardlab::runtime
