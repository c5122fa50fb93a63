#include "engine/backends/cpu/thread_budget.h"

namespace shardlab::backends::cpu {

void ThreadBudget::acquire() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return free_ > 0; });
  --free_;
}

void ThreadBudget::release() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++free_;
  }
  cv_.notify_one();
}

}  // namespace shardlab::backends::cpu
