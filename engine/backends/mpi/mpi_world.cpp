#include "engine/backends/mpi/mpi_world.h"

#include <chrono>
#include <thread>

#include "engine/util/error.h"

namespace shardlab::backends::mpi {

MpiWorld::MpiWorld() {
  // Our own communicators, so nothing else in the process can match our messages; errors come back
  // as return codes, turned into Errors that name the call.
  check(MPI_Comm_dup(MPI_COMM_WORLD, &host_), "MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &devices_), "MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &pipeline_), "MPI_Comm_dup");
  for (MPI_Comm c : {host_, devices_, pipeline_}) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  if (found && ub) tag_limit_ = *ub;
  MPI_Comm_rank(host_, &rank_);
  MPI_Comm_size(host_, &size_);
}

// The last holder of the world (the run's Processes, or a backend's collectives) ends MPI.
MpiWorld::~MpiWorld() {
  MPI_Comm_free(&pipeline_);
  MPI_Comm_free(&devices_);
  MPI_Comm_free(&host_);
  MPI_Finalize();
}

void MpiWorld::check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(what + " failed: " + std::string(text, size_t(len)));
}

void MpiWorld::locked(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  fn();
}

void MpiWorld::complete(const std::function<void(std::vector<MPI_Request>&)>& post, const std::function<bool()>& stop,
                        const std::function<std::string()>& why) {
  std::vector<MPI_Request> reqs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    post(reqs);
  }
  // Spin briefly (a peer is usually close behind), then back off to short sleeps so that a process
  // waiting for a slow peer leaves its cores to the devices that compute.
  for (int polls = 0;; ++polls) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      check(MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    }
    if (done) return;
    if (stop()) throw Error(why());
    if (polls < 2000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(polls < 20000 ? 20 : 200));
  }
}

}  // namespace shardlab::backends::mpi
