// How N virtual devices share T cores: a device holds a core while it computes and gives it back
// only while it sleeps waiting for peers.
#pragma once

#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <vector>

#include "engine/backends/collectives.h"

namespace shardlab::backends::cpu {

// T cores, each a token its devices take in turn. A device holds its core's token while it computes
// and gives it back while it waits for peers, so devices beyond the core count run in turn instead
// of all at once.
//
// Each device belongs to one core (bind()), and a freed token goes straight to the longest-sleeping
// device of that core that can use it; only that device is woken. Where the process may run on
// exactly T CPUs, bind() also pins the device's thread to its core's CPU, so a handover wakes a
// thread on the CPU its giver is leaving: about 7 us, where waking one on the other (idle) CPU of a
// virtual machine took 56. Waking every device a collective released, to race for the cores, cost
// 8 devices on 2 cores about 1 ms per small collective and left a core idle between collectives.
// (Where the devices do not divide evenly among the cores, a static share would leave a core idle
// while another has work queued, so then all T tokens form one pool, unpinned.)
class ThreadBudget final : public CoreShare {
 public:
  // per_core false: one pool of `cores` tokens that any device takes (for devices that do not divide
  // evenly among the cores).
  explicit ThreadBudget(int cores, bool per_core = true);
  // Makes the calling thread one of `core`'s devices (core modulo the core count).
  void bind(int core);
  void acquire() override;
  void release() override;
  void release_until(const std::function<bool()>& ready) override;
  void wake() override;

 private:
  struct Sleeper {
    const std::function<bool()>* ready = nullptr;  // null: only wants a core
    std::condition_variable cv;
    bool granted = false;
  };
  struct Core {
    int free = 1;                  // tokens: 1 per core, or T for the one pool
    std::list<Sleeper*> sleepers;  // oldest first
    int cpu = -1;                  // the CPU its devices are pinned to; -1: not pinned
  };
  Core& mine();
  void wait_for_grant(std::unique_lock<std::mutex>& lk, Core& core, const std::function<bool()>* ready);
  static void grant_locked(Core& core);

  std::mutex mu_;
  std::vector<Core> cores_;
  int next_core_ = 0;  // under mu_: the core of the next thread that never called bind()
};

}  // namespace shardlab::backends::cpu
