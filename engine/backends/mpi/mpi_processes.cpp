#include "engine/backends/mpi/mpi_processes.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/backends/mpi/mpi_collectives.h"
#include "engine/backends/mpi/mpi_world.h"
#include "engine/util/error.h"

namespace shardlab::backends::mpi {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Host-side transfers are cut into pieces MPI's int counts can hold.
constexpr size_t kPiece = size_t(1) << 30;

class MpiProcesses final : public Processes {
 public:
  explicit MpiProcesses(std::shared_ptr<MpiWorld> world) : world_(std::move(world)) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, size_t(len));
    describe_ = v.substr(0, v.find_first_of(",\n"));
    // The processes that share this machine, as MPI sees them: launchers' variables do not always
    // say (srun -n 2 without --ntasks-per-node sets none), and each process would then take every core.
    MPI_Comm node = MPI_COMM_NULL;
    MpiWorld::check(MPI_Comm_split_type(world_->host_comm(), MPI_COMM_TYPE_SHARED, world_->rank(), MPI_INFO_NULL, &node),
                    "MPI_Comm_split_type");
    MpiWorld::check(MPI_Comm_size(node, &on_host_), "MPI_Comm_size");
    MPI_Comm_free(&node);
    on_host_ = std::clamp(on_host_, 1, world_->size());
  }

  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }
  std::string describe() const override { return describe_; }
  int processes_on_this_host() const override { return on_host_; }

  void barrier() override {
    wait("MPI_Ibarrier", [&](std::vector<MPI_Request>& r) {
      r.emplace_back();
      MpiWorld::check(MPI_Ibarrier(world_->host_comm(), &r.back()), "MPI_Ibarrier");
    });
  }

  void all_gather(const void* in, void* out, size_t bytes) override {
    if (bytes == 0) return;
    const size_t n = size_t(size());
    std::vector<char> piece;
    for (size_t off = 0; off < bytes; off += kPiece) {
      const size_t len = std::min(kPiece, bytes - off);
      piece.resize(len * n);
      wait("MPI_Iallgather", [&](std::vector<MPI_Request>& r) {
        r.emplace_back();
        MpiWorld::check(MPI_Iallgather(static_cast<const char*>(in) + off, int(len), MPI_BYTE, piece.data(), int(len), MPI_BYTE,
                                       world_->host_comm(), &r.back()),
                        "MPI_Iallgather");
      });
      for (size_t p = 0; p < n; ++p) std::memcpy(static_cast<char*>(out) + p * bytes + off, piece.data() + p * len, len);
    }
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    for (size_t off = 0; off < bytes; off += kPiece) {
      const int len = int(std::min(kPiece, bytes - off));
      wait("MPI_Ibcast", [&](std::vector<MPI_Request>& r) {
        r.emplace_back();
        MpiWorld::check(MPI_Ibcast(static_cast<char*>(buf) + off, len, MPI_BYTE, root, world_->host_comm(), &r.back()),
                        "MPI_Ibcast");
      });
    }
  }

  bool any(bool flag) override {
    int mine = flag ? 1 : 0, all = 0;
    wait("MPI_Iallreduce", [&](std::vector<MPI_Request>& r) {
      r.emplace_back();
      MpiWorld::check(MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_LOR, world_->host_comm(), &r.back()), "MPI_Iallreduce");
    });
    return all != 0;
  }

  std::unique_ptr<Collectives> device_collectives(int num_devices, int local) override {
    return std::make_unique<MpiCollectives>(world_, num_devices, local);
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  void wait(const char* what, const std::function<void(std::vector<MPI_Request>&)>& post) {
    world_->complete(post, [] { return false; }, [what] { return std::string(what); });
  }

  std::shared_ptr<MpiWorld> world_;
  std::string describe_;
  int on_host_ = 1;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

std::shared_ptr<Processes> join_mpi_run(int* argc, char*** argv) {
  if (!launched_by_mpi()) return nullptr;
  // Open MPI says the run's size before MPI starts; a run of one needs no MPI at all.
  if (env_int("OMPI_COMM_WORLD_SIZE", 2) == 1 || env_int("PMI_SIZE", 2) == 1) return nullptr;
  int provided = 0;
  MpiWorld::check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw Error("the MPI library offers no MPI_THREAD_SERIALIZED, which a process of several devices needs");
  }
  auto world = std::make_shared<MpiWorld>();
  if (world->size() == 1) return nullptr;  // the world ends MPI when it goes
  return std::make_shared<MpiProcesses>(std::move(world));
}

}  // namespace shardlab::backends::mpi
