#include "engine/backends/cpu/cpu_backend.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include "engine/backends/cpu/collectives.h"
#include "engine/backends/cpu/device_workers.h"
#include "engine/backends/cpu/executor.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/shared_replicas.h"
#include "engine/backends/processes.h"
#include "engine/profiler/trace.h"
#include "engine/sharding/mesh.h"

namespace shardlab::backends::cpu {

namespace {

// "MemAvailable" and friends from /proc/meminfo, in bytes (0 where absent).
uint64_t meminfo(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  uint64_t kb = 0;
  std::string unit;
  while (f >> k >> kb) {
    std::getline(f, unit);
    if (k == key + ":") return kb * 1024;
  }
  return 0;
}

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "CPU";
}

// The threads and collectives of one mesh size, shared by every program loaded on it (the
// training step and the evaluation steps), which never run at the same time. Over several
// processes this process runs `local` of the mesh's `devices`, from global device `first` on, and
// its collectives reach the other processes' devices.
struct MeshRuntime {
  MeshRuntime(int devices, int cores, Processes* processes)
      : local(processes ? devices / processes->size() : devices),
        first(processes ? processes->rank() * local : 0),
        workers(local, cores) {
    if (processes) comm = processes->device_collectives(devices, local);
    else comm = std::make_unique<ThreadCollectives>(devices);
    comm->share_cores(workers.budget());
  }
  int local, first;
  DeviceWorkers workers;
  std::unique_ptr<Collectives> comm;
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const ir::Program& program, const plan::MemoryPlan& memory, const sharding::Mesh& mesh,
                std::shared_ptr<MeshRuntime> rt, const LoadOptions& options, const CpuExecutable* share)
      : program_(std::make_unique<ir::Program>(program)), mesh_(mesh), rt_(std::move(rt)) {
    for (int d = 0; d < rt_->local; ++d)
      devices_.push_back(std::make_unique<Executor<float>>(*program_, memory, options.fuse,
                                                           share ? share->devices_[size_t(d)].get() : nullptr));
    // Replicated parameters held once for every device (a program sharing state inherits them).
    if (!share && rt_->local == num_devices() && rt_->local > 1) {
      const std::vector<int> shared = shared_replicas(*program_, num_devices());
      if (!shared.empty())
        for (auto& ex : devices_) ex->share_replicas(*devices_[0], shared);
    }
  }

  const ir::Program& program() const override { return *program_; }
  const plan::MemoryPlan& memory_plan() const override { return devices_[0]->memory_plan(); }
  int num_devices() const override { return int(mesh_.device_count()); }
  std::vector<int> local_devices() const override {
    std::vector<int> ids;
    for (int d = 0; d < rt_->local; ++d) ids.push_back(rt_->first + d);
    return ids;
  }

  void write(int device, int value, const float* host) override { device_at(device).write(value, host); }
  void read(int device, int value, float* host) const override { device_at(device).read(value, host); }

  void run(const RunContext& ctx) override {
    const std::function<void(int)> job = [&](int d) {
      StepContext c;
      c.step = ctx.step;
      c.learning_rate = ctx.learning_rate;
      c.loss_scale = ctx.loss_scale;
      c.device = rt_->first + d;
      c.mesh = &mesh_;
      c.comm = rt_->comm.get();
      if (program_->stages > 1) {
        c.stage_axis = mesh_.axis_index(program_->stage_axis);
        c.stage = mesh_.coords(c.device).at(size_t(c.stage_axis));
      }
      c.trace = ctx.trace;
      c.data_wait_us = ctx.data_wait_us;
      devices_[size_t(d)]->run(c);
    };
    rt_->workers.run(job, rt_->comm.get());
  }

  double last_comm_seconds() const override {
    double s = 0;
    for (const auto& ex : devices_) s += ex->last_comm_seconds();
    return s / double(devices_.size());
  }
  size_t fused_instructions() const override { return devices_[0]->fused_instructions(); }
  uint64_t bytes_per_device() const override { return uint64_t(devices_[0]->allocated_bytes()); }

 private:
  // A global device id of this process's.
  Executor<float>& device_at(int d) const {
    const int local = d - rt_->first;
    if (local < 0 || local >= int(devices_.size()))
      throw Error("internal: device " + std::to_string(d) + " is not one of this process's (" + std::to_string(rt_->first) +
                  ".." + std::to_string(rt_->first + int(devices_.size()) - 1) + ")");
    return *devices_[size_t(local)];
  }

  std::unique_ptr<ir::Program> program_;  // the executors keep a reference to it
  sharding::Mesh mesh_;
  std::shared_ptr<MeshRuntime> rt_;
  std::vector<std::unique_ptr<Executor<float>>> devices_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& o)
      : threads_(o.threads > 0 ? o.threads : default_threads()), processes_(o.processes) {}

  DeviceKind kind() const override { return DeviceKind::Cpu; }
  int threads() const override { return threads_; }
  Processes* processes() const override { return processes_.get(); }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo d;
    d.kind = DeviceKind::Cpu;
    d.name = cpu_model() + " (" + std::to_string(default_threads()) + " cores, " + gemm_kind() + " GEMM)";
    d.memory_bytes = physical_memory();
    d.cores = default_threads();
    return {d};
  }

  double gemm_peak_flops(MatmulPrecision) override {
    if (peak_ > 0) return peak_;
    // On a thread of its own with the backend's cores, so the caller's OpenMP setting stays as it was.
    std::thread([this] {
      set_threads(threads_);
      const int64_t m = 512, n = 1024, k = 1024;
      std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));
      double best = 1e30;
      for (int r = 0; r < 6; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        gemm(false, false, m, n, k, a.data(), k, b.data(), n, c.data(), n);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      peak_ = 2.0 * double(m * n * k) / best;
    }).join();
    return peak_;
  }

  // The host's memory is shared by this process's devices only.
  uint64_t capacity_per_device(int n) const override {
    const int here = processes_ && n % processes_->size() == 0 ? n / processes_->size() : n;
    return host_memory_available() / uint64_t(std::max(1, here));
  }

  std::optional<OutOfMemory> check_fits(const ir::Program& program, const plan::MemoryPlan& memory,
                                        const sharding::Mesh& mesh, const LoadOptions& options) const override {
    const int n = int(mesh.device_count());
    // The plan only: the CPU executor's own staging buffers are not counted.
    return check_capacity(program, memory, options, capacity_per_device(n), 0,
                          n == 1 ? std::string("the CPU device")
                                 : "CPU device 0 of " + std::to_string(n) + " (virtual devices share the host's memory)");
  }

  std::unique_ptr<Executable> load(const ir::Program& program, const plan::MemoryPlan& memory, const sharding::Mesh& mesh,
                                   const LoadOptions& options) override {
    const int n = int(mesh.device_count());
    if (processes_) sharding::check_process_count(mesh, processes_->size());
    if (const auto why = refusal(program)) throw Error(*why);
    const auto* share = dynamic_cast<const CpuExecutable*>(options.share_persistent_with);
    if (options.share_persistent_with && (!share || share->num_devices() != n))
      throw Error("internal: " + options.what + " cannot share state with a program on another backend or mesh");
    // Refuse before allocating.
    if (auto refusal = check_fits(program, memory, mesh, options)) throw *refusal;
    auto& rt = runtimes_[n];
    if (!rt || rt->comm->aborted()) rt = std::make_shared<MeshRuntime>(n, threads_, processes_.get());
    return std::make_unique<CpuExecutable>(program, memory, mesh, rt, options, share);
  }

 private:
  int threads_;
  std::shared_ptr<Processes> processes_;
  double peak_ = 0;
  std::map<int, std::shared_ptr<MeshRuntime>> runtimes_;
};

}  // namespace

uint64_t host_memory_available() {
  uint64_t avail = meminfo("MemAvailable");
  if (avail == 0) avail = physical_memory();
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    // The address space already in use counts against the limit.
    std::ifstream f("/proc/self/statm");
    uint64_t vm_pages = 0;
    f >> vm_pages;
    const uint64_t used = vm_pages * uint64_t(sysconf(_SC_PAGE_SIZE));
    const uint64_t left = as.rlim_cur > used ? as.rlim_cur - used : 0;
    avail = std::min(avail, left);
  }
  return avail;
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) { return std::make_unique<CpuBackend>(options); }

}  // namespace shardlab::backends::cpu
