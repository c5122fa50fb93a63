// One training step run SPMD on the virtual CPU devices of a mesh: each device is a thread with
// its own executor and buffers, running the partitioned program on its blocks; collectives go
// through shared memory. Parameters are initialised globally (so they do not depend on the mesh)
// and each device keeps its block.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cpu/executor.h"
#include "engine/sharding/partitioner.h"

namespace shardlab::runtime {

class SpmdSession {
 public:
  // `threads_per_device`: OpenMP threads inside each device (0: cores / devices, at least 1).
  SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules, int64_t batch,
              int threads_per_device = 0);
  ~SpmdSession();

  const sharding::PartitionedStep& partitioned() const { return step_; }
  const StepProgram& global_step() const { return global_; }
  const sharding::Mesh& mesh() const { return mesh_; }

  std::vector<std::string> parameter_paths() const;
  Tensor parameter(const std::string& path) const;  // assembled from the devices' blocks
  void set_parameter(const std::string& path, const Tensor& value);
  // Any parameter or optimizer-state value of the global step, assembled or split.
  Tensor value(int global) const;
  void set_value(int global, const Tensor& t);

  // One step on a global batch; returns the loss before the update (as Trainer::train_step).
  // `trace`, when given, records every device's spans and summary.
  double train_step(const Tensor& features, const Tensor& targets, double learning_rate, profiler::Trace* trace = nullptr,
                    double data_wait_us = 0);
  double last_accuracy() const { return accuracy_; }
  int64_t steps_done() const { return step_count_; }
  // Seconds the last step's devices spent inside collectives, averaged over devices.
  double last_comm_seconds() const { return comm_seconds_; }

 private:
  const ModelParam& param(const std::string& path) const;

  project::Project project_;
  sharding::Mesh mesh_;
  StepProgram global_;
  sharding::PartitionedStep step_;
  std::unique_ptr<backends::cpu::ThreadCollectives> comm_;
  std::vector<std::unique_ptr<backends::cpu::Executor<float>>> devices_;
  int threads_per_device_ = 1;
  int64_t step_count_ = 0;
  double accuracy_ = 0, comm_seconds_ = 0;
};

}  // namespace shardlab::runtime
