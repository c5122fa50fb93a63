// The backend interface: what the runtime, the profiler and the GUI see of the machines that run a
// plan. A backend enumerates its devices, loads one device's share of a partitioned program onto
// every device of a mesh (one arena per device, laid out by the plan), copies blocks in and out,
// and runs the program SPMD. The CPU backend (virtual devices on threads, shared-memory
// collectives) is one implementation; the CUDA backend is another. Nothing above engine/backends
// names either.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/program.h"
#include "engine/plan/memory_plan.h"
#include "engine/util/error.h"

namespace shardlab::sharding {
class Mesh;
}
namespace shardlab::profiler {
class Trace;
}

namespace shardlab::backends {

enum class DeviceKind { Cpu, Cuda };
const char* device_kind_name(DeviceKind k);  // "cpu", "cuda"

struct DeviceInfo {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;
  std::string name;            // "AMD EPYC (2 cores, avx2 6x16 GEMM)", "NVIDIA H100 80GB HBM3"
  uint64_t memory_bytes = 0;   // what the device can hold
  int cores = 0;               // CPU: cores of the host; GPU: multiprocessors
};

// A device's plan does not fit its memory: refused before anything is allocated.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

class Processes;

struct BackendOptions {
  int threads = 0;  // CPU: cores every virtual device shares (0: all of them)
  // A run over several processes (mpirun, srun): each process holds its share of every mesh's
  // devices (backends/processes.h says which); null: this process holds them all.
  std::shared_ptr<Processes> processes = nullptr;
};

struct LoadOptions {
  bool fuse = true;  // fold epilogues into GEMMs (off only to test that fusion changes nothing)
  // Take parameters and optimizer state from this executable (of the same backend and mesh)
  // instead of allocating them: the evaluation program shares the training program's.
  class Executable* share_persistent_with = nullptr;
  // What the refusal names: "the training step", "evaluation at batch 100".
  std::string what = "the program";
};

// What changes from one run of a loaded program to the next.
struct RunContext {
  int64_t step = 0;            // updates applied so far (Optax's count before this update)
  double learning_rate = 0.0;  // from the schedule at `step`
  double loss_scale = 1.0;     // dynamic loss scaling's current scale (1 without it)
  profiler::Trace* trace = nullptr;  // where each device records its spans (null: not traced)
  double data_wait_us = 0;     // the host's wait for this step's batch, for the summaries
};

// One device's program loaded on every device of a mesh.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual const ir::Program& program() const = 0;
  virtual const plan::MemoryPlan& memory_plan() const = 0;
  // Devices of the mesh, in every process.
  virtual int num_devices() const = 0;
  // The mesh's devices this process holds (all of them unless the run spans processes).
  virtual std::vector<int> local_devices() const {
    std::vector<int> all;
    for (int d = 0; d < num_devices(); ++d) all.push_back(d);
    return all;
  }
  // A value's block on one of this process's devices (numel(program().shape(value)) elements), in
  // or out, as float32 on the host whatever the value's dtype: written values are rounded to it
  // (to nearest even; int32 to the nearest whole number), read values widened exactly.
  virtual void write(int device, int value, const float* host) = 0;
  virtual void read(int device, int value, float* host) const = 0;
  // Runs the program once on every device. If a device fails, its peers are stopped (their
  // collectives abort) and the failing device's own error is rethrown.
  virtual void run(const RunContext& ctx) = 0;
  // Seconds the last run spent in collectives, waiting for peers included, averaged over devices.
  virtual double last_comm_seconds() const = 0;
  // Instructions folded into a GEMM's epilogue.
  virtual size_t fused_instructions() const = 0;
  // Bytes each device holds for this executable (its arena, and its persistent block unless shared).
  virtual uint64_t bytes_per_device() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;
  // Memory each of `n` devices of a mesh can hold: a GPU's own memory; on the CPU the host's memory
  // shared among n virtual devices (less what is already held).
  virtual uint64_t capacity_per_device(int n) const = 0;
  // The refusal load() would throw for this plan on `mesh` (an OutOfMemory naming the device, the
  // need, the capacity and the largest arrays), or none when it fits. Allocates nothing: a
  // validation asks it before a run builds anything.
  virtual std::optional<OutOfMemory> check_fits(const ir::Program& program, const plan::MemoryPlan& memory,
                                                const sharding::Mesh& mesh, const LoadOptions& options = {}) const = 0;
  // Loads `program` (one device's share, with its memory plan) on every device of `mesh`.
  // Throws check_fits()'s OutOfMemory before allocating.
  virtual std::unique_ptr<Executable> load(const ir::Program& program, const plan::MemoryPlan& memory,
                                           const sharding::Mesh& mesh, const LoadOptions& options = {}) = 0;
  // Whether load() takes programs holding values of dtype `d` (the CPU every dtype; the CUDA
  // backend float32, bfloat16, float16 and int32), and runs instruction `ins` (its op on its
  // operands' dtypes). The conformance suite asks before it runs a case.
  virtual bool supports(DType d) const {
    (void)d;
    return true;
  }
  virtual bool supports(const ir::Instr& ins, const ir::Program& program) const;
  // What load() refuses in `program` other than its memory, as a sentence naming the value,
  // instruction or layout at fault (a dtype or op this backend does not run, a pipeline it cannot
  // run where this backend's meshes span processes); none when it can run it. Allocates nothing:
  // the design check asks it, so a layout Start would refuse is an error before Start.
  virtual std::optional<std::string> refusal(const ir::Program& program) const;
  // Cores (CPU) the devices share; reported with results.
  virtual int threads() const = 0;
  // The processes the backend's meshes span (null: this one alone).
  virtual Processes* processes() const { return nullptr; }
  // FLOP/s of the backend's GEMM at its best on one device (on the CPU: on all the cores the
  // backend was given), measured on first use and kept: what MFU is a fraction of. `precision`:
  // Highest float32; Tf32 float32 on TF32 tensor cores; Bf16 and F16 16-bit operands (the GEMMs of
  // a --dtype bfloat16/float16 step). The CPU multiplies in float32 whatever the precision.
  virtual double gemm_peak_flops(MatmulPrecision precision = MatmulPrecision::Highest) = 0;
};

// The backend named `kind` ("cpu" or "cuda"). Throws Error saying why one is unavailable (a build
// without CUDA, no GPU found).
std::unique_ptr<Backend> make_backend(const std::string& kind, const BackendOptions& options = {});
// Kinds this build can make ("cpu", and "cuda" where built with CUDA).
std::vector<std::string> built_backends();

// Bytes one device needs to load `memory`: its arena, plus the parameters and optimizer state unless
// they are shared with an executable already loaded (LoadOptions::share_persistent_with).
uint64_t bytes_needed(const plan::MemoryPlan& memory, bool shares_persistent);

// check_fits for devices that split one memory (the host's, or one GPU's) `capacity` bytes each:
// the refusal naming `device` when a device's need (its plan, and `scratch` bytes the backend
// holds beyond it) exceeds it, else none.
std::optional<OutOfMemory> check_capacity(const ir::Program& program, const plan::MemoryPlan& memory,
                                          const LoadOptions& options, uint64_t capacity, uint64_t scratch,
                                          const std::string& device);

// The refusal a backend throws when `need` bytes per device exceed `capacity`: names the device,
// both sizes, and the program's largest arrays.
OutOfMemory out_of_memory(const std::string& device, const std::string& what, uint64_t need, uint64_t capacity,
                          const ir::Program& program);

}  // namespace shardlab::backends
