#include "engine/backends/cpu/thread_budget.h"

#include <cstdlib>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace shardlab::backends::cpu {

namespace {
// The calling thread's core, per budget (a thread serves one device of one budget).
thread_local const ThreadBudget* t_budget = nullptr;
thread_local int t_core = 0;

// The CPUs this process may run on, when it can tell.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}
}  // namespace

ThreadBudget::ThreadBudget(int cores, bool per_core) : cores_(size_t(per_core && cores > 1 ? cores : 1)) {
  if (!per_core) {
    cores_[0].free = cores < 1 ? 1 : cores;
    return;
  }
  // Pin only where the budget spans every CPU the process has: with fewer (--threads below the
  // core count), which CPUs to take is not ours to guess.
  const std::vector<int> cpus = allowed_cpus();
  const char* env = std::getenv("SHARDLAB_PIN_DEVICES");
  const bool pin = env ? env[0] == '1' : cpus.size() == cores_.size();
  if (pin && cpus.size() >= cores_.size())
    for (size_t c = 0; c < cores_.size(); ++c) cores_[c].cpu = cpus[c];
}

void ThreadBudget::bind(int core) {
  t_budget = this;
  t_core = core % int(cores_.size());
#if defined(__linux__)
  if (const int cpu = cores_[size_t(t_core)].cpu; cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // a failure only costs speed
  }
#endif
}

// A thread never bound (a test's, or a caller's own) is given the next core in turn, unpinned.
// (The modulo guards a thread whose earlier budget, since gone, had more cores at this address.)
ThreadBudget::Core& ThreadBudget::mine() {
  if (t_budget != this) {
    t_budget = this;
    t_core = next_core_++ % int(cores_.size());
  }
  return cores_[size_t(t_core) % cores_.size()];
}

// Hands a free core to its oldest sleeper that can use it. The grantee is notified under the lock:
// its Sleeper lives on its stack and is gone once it sees `granted`.
void ThreadBudget::grant_locked(Core& core) {
  for (auto it = core.sleepers.begin(); core.free > 0 && it != core.sleepers.end();) {
    Sleeper* s = *it;
    if (s->ready && !(*s->ready)()) {
      ++it;
      continue;
    }
    --core.free;
    s->granted = true;
    s->cv.notify_one();
    it = core.sleepers.erase(it);
  }
}

void ThreadBudget::wait_for_grant(std::unique_lock<std::mutex>& lk, Core& core, const std::function<bool()>* ready) {
  Sleeper me;
  me.ready = ready;
  core.sleepers.push_back(&me);
  grant_locked(core);
  me.cv.wait(lk, [&] { return me.granted; });
}

void ThreadBudget::acquire() {
  std::unique_lock<std::mutex> lk(mu_);
  Core& core = mine();
  if (core.free > 0 && core.sleepers.empty()) {
    --core.free;
    return;
  }
  wait_for_grant(lk, core, nullptr);
}

void ThreadBudget::release() {
  std::lock_guard<std::mutex> lk(mu_);
  Core& core = mine();
  ++core.free;
  grant_locked(core);
}

void ThreadBudget::release_until(const std::function<bool()>& ready) {
  std::unique_lock<std::mutex> lk(mu_);
  Core& core = mine();
  ++core.free;
  wait_for_grant(lk, core, &ready);
}

void ThreadBudget::wake() {
  std::lock_guard<std::mutex> lk(mu_);
  for (Core& core : cores_) grant_locked(core);
}

}  // namespace shardlab::backends::cpu
