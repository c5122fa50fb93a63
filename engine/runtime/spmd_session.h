// The one way a step runs: the training step built once, partitioned over a mesh (one device is a
// mesh of one), loaded on a backend, every device holding only its own blocks. Parameters are
// initialised globally (so they do not depend on the mesh) and each device keeps its block;
// evaluation runs the same way, sharded, on the training step's parameters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/backend.h"
#include "engine/sharding/partitioner.h"

namespace shardlab::profiler {
class Trace;
}

namespace shardlab::runtime {

class SpmdSession {
 public:
  // `update`: Replicated keeps optimizer state in its parameter's layout (to compare against).
  // A step already built and partitioned for this project, batch, mesh and rules (the design
  // check's, from preflight): the session loads it instead of compiling its own.
  struct Compiled {
    std::shared_ptr<const StepProgram> global;
    std::shared_ptr<const sharding::PartitionedStep> part;
  };
  SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules, int64_t batch,
              std::shared_ptr<backends::Backend> backend, sharding::WeightUpdate update = sharding::WeightUpdate::Sharded,
              const Compiled& compiled = {});
  // On the CPU backend with `threads_per_device` cores per virtual device (0: every core shared).
  SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules, int64_t batch,
              int threads_per_device = 0);
  ~SpmdSession();

  const sharding::PartitionedStep& partitioned() const { return step_; }
  const StepProgram& global_step() const { return global_; }
  const sharding::Mesh& mesh() const { return mesh_; }
  backends::Backend& backend() { return *backend_; }
  // The first of this process's devices (0 unless the run spans processes).
  int first_local_device() const { return exe_->local_devices().front(); }
  // Bytes each device holds: the training step's arena and the persistent state, plus the
  // evaluation steps' arenas once they have run.
  uint64_t bytes_per_device() const;

  std::vector<std::string> parameter_paths() const;
  Tensor parameter(const std::string& path) const;  // assembled from the devices' blocks
  void set_parameter(const std::string& path, const Tensor& value);
  // Any parameter or optimizer-state value of the global step, assembled or split.
  Tensor value(int global) const;
  void set_value(int global, const Tensor& t);

  // A checkpoint of blocks (checkpoint/blocks.h), written by each process for its own devices:
  // every distinct block of global value `v`, with the device of lowest index holding a current
  // copy of it, which writes it (in a pipeline, a parameter outside the Repeats is current only on
  // the stage that updates it).
  struct BlockPlace {
    Shape start, size;
    int device = 0;
  };
  std::vector<BlockPlace> blocks_of(int v) const;
  // The block of `v` each of this process's devices holds.
  std::vector<BlockPlace> local_blocks(int v) const;
  // Device `device`'s block of `v` (one of this process's devices).
  Tensor read_block(int v, int device) const;
  // Sets `v` on this process's devices, each device's part [start, start + size) given by `region`.
  void set_value_by_region(int v, const std::function<Tensor(const Shape& start, const Shape& size)>& region);
  // The process a device belongs to (each holds the same number of devices, in device order).
  int process_of(int device) const;

  // Which rows of a training batch this process's devices are fed (every microbatch's inputs and
  // targets): the rest need not be loaded. Empty when it feeds all of them.
  std::vector<char> batch_rows_fed() const;

  // One step on a global batch; returns the loss before the update (as value_and_grad does). Under
  // loss scaling a step whose gradients overflowed applies nothing and lowers the scale.
  // `trace`, when given, records every device's spans and summary.
  double train_step(const Tensor& features, const Tensor& targets, double learning_rate, profiler::Trace* trace = nullptr,
                    double data_wait_us = 0);
  double last_accuracy() const { return accuracy_; }
  // Steps run so far; a restored session continues from the checkpoint's step.
  int64_t steps_done() const { return step_count_; }
  void set_steps_done(int64_t steps) { step_count_ = steps; }
  // Updates applied so far: the steps run less those dynamic loss scaling skipped. Adam's bias
  // correction, the learning-rate schedule and the dropout key follow it, as Optax's count does
  // under a skipped step.
  int64_t updates_applied() const { return step_count_ - loss_scale_.skipped; }

  // Dynamic loss scaling (precision.loss_scale): the scale the next step runs with, the finite steps
  // in a row since it last changed, the steps skipped so far, and whether the last one was.
  struct LossScale {
    double scale = 1.0;
    int64_t good_steps = 0, skipped = 0;
    bool last_skipped = false;
  };
  bool loss_scaling() const { return global_.nonfinite >= 0; }
  const LossScale& loss_scale() const { return loss_scale_; }
  void set_loss_scale(const LossScale& s) { loss_scale_ = s; }
  // Seconds the last step's devices spent inside collectives, averaged over devices.
  double last_comm_seconds() const { return comm_seconds_; }

  // Mean loss and accuracy (NaN without one) over a global batch, forward only (dropout off),
  // sharded like training. Any batch size: one that the mesh's batch split does not divide is
  // evaluated as a divisible part plus its remainder repeated until it divides, which weighs every
  // example equally.
  struct Eval {
    double loss = 0, accuracy = 0;
  };
  Eval evaluate(const Tensor& features, const Tensor& targets);

 private:
  struct EvalStep;
  sharding::PipelineSchedule schedule() const;
  const ModelParam& param(const std::string& path) const;
  EvalStep& eval_step(int64_t batch);
  Eval evaluate_divisible(const Tensor& features, const Tensor& targets);
  void feed(backends::Executable& exe, const sharding::PartitionedStep& s, const StepProgram& g, const Tensor& x,
            const Tensor& y);
  // A value every device of its pipeline stage holds whole (a loss, a replicated parameter), read
  // into `out` on every process: where the stage's devices are on other processes (a pipeline
  // over processes), the first process that holds one broadcasts it. Every process calls it.
  void read_held(const backends::Executable& exe, const sharding::PartitionedStep& part, int local, float* out) const;

  project::Project project_;
  sharding::Mesh mesh_;
  sharding::LogicalRules rules_;
  std::shared_ptr<backends::Backend> backend_;
  sharding::WeightUpdate update_;
  StepProgram global_;
  sharding::PartitionedStep step_;
  std::unique_ptr<backends::Executable> exe_;
  std::map<int64_t, std::unique_ptr<EvalStep>> eval_;
  int64_t step_count_ = 0;
  LossScale loss_scale_;
  double accuracy_ = 0, comm_seconds_ = 0;
};

}  // namespace shardlab::runtime
