// Run under mpirun -np 2 by test_mpi_runs: a stop that lands on one process while it waits inside
// the stop agreement itself (a SIGTERM arriving as process 1 sleeps in Processes::any, which is where
// a waiting process spends its time) must still stop every process after the same step. The check
// makes that timing certain: process 1's any() cancels the trainer just after its vote was counted.
// Prints "process R stopped after step N" and exits 0 when the run ends; a process that leaves the
// loop alone leaves its peer waiting in the next step's collectives, and the test's timeout sees it.
// Usage: stop_agreement_check PROJECT CANCEL_AT_CALL
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "engine/backends/mpi/mpi_processes.h"
#include "engine/project/project.h"
#include "engine/runtime/trainer.h"

using namespace shardlab;

namespace {

// Every call passes through to the run's processes; process 1's `cancel_at`-th any() cancels the
// trainer after the processes have agreed on its old vote, as a signal handler would.
class CancelInsideAgreement final : public backends::Processes {
 public:
  CancelInsideAgreement(std::shared_ptr<backends::Processes> inner, int cancel_at) : inner_(std::move(inner)), cancel_at_(cancel_at) {}
  void watch(runtime::Trainer* t) { trainer_ = t; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string describe() const override { return inner_->describe(); }
  int processes_on_this_host() const override { return inner_->processes_on_this_host(); }
  void barrier() override { inner_->barrier(); }
  void all_gather(const void* in, void* out, size_t bytes) override { inner_->all_gather(in, out, bytes); }
  void broadcast(void* buf, size_t bytes, int root) override { inner_->broadcast(buf, bytes, root); }
  bool any(bool flag) override {
    const bool agreed = inner_->any(flag);
    if (rank() == 1 && ++calls_ == cancel_at_ && trainer_) trainer_->cancel();
    return agreed;
  }
  std::unique_ptr<backends::Collectives> device_collectives(int num_devices, int local) override {
    return inner_->device_collectives(num_devices, local);
  }
  [[noreturn]] void abort(int exit_code) override {
    inner_->abort(exit_code);
    std::abort();  // not reached: the inner abort ends the process (the compiler cannot see through the call)
  }

 private:
  std::shared_ptr<backends::Processes> inner_;
  int cancel_at_;
  int calls_ = 0;
  runtime::Trainer* trainer_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  auto processes = backends::mpi::join_mpi_run(&argc, &argv);
  if (!processes || processes->size() != 2 || argc != 3) {
    std::fprintf(stderr, "stop_agreement_check: run me under mpirun -np 2 with PROJECT CANCEL_AT_CALL\n");
    return 2;
  }
  try {
    auto watched = std::make_shared<CancelInsideAgreement>(processes, std::atoi(argv[2]));
    runtime::TrainOptions opt;
    opt.steps = 1000;
    opt.threads = 1;
    opt.mesh = "data=2";
    opt.rules = "batch=data";
    opt.processes = watched;
    runtime::Trainer trainer(project::load_project(argv[1]), opt);
    watched->watch(&trainer);
    trainer.run();
    std::printf("process %d stopped after step %lld\n", processes->rank(), static_cast<long long>(trainer.steps_done()));
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stop_agreement_check (process %d): %s\n", processes->rank(), e.what());
    return 1;
  }
  return 0;
}
