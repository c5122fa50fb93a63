// How N virtual devices share T cores: a device holds a core while it computes and gives it back
// only while it sleeps waiting for peers.
#pragma once

#include <condition_variable>
#include <mutex>

#include "engine/backends/collectives.h"

namespace shardlab::backends::cpu {

// A counting semaphore of cores. A device holds one while it computes and gives it back while it
// waits for peers, so devices beyond the core count run in turn instead of all at once.
class ThreadBudget final : public CoreShare {
 public:
  explicit ThreadBudget(int cores) : free_(cores) {}
  void acquire() override;
  void release() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

}  // namespace shardlab::backends::cpu
