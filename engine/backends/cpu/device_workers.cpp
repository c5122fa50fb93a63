#include "engine/backends/cpu/device_workers.h"

#include <algorithm>
#include "engine/backends/cpu/openmp.h"

#include "engine/backends/collectives.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

DeviceWorkers::DeviceWorkers(int devices, int cores) {
  if (devices < 1) throw Error("internal: a mesh needs at least one device");
  cores = std::max(1, cores);
  threads_per_device_ = std::max(1, cores / devices);
  if (devices > cores) budget_ = std::make_unique<ThreadBudget>(cores, devices % cores == 0);
  errors_.resize(size_t(devices));
  for (int d = 0; d < devices; ++d) threads_.emplace_back([this, d] { loop(d); });
}

DeviceWorkers::~DeviceWorkers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void DeviceWorkers::loop(int device) {
  // OpenMP's thread count is per thread: set once, it holds for every kernel this device runs.
  openmp::set_num_threads(threads_per_device_);
  if (budget_) budget_->bind(device);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    Collectives* comm;
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      comm = comm_;
    }
    std::exception_ptr error;
    if (budget_) budget_->acquire();
    try {
      (*job)(device);
    } catch (...) {
      error = std::current_exception();
    }
    if (budget_) budget_->release();
    bool first = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (error) {
        errors_[size_t(device)] = error;
        if (first_failure_ < 0) first_failure_ = device, first = true;
      }
    }
    // Its error is the cause; what its peers throw next is the abort it triggers.
    if (first && comm) comm->abort("device " + std::to_string(device) + " failed");
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--running_ == 0) done_cv_.notify_all();
    }
  }
}

void DeviceWorkers::run(const std::function<void(int)>& fn, Collectives* comm) {
  std::unique_lock<std::mutex> lk(mu_);
  job_ = &fn;
  comm_ = comm;
  first_failure_ = -1;
  std::fill(errors_.begin(), errors_.end(), nullptr);
  running_ = int(threads_.size());
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lk, [&] { return running_ == 0; });
  job_ = nullptr;
  if (first_failure_ >= 0) std::rethrow_exception(errors_[size_t(first_failure_)]);
}

}  // namespace shardlab::backends::cpu
