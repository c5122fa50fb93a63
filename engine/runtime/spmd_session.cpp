#include "engine/runtime/spmd_session.h"

#include <atomic>
#include <cstring>
#include <exception>
#include <omp.h>
#include <thread>

#include "engine/util/error.h"

namespace shardlab::runtime {

SpmdSession::SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules,
                         int64_t batch, int threads_per_device)
    : project_(p), mesh_(mesh) {
  graph::GraphReport report = project::analyze_project(project_);
  global_ = build_step(project_, report, batch, true);
  step_ = sharding::partition(global_, mesh_, rules,
                              sharding::parse_fallback(project_.constraint_fallback, project_.display_name() + ": constraint_fallback"));
  const int n = int(mesh_.device_count());
  comm_ = std::make_unique<backends::cpu::ThreadCollectives>(n);
  threads_per_device_ = threads_per_device > 0 ? threads_per_device
                                               : std::max(1, backends::cpu::default_threads() / n);
  for (int d = 0; d < n; ++d) devices_.push_back(std::make_unique<backends::cpu::Executor<float>>(step_.program, step_.memory));
  // Initialise each parameter once, globally, and hand every device its block.
  for (const ModelParam& mp : global_.params) {
    Tensor full(mp.info.shape);
    initialize_param(mp, project_.training.seed, full.ptr());
    set_parameter(mp.path, full);
  }
}

SpmdSession::~SpmdSession() = default;

const ModelParam& SpmdSession::param(const std::string& path) const { return find_param(global_, path); }

std::vector<std::string> SpmdSession::parameter_paths() const { return param_paths(global_); }

Tensor SpmdSession::parameter(const std::string& path) const { return value(param(path).value); }

Tensor SpmdSession::value(int v) const {
  const sharding::Sharding& s = step_.sharding[size_t(v)];
  const int local = step_.local[size_t(v)];
  Tensor full(global_.program.shape(v));
  for (int d = 0; d < int(devices_.size()); ++d) {
    Tensor block(step_.program.shape(local));
    std::memcpy(block.ptr(), devices_[size_t(d)]->data(local), size_t(block.size()) * sizeof(float));
    sharding::place_block(full, block, s, mesh_, d);
  }
  return full;
}

void SpmdSession::set_parameter(const std::string& path, const Tensor& value) { set_value(param(path).value, value); }

void SpmdSession::set_value(int v, const Tensor& value) {
  const Shape& shape = global_.program.shape(v);
  if (value.shape != shape)
    throw Error("'" + global_.program.values[size_t(v)].name + "' has shape " + shape_str(shape) + ", the value has " +
                shape_str(value.shape));
  const sharding::Sharding& s = step_.sharding[size_t(v)];
  const int local = step_.local[size_t(v)];
  for (int d = 0; d < int(devices_.size()); ++d) {
    Tensor block = sharding::local_block(value, s, mesh_, d);
    std::memcpy(devices_[size_t(d)]->data(local), block.ptr(), size_t(block.size()) * sizeof(float));
  }
}

double SpmdSession::train_step(const Tensor& features, const Tensor& targets, double learning_rate, profiler::Trace* trace,
                               double data_wait_us) {
  const int n = int(devices_.size());
  const sharding::Sharding& xs = step_.sharding[size_t(global_.input)];
  const sharding::Sharding& ys = step_.sharding[size_t(global_.target)];
  if (features.shape != global_.program.shape(global_.input) || targets.size() != numel(global_.program.shape(global_.target)))
    throw Error("batch of " + shape_str(features.shape) + " does not fit the step's " + shape_str(global_.program.shape(global_.input)));
  Tensor y = targets;
  y.shape = global_.program.shape(global_.target);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::atomic<int> first_failure{-1};  // its error is the cause; the others are the abort it triggered
  std::vector<std::thread> threads;
  for (int d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      try {
        omp_set_num_threads(threads_per_device_);
        auto& ex = *devices_[size_t(d)];
        Tensor xb = sharding::local_block(features, xs, mesh_, d);
        Tensor yb = sharding::local_block(y, ys, mesh_, d);
        std::memcpy(ex.data(step_.input), xb.ptr(), size_t(xb.size()) * sizeof(float));
        std::memcpy(ex.data(step_.target), yb.ptr(), size_t(yb.size()) * sizeof(float));
        backends::StepContext ctx;
        ctx.step = step_count_;
        ctx.learning_rate = learning_rate;
        ctx.device = d;
        ctx.mesh = &mesh_;
        ctx.comm = comm_.get();
        ctx.trace = trace;
        ctx.data_wait_us = data_wait_us;
        ex.run(ctx);
      } catch (...) {
        errors[size_t(d)] = std::current_exception();
        int none = -1;
        if (first_failure.compare_exchange_strong(none, d)) comm_->abort("device " + std::to_string(d) + " failed");
      }
    });
  for (auto& t : threads) t.join();
  if (first_failure >= 0) std::rethrow_exception(errors[size_t(first_failure.load())]);
  ++step_count_;
  comm_seconds_ = 0;
  for (const auto& ex : devices_) comm_seconds_ += ex->last_comm_seconds() / double(n);
  if (step_.accuracy >= 0) accuracy_ = double(devices_[0]->data(step_.accuracy)[0]);
  return double(devices_[0]->data(step_.loss)[0]);
}

}  // namespace shardlab::runtime
