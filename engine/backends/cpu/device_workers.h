// The CPU backend's virtual devices as persistent threads, and the budget that keeps N devices on
// T cores from running more than T busy threads. Threads are made once per mesh, not per step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/backends/cpu/thread_budget.h"

namespace shardlab::backends {
class Collectives;
}

namespace shardlab::backends::cpu {

class DeviceWorkers {
 public:
  // `devices` threads sharing `cores` cores: each device runs its kernels on max(1, cores / devices)
  // OpenMP threads; where devices outnumber cores, a ThreadBudget of `cores` admits them.
  DeviceWorkers(int devices, int cores);
  ~DeviceWorkers();
  DeviceWorkers(const DeviceWorkers&) = delete;
  DeviceWorkers& operator=(const DeviceWorkers&) = delete;

  int devices() const { return int(threads_.size()); }
  int threads_per_device() const { return threads_per_device_; }
  ThreadBudget* budget() { return budget_ ? &*budget_ : nullptr; }

  // Runs fn(device) on every device's thread and waits for all of them. When one throws, `comm`
  // (if given) is aborted so that its peers stop waiting, and the first failure's exception is
  // rethrown here once every device has returned.
  void run(const std::function<void(int)>& fn, Collectives* comm);

 private:
  void loop(int device);

  std::vector<std::thread> threads_;
  int threads_per_device_ = 1;
  std::unique_ptr<ThreadBudget> budget_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  Collectives* comm_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  int first_failure_ = -1;
};

}  // namespace shardlab::backends::cpu
