#include "engine/backends/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "engine/backends/cpu/comm_kernels.h"
#include "engine/backends/cpu/device_workers.h"
#include "engine/backends/cuda/check.h"
#include "engine/backends/cuda/gemm.h"
#include "engine/backends/cuda/host_staging.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/backends/cuda/tensor_kernels.h"
#include "engine/backends/cuda/window_kernels.h"
#include "engine/backends/cuda/nccl_collectives.h"
#include "engine/backends/cuda/peer_collectives.h"
#include "engine/backends/processes.h"
#include "engine/ir/primitive.h"
#include "engine/plan/foldable_chains.h"
#include "engine/plan/stack_views.h"
#include "engine/profiler/instruction_arrays.h"
#include "engine/profiler/trace.h"
#include "engine/sharding/mesh.h"
#include "engine/tensor/convert.h"
#include "engine/util/hash.h"

namespace shardlab::backends::cuda {

namespace {

using ir::Op;

// In one process every virtual device of a mesh runs on this GPU; over several processes each of a
// process's devices has a GPU of its own (MeshRuntime::gpu).
constexpr int kGpu = 0;

// This process's place among the run's processes on its machine, as the launcher says (Open MPI,
// Slurm, MPICH: the variables MpiProcesses reads the count from), else from its rank where
// processes fill machines in turn.
int rank_on_host(const Processes& p) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (*end == '\0' && x >= 0) return int(x);
  }
  return p.rank() % std::max(1, p.processes_on_this_host());
}

int gpu_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it, so later calls do not report it again
    throw Error(std::string("no CUDA GPU found: ") + cudaGetErrorString(e));
  }
  if (n == 0) throw Error("no CUDA GPU found: the CUDA runtime lists no devices");
  return n;
}

// CUDA events that destroy themselves: the per-device trace's span boundaries.
class Events {
 public:
  Events() = default;
  ~Events() { release(); }
  Events(Events&& o) noexcept : events_(std::move(o.events_)) {}
  Events& operator=(Events&& o) noexcept {
    std::swap(events_, o.events_);
    return *this;
  }
  // At least n events, made on the calling thread's current device.
  void ensure(size_t n) {
    while (events_.size() < n) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
  }
  cudaEvent_t operator[](size_t i) const { return events_[i]; }
  // Milliseconds between events i and j, both complete.
  double ms(size_t i, size_t j) const {
    float v = 0.f;
    check(cudaEventElapsedTime(&v, events_[i], events_[j]), "cudaEventElapsedTime");
    return double(v);
  }

 private:
  void release() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    events_.clear();
  }
  std::vector<cudaEvent_t> events_;
};

// Device memory that frees itself.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes) check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
    if (bytes) check(cudaMemset(ptr_, 0, bytes), "cudaMemset");
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

// The host threads, streams, GEMM handles and collectives of one mesh size, shared by every program
// loaded on it (the training step and the evaluation steps never run at the same time). Over
// several processes this process runs `local` of the mesh's devices, from global device `first`
// on, local device d on GPU first_gpu + d, and NCCL connects them to the other processes' devices.
struct MeshRuntime {
  explicit MeshRuntime(int n) : local(n), workers(n, n) {
    check(cudaSetDevice(kGpu), "cudaSetDevice");
    for (int d = 0; d < n; ++d) {
      cudaStream_t s = nullptr;
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      streams.push_back(s);
      gemms.push_back(std::make_unique<LtGemm>());  // its own workspace: devices run GEMMs at once
    }
    comm = std::make_unique<PeerCollectives>(streams);
  }
  // Called by every process at the same point: the collectives meet the other processes.
  MeshRuntime(const sharding::Mesh& mesh, Processes& processes, int first_gpu_here)
      : local(int(mesh.device_count()) / processes.size()),
        first(processes.rank() * local),
        first_gpu(first_gpu_here),
        over_processes(true),
        workers(local, local) {
    try {
      for (int d = 0; d < local; ++d) {
        check(cudaSetDevice(gpu(d)), "cudaSetDevice");
        cudaStream_t s = nullptr;
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        streams.push_back(s);
        gemms.push_back(std::make_unique<LtGemm>());  // on the device's GPU
      }
      comm = make_nccl_collectives(mesh, processes, streams, first_gpu);
    } catch (...) {
      release();
      throw;
    }
  }
  ~MeshRuntime() {
    if (over_processes) {
      release();
      return;
    }
    comm.reset();
    gemms.clear();
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
  }
  // The GPU local device d runs on.
  int gpu(int d) const { return over_processes ? first_gpu + d : kGpu; }

  int local = 0, first = 0;  // this process's devices: global ids [first, first + local)
  int first_gpu = kGpu;
  bool over_processes = false;
  cpu::DeviceWorkers workers;
  std::vector<cudaStream_t> streams;
  std::vector<std::unique_ptr<LtGemm>> gemms;
  std::unique_ptr<Collectives> comm;

 private:
  // Over processes: each device's GEMM handle and stream freed on its own GPU.
  void release() {
    comm.reset();
    for (size_t d = 0; d < streams.size(); ++d) {
      cudaSetDevice(gpu(int(d)));
      if (d < gemms.size()) gemms[d].reset();
      cudaStreamDestroy(streams[d]);
    }
    gemms.clear();
    streams.clear();
  }
};

// Bytes of the cast scratch a GEMM's float32 operand of n elements takes, rounded to type `to`
// (each copy starts 256-byte aligned, as cuBLASLt's fastest kernels want).
int64_t cast_copy_bytes(int64_t n, DType to) { return (n * int64_t(dtype_size(to)) + 255) / 256 * 256; }

// What a device holds beyond its memory plan for one program: per-row losses (doubles), the
// collectives' staging, reduce_rows' partial sums (floats), GEMM cast copies and 16-bit
// ScatterAdd sums (bytes); and the GEMM workspace of its mesh runtime (gemm.cpp).
struct Scratch {
  int64_t rows = 1, comm_bytes = 0, reduce_elems = 0, cast_bytes = 0;
  uint64_t bytes() const {
    return uint64_t(rows) * 8 + uint64_t(comm_bytes) + uint64_t(reduce_elems) * 4 + uint64_t(cast_bytes) +
           uint64_t(LtGemm::kWorkspaceBytes);
  }
};

Scratch scratch_for(const ir::Program& p) {
  Scratch s;
  for (const ir::Instr& ins : p.instrs) {
    const int64_t in = ins.in.empty() ? 0 : numel(p.shape(ins.in[0]));
    const int64_t size = ins.in.empty() ? 4 : int64_t(dtype_size(p.dtype(ins.in[0])));
    switch (ins.op) {
      case ir::Op::SoftmaxXent:
      case ir::Op::Accuracy: s.rows = std::max(s.rows, in / p.shape(ins.in[0]).back()); break;
      case ir::Op::ReduceRows: {
        const int64_t cols = p.shape(ins.in[0]).back();
        s.reduce_elems = std::max(s.reduce_elems, relu_grad_reduce_scratch(in / cols, cols));
        break;
      }
      // What collective() lays out in the scratch: every rank's block (AllGather), the operand
      // rearranged (ReduceScatter), send and receive blocks (AllToAll), this device's block and
      // every rank's (AllGatherInPlace, whose operand is the whole array).
      case ir::Op::AllGather: s.comm_bytes = std::max(s.comm_bytes, ins.attrs.group_size * in * size); break;
      case ir::Op::ReduceScatter: s.comm_bytes = std::max(s.comm_bytes, in * size); break;
      case ir::Op::AllToAll:
      case ir::Op::AllGatherInPlace: s.comm_bytes = std::max(s.comm_bytes, 2 * in * size); break;
      case ir::Op::MatMul:
      case ir::Op::BatchMatMul:
        if (ins.attrs.round_operands) {
          int64_t bytes = 0;
          for (int v : ins.in)
            if (p.dtype(v) == DType::F32) bytes += cast_copy_bytes(numel(p.shape(v)), *ins.attrs.round_operands);
          s.cast_bytes = std::max(s.cast_bytes, bytes);
        }
        break;
      case ir::Op::ScatterAdd:  // a 16-bit one sums in float32 in the cast scratch (scatter_add_rows)
        if (p.dtype(ins.out[0]) != DType::F32) s.cast_bytes = std::max(s.cast_bytes, numel(p.shape(ins.out[0])) * 4);
        break;
      default: break;
    }
  }
  return s;
}

// Calls f(T{}) with T the storage type of a float dtype (float, bf16, f16).
template <class F>
void with_type(DType d, const char* what, F&& f) {
  switch (d) {
    case DType::F32: f(0.f); return;
    case DType::BF16: f(bf16{}); return;
    case DType::F16: f(f16{}); return;
    default: break;
  }
  throw Error(std::string("internal: the CUDA backend has no ") + what + " for " + dtype_name(d) + " values");
}

// Elements before `dim` (outer) and from `dim` on (inner) of a row-major shape.
void split(const Shape& s, int64_t dim, int64_t& outer, int64_t& inner) {
  outer = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[size_t(i)];
  inner = 1;
  for (size_t i = size_t(dim); i < s.size(); ++i) inner *= s[i];
}

// A device pointer moved on by `elems` elements of `size` bytes.
template <class P>
P* at(P* p, int64_t elems, size_t size) {
  using Byte = std::conditional_t<std::is_const_v<P>, const char, char>;
  return reinterpret_cast<P*>(reinterpret_cast<Byte*>(p) + elems * int64_t(size));
}

// `height` rows of `width` elements of `size` bytes, from src (rows `spitch` elements apart) to dst
// (`dpitch` apart).
void copy_rows(void* dst, int64_t dpitch, const void* src, int64_t spitch, int64_t width, int64_t height, size_t size,
               cudaStream_t s) {
  if (width <= 0 || height <= 0) return;
  check(cudaMemcpy2DAsync(dst, size_t(dpitch) * size, src, size_t(spitch) * size, size_t(width) * size, size_t(height),
                          cudaMemcpyDeviceToDevice, s),
        "cudaMemcpy2DAsync");
}

void copy(void* dst, const void* src, int64_t n, size_t size, cudaStream_t s) {
  if (n > 0 && dst != src)
    check(cudaMemcpyAsync(dst, src, size_t(n) * size, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
}

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(const ir::Program& program, const plan::MemoryPlan& memory, const sharding::Mesh& mesh,
                 std::shared_ptr<MeshRuntime> rt, const LoadOptions& options, const CudaExecutable* share)
      : program_(program), plan_(memory), mesh_(mesh), rt_(std::move(rt)) {
    const int n = rt_->over_processes ? rt_->local : int(mesh_.device_count());
    check(cudaSetDevice(rt_->gpu(0)), "cudaSetDevice");
    const Scratch scratch = scratch_for(program_);
    for (int d = 0; d < n; ++d) {
      if (rt_->over_processes) check(cudaSetDevice(rt_->gpu(d)), "cudaSetDevice");
      Device dev;
      dev.arena = DeviceBuffer(size_t(plan_.arena_bytes));
      if (share) {
        dev.persistent = share->devices_[size_t(d)].persistent;
      } else {
        dev.own_persistent = DeviceBuffer(size_t(plan_.param_bytes + plan_.opt_state_bytes));
        dev.persistent = dev.own_persistent.as<char>();
      }
      dev.row_scratch = DeviceBuffer(size_t(scratch.rows) * sizeof(double));
      dev.bad_row = DeviceBuffer(sizeof(int));
      dev.comm_scratch = DeviceBuffer(size_t(scratch.comm_bytes));
      dev.reduce_scratch = DeviceBuffer(size_t(scratch.reduce_elems) * 4);
      dev.count = DeviceBuffer(sizeof(unsigned long long));
      dev.cast_scratch = DeviceBuffer(size_t(scratch.cast_bytes));
      devices_.push_back(std::move(dev));
    }
    // The zeroing above ran on the legacy stream, which the devices' non-blocking streams do not wait for.
    check(cudaDeviceSynchronize(), "allocating the devices' memory");
    for (int d = 0; rt_->over_processes && d < n; ++d) {
      check(cudaSetDevice(rt_->gpu(d)), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "allocating the devices' memory");
    }
    own_bytes_ = uint64_t(plan_.arena_bytes + (share ? 0 : plan_.param_bytes + plan_.opt_state_bytes));
    plan_steps(options.fuse);
  }

  const ir::Program& program() const override { return program_; }
  const plan::MemoryPlan& memory_plan() const override { return plan_; }
  int num_devices() const override { return int(mesh_.device_count()); }
  std::vector<int> local_devices() const override {
    std::vector<int> ids;
    for (int d = 0; d < int(devices_.size()); ++d) ids.push_back(global(d));
    return ids;
  }

  // `device`: a global id of one of this process's devices. The host side is float32 whatever the
  // value's dtype: int32 (labels) and 16-bit values are converted on the host, both ways.
  void write(int device, int value, const float* host) override {
    device = local_of(device);
    check(cudaSetDevice(rt_->gpu(device)), "cudaSetDevice");
    cudaStream_t s = stream(device);
    const size_t n = size_t(numel(program_.shape(value)));
    const DType t = program_.dtype(value);
    std::vector<char> converted;
    const void* src = host;
    if (t != DType::F32) {
      converted.resize(n * dtype_size(t));
      from_float(host, converted.data(), t, n);
      src = converted.data();
    }
    const size_t bytes = n * dtype_size(t);
    // A batch's inputs, every step: through pinned memory (host_staging.h).
    if (bytes >= HostStaging::kMinBytes) devices_[size_t(device)].staging->upload(data(device, value), src, bytes, s);
    else check(cudaMemcpyAsync(data(device, value), src, bytes, cudaMemcpyHostToDevice, s), "writing a block to the GPU");
    check(cudaStreamSynchronize(s), "writing a block to the GPU");
  }
  void read(int device, int value, float* host) const override {
    device = local_of(device);
    check(cudaSetDevice(rt_->gpu(device)), "cudaSetDevice");
    cudaStream_t s = stream(device);
    const size_t n = size_t(numel(program_.shape(value)));
    const DType t = program_.dtype(value);
    std::vector<char> raw(t == DType::F32 ? 0 : n * dtype_size(t));
    void* dst = t == DType::F32 ? static_cast<void*>(host) : raw.data();
    check(cudaMemcpyAsync(dst, data(device, value), n * dtype_size(t), cudaMemcpyDeviceToHost, s), "reading a block from the GPU");
    check(cudaStreamSynchronize(s), "reading a block from the GPU");
    if (t != DType::F32) to_float(raw.data(), t, host, n);
  }

  void run(const RunContext& ctx) override {
    const std::function<void(int)> job = [&](int d) {
      check(cudaSetDevice(rt_->gpu(d)), "cudaSetDevice");
      run_device(d, ctx);
    };
    rt_->workers.run(job, rt_->comm.get());
  }

  double last_comm_seconds() const override {
    double s = 0;
    for (const Device& d : devices_) s += d.comm_seconds;
    return s / double(devices_.size());
  }
  size_t fused_instructions() const override {
    size_t n = views_.skipped();
    for (const Step& s : steps_) n += s.folded;
    return n;
  }
  uint64_t bytes_per_device() const override { return own_bytes_; }

 private:
  struct Device {
    DeviceBuffer arena, own_persistent;
    char* persistent = nullptr;
    DeviceBuffer row_scratch;   // per-row losses and hits, summed in one block
    DeviceBuffer bad_row;       // a label that is not a class index (kernels.h)
    DeviceBuffer comm_scratch;  // collectives over a non-leading dimension lay blocks out here
    DeviceBuffer reduce_scratch;  // reduce_rows' sums of row runs (kernels.h)
    DeviceBuffer count;           // count_non_finite's running total
    DeviceBuffer cast_scratch;    // a GEMM's float32 operands rounded to its 16-bit type (matmul()); a 16-bit ScatterAdd's sums
    std::unique_ptr<HostStaging> staging = std::make_unique<HostStaging>();  // large writes (write()); pinned on first use
    Events events;                // a detailed trace's span boundaries: one before each step, one after the last
    double comm_seconds = 0;
  };
  // What a step's span says (as the CPU executor's): its name, category, FLOPs, what it made.
  struct SpanInfo {
    std::string name;
    profiler::Category category = profiler::Category::Compute;
    double flops = 0, bytes = 0;
    std::string array;
    std::shared_ptr<const profiler::SpanArrays> arrays;
  };
  // An instruction, or a MatMul with the bias (+ ReLU) of its epilogue chain folded in, or a
  // ReluGrad with the ReduceRows right after it (a bias's gradient) folded in.
  struct Step {
    size_t instr = 0;
    size_t folded = 0;
    std::vector<size_t> folded_instrs;  // the chain's instructions the GEMM performs
    int bias = -1;
    bool relu = false;
    int out = -1;
    int reduce_out = -1;  // the folded ReduceRows' result
  };

  // The chains the plan lets a GEMM fold (plan::foldable_chains), of those cuBLASLt can do: bias,
  // then ReLU. ReLU's gradient (a mask from the activation) has no cuBLASLt epilogue, so those
  // chains run as separate instructions; where a ReduceRows of its result follows at once (the
  // bias's gradient), one kernel does both, saving a read of the whole gradient. Nothing runs
  // between the two, so no value the plan places over the ReduceRows' result is live meanwhile.
  void plan_steps(bool fuse) {
    std::vector<const ir::EpilogueChain*> at(program_.instrs.size(), nullptr);
    std::vector<bool> folded_away(program_.instrs.size(), false);
    // A Repeat's stacks and unstacks as views (plan/stack_views.h): those copies run not at all.
    // (Within one stage: a pipeline's liveness is per stage, which the analysis does not follow.)
    if (fuse && program_.stages <= 1) views_ = plan::stack_views(program_, plan_);
    for (size_t i = 0; i < views_.skip.size(); ++i) folded_away[i] = views_.skip[i];
    const std::vector<ir::EpilogueChain> chains = fuse ? plan::foldable_chains(program_, plan_) : std::vector<ir::EpilogueChain>{};
    for (const ir::EpilogueChain& c : chains)
      if (c.bias >= 0) at[c.matmul] = &c;
    for (size_t i = 0; i < program_.instrs.size(); ++i) {
      if (folded_away[i]) continue;
      Step s;
      s.instr = i;
      if (const ir::EpilogueChain* c = at[i]) {
        s.folded = c->folded.size();
        s.folded_instrs = c->folded;
        s.bias = c->bias;
        s.relu = c->relu;
        s.out = c->out;
        for (size_t f : c->folded) folded_away[f] = true;
      }
      const ir::Instr& ins = program_.instrs[i];
      if (fuse && !s.folded && ins.op == Op::ReluGrad && i + 1 < program_.instrs.size() && !folded_away[i + 1]) {
        const ir::Instr& next = program_.instrs[i + 1];
        if (next.op == Op::ReduceRows && next.stage == ins.stage && next.in.at(0) == ins.out.at(0) &&
            program_.dtype(next.out.at(0)) == program_.dtype(ins.out[0]) &&
            program_.dtype(ins.in.at(0)) == program_.dtype(ins.out[0]) && program_.dtype(ins.in.at(1)) == program_.dtype(ins.out[0])) {
          s.folded = 1;
          s.folded_instrs = {i + 1};
          s.reduce_out = next.out[0];
          folded_away[i + 1] = true;
        }
      }
      steps_.push_back(s);
    }
    describe_steps();
  }

  void describe_steps() {
    const std::vector<profiler::SpanArrays> arrays = profiler::instruction_arrays(program_);
    for (const Step& st : steps_) {
      const ir::Instr& ins = program_.instrs[st.instr];
      SpanInfo info;
      const bool comm = ir::is_collective(ins.op);
      info.category = profiler::instruction_category(ins.op);
      info.name = ir::op_name(ins.op);
      if (st.reduce_out >= 0) info.name += "+reduce_rows";
      else if (st.folded) info.name += st.relu ? "+bias+relu" : "+bias";
      // A folded chain's FLOPs: the GEMM's and its epilogue's, as the CPU counts them.
      double f = profiler::instruction_flops(program_, ins);
      for (size_t k : st.folded_instrs) f += profiler::instruction_flops(program_, program_.instrs[k]);
      const int first = ins.in.empty() ? ins.out.at(0) : ins.in[0];
      (comm ? info.bytes : info.flops) = comm ? f * double(dtype_size(program_.dtype(first))) : f;
      const profiler::SpanArrays& touched = arrays[st.instr];
      if (!touched.empty()) info.arrays = std::make_shared<const profiler::SpanArrays>(touched);
      info.array = !touched.writes.empty() ? touched.writes.front() : comm && !touched.reads.empty() ? touched.reads.front() : "";
      step_flops_ += info.flops;
      info_.push_back(std::move(info));
    }
  }

  // A device's global id (its place in the mesh) from its index among this process's devices, and back.
  int global(int d) const { return rt_->first + d; }
  int local_of(int device) const {
    if (!rt_->over_processes) return device;
    const int d = device - rt_->first;
    if (d < 0 || d >= int(devices_.size()))
      throw Error("internal: device " + std::to_string(device) + " is not one of this process's (" +
                  std::to_string(rt_->first) + ".." + std::to_string(rt_->first + int(devices_.size()) - 1) + ")");
    return d;
  }

  // By local index, as every function below takes `d`.
  cudaStream_t stream(int device) const {
    if (device < 0 || device >= int(devices_.size()))
      throw Error("internal: device " + std::to_string(device) + " of a mesh of " + std::to_string(devices_.size()));
    return rt_->streams[size_t(device)];
  }

  // A value's block on a device (the plan's offsets are in bytes).
  void* data(int device, int v) const {
    const size_t i = size_t(v);
    if (!views_.base.empty() && views_.base.at(i) >= 0) return static_cast<char*>(data(device, views_.base[i])) + views_.offset[i];
    const Device& d = devices_.at(size_t(device));
    if (plan_.persistent_offset.at(i) >= 0) return d.persistent + plan_.persistent_offset[i];
    if (plan_.arena_offset.at(i) >= 0) return d.arena.as<char>() + plan_.arena_offset[i];
    throw Error("internal: value '" + program_.values.at(i).name + "' has no storage in the plan");
  }
  // The block of a value of storage type T (float for float32), or an Error naming the value.
  template <class T>
  T* typed(int device, int v) const {
    const DType want = std::is_same_v<T, bf16> ? DType::BF16 : std::is_same_v<T, f16> ? DType::F16 : DType::F32;
    if (program_.dtype(v) != want)
      throw Error("internal: the CUDA backend read '" + program_.values.at(size_t(v)).name + "' (" +
                  dtype_name(program_.dtype(v)) + ") as " + dtype_name(want));
    return static_cast<T*>(data(device, v));
  }
  float* f32(int device, int v) const { return typed<float>(device, v); }

  void run_device(int d, const RunContext& ctx) {
    Device& dev = devices_[size_t(d)];
    dev.comm_seconds = 0;
    const auto start = std::chrono::steady_clock::now();
    const double t0 = ctx.trace ? ctx.trace->now_us() : 0.0;
    cudaStream_t s = rt_->streams[size_t(d)];
    // A detailed trace times every step on the GPU: an event before each, one after the last.
    const bool spans = ctx.trace && ctx.trace->detailed();
    if (spans) dev.events.ensure(steps_.size() + 1);
    const int64_t stage = stage_of(d);
    for (size_t k = 0; k < steps_.size(); ++k) {
      const Step& step = steps_[k];
      const ir::Instr& ins = program_.instrs[step.instr];
      if (spans) check(cudaEventRecord(dev.events[k], s), "cudaEventRecord");
      if (!ir::runs_on_stage(ins, stage)) continue;  // another pipeline stage's work
      if (ir::is_collective(ins.op)) {
        check(cudaStreamSynchronize(s), "finishing the work before a collective");
        const auto c0 = std::chrono::steady_clock::now();
        collective(d, ins, s);
        dev.comm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      } else {
        launch(d, step, ins, ctx, s);
      }
      check(cudaGetLastError(), ir::op_name(ins.op));
    }
    if (spans) check(cudaEventRecord(dev.events[steps_.size()], s), "cudaEventRecord");
    check(cudaStreamSynchronize(s), "finishing the step");
    if (ctx.trace) {
      // One summary per device and step, and with a detailed trace a span per step timed by its events.
      profiler::StepSummary sum;
      sum.step = ctx.step;
      sum.device = global(d);
      sum.data_us = ctx.data_wait_us;
      sum.flops = step_flops_;
      const double wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      sum.collective_us = dev.comm_seconds * 1e6;
      sum.compute_us = wall - sum.collective_us;
      sum.wall_us = wall + ctx.data_wait_us;
      if (spans) {
        sum.compute_us = sum.collective_us = 0;
        for (size_t k = 0; k < steps_.size(); ++k) {
          const ir::Instr& ins = program_.instrs[steps_[k].instr];
          if (!ir::runs_on_stage(ins, stage)) continue;
          const SpanInfo& info = info_[k];
          const double begin = dev.events.ms(0, k) * 1e3, dur = dev.events.ms(k, k + 1) * 1e3;
          (info.category == profiler::Category::Collective  ? sum.collective_us
           : info.category == profiler::Category::Optimizer ? sum.optimizer_us
                                                            : sum.compute_us) += dur;
          profiler::Span span{global(d), info.category, info.name, ins.node, info.array, t0 + begin, dur, info.flops, info.bytes,
                              ctx.step, info.arrays};
          if (stage >= 0) {
            span.stage = stage;
            span.microbatch = ins.microbatch;
            span.backward = ins.backward;
          }
          ctx.trace->add(std::move(span));
        }
      }
      ctx.trace->add(profiler::Span{global(d), profiler::Category::Step, "step " + std::to_string(ctx.step + 1), "", "", t0, wall,
                                    0, 0, ctx.step});
      ctx.trace->add(sum);
    }
  }

  // The pipeline stage local device d runs (its coordinate on the stage axis), -1 without stages.
  int64_t stage_of(int d) const {
    if (program_.stages <= 1) return -1;
    const int axis = mesh_.axis_index(program_.stage_axis);
    if (axis < 0) throw Error("internal: the pipeline's stage axis '" + program_.stage_axis + "' is not on the mesh " + mesh_.str());
    return mesh_.coords(global(d)).at(size_t(axis));
  }

  // A loss or metric read labels: a label that is not a class index is an error naming it.
  void check_labels(int d, Labels labels, int64_t classes, cudaStream_t s) {
    int row = kNoBadRow;
    check(cudaMemcpyAsync(&row, devices_[size_t(d)].bad_row.as<int>(), sizeof(int), cudaMemcpyDeviceToHost, s), "labels");
    check(cudaStreamSynchronize(s), "labels");
    if (row == kNoBadRow) return;
    unsigned char raw[4];
    check(cudaMemcpy(raw, static_cast<const char*>(labels.data) + 4 * int64_t(row), 4, cudaMemcpyDeviceToHost), "labels");
    int32_t i = 0;
    float f = 0;
    std::memcpy(&i, raw, 4);
    std::memcpy(&f, raw, 4);
    const std::string label = labels.int32 ? std::to_string(i) : std::to_string(double(f));
    throw Error("label " + label + " at row " + std::to_string(row) + " is not a class index in [0, " +
                std::to_string(classes) + ")");
  }

  void launch(int d, const Step& step, const ir::Instr& ins, const RunContext& ctx, cudaStream_t s) {
    Device& dev = devices_[size_t(d)];
    auto raw_in = [&](size_t k) { return data(d, ins.in.at(k)); };
    auto raw_out = [&](size_t k) { return data(d, ins.out.at(k)); };
    const Shape& s0 = program_.shape(ins.in.empty() ? ins.out[0] : ins.in[0]);
    const int64_t n = ins.out.empty() ? 0 : numel(program_.shape(ins.out[0]));
    const int64_t cols = s0.empty() ? 1 : s0.back(), rows = cols ? numel(s0) / cols : 0;
    // The instruction's float type: its first operand's (its result's where it has none).
    const DType dt = program_.dtype(ins.in.empty() ? ins.out[0] : ins.in[0]);
    const size_t size = dtype_size(dt);
    int* bad = dev.bad_row.as<int>();
    double* scratch = dev.row_scratch.as<double>();
    // Runs f(T{}) for the instruction's type, with in<T>(k) and out<T>(k) its operands and results.
    auto typed_op = [&](auto f) { with_type(dt, ir::op_name(ins.op), f); };
    auto ew = [&](Elementwise op, float alpha = 0.f) {
      typed_op([&](auto z) {
        using T = decltype(z);
        elementwise<T>(op, n, ins.in.empty() ? nullptr : typed<T>(d, ins.in[0]),
                       ins.in.size() > 1 ? typed<T>(d, ins.in[1]) : nullptr, typed<T>(d, ins.out[0]), alpha, cols, s);
      });
    };
    switch (ins.op) {
      case Op::MatMul: matmul(d, step, ins, s); return;
      case Op::Add: ew(Elementwise::Add); return;
      case Op::Sub: ew(Elementwise::Sub); return;
      case Op::Mul: ew(Elementwise::Mul); return;
      case Op::Scale: ew(Elementwise::Scale, float(ins.attrs.alpha)); return;
      case Op::Relu: ew(Elementwise::Relu); return;
      case Op::ReluGrad:
        if (step.reduce_out < 0) return ew(Elementwise::ReluGrad);
        typed_op([&](auto z) {
          using T = decltype(z);
          relu_grad_reduce_rows<T>(rows, cols, typed<T>(d, ins.in[0]), typed<T>(d, ins.in[1]), typed<T>(d, ins.out[0]),
                                   typed<T>(d, step.reduce_out), dev.reduce_scratch.as<float>(), s);
        });
        return;
      case Op::Gelu: ew(Elementwise::Gelu); return;
      case Op::GeluGrad: ew(Elementwise::GeluGrad); return;
      case Op::Tanh: ew(Elementwise::Tanh); return;
      case Op::TanhGrad: ew(Elementwise::TanhGrad); return;
      case Op::Sigmoid: ew(Elementwise::Sigmoid); return;
      case Op::SigmoidGrad: ew(Elementwise::SigmoidGrad); return;
      case Op::BiasAdd: ew(Elementwise::BiasAdd); return;
      case Op::MulRow: ew(Elementwise::MulRow); return;
      case Op::Fill: {
        // The loss-scaled seed of the backward pass is the current loss scale.
        const double v = ins.attrs.loss_scaled ? ctx.loss_scale : ins.attrs.alpha;
        ew(Elementwise::Fill, float(v));
        return;
      }
      case Op::Convert: {
        const DType to = program_.dtype(ins.out[0]);
        with_type(dt, "convert", [&](auto from) {
          with_type(to, "convert", [&](auto into) {
            using From = decltype(from);
            using To = decltype(into);
            if constexpr (std::is_same_v<From, To>) copy(raw_out(0), raw_in(0), n, size, s);
            else convert<From, To>(n, typed<From>(d, ins.in[0]), typed<To>(d, ins.out[0]), s);
          });
        });
        return;
      }
      case Op::CountNonFinite: {
        // Pairs (gradient, the state or parameter it updates): the gradients are counted.
        unsigned long long* count = dev.count.as<unsigned long long>();
        check(cudaMemsetAsync(count, 0, sizeof(*count), s), "cudaMemsetAsync");
        for (size_t k = 0; k < ins.in.size(); k += 2)
          with_type(program_.dtype(ins.in[k]), "count_non_finite", [&](auto z) {
            using T = decltype(z);
            count_non_finite<T>(numel(program_.shape(ins.in[k])), typed<T>(d, ins.in[k]), count, s);
          });
        store_count(count, f32(d, ins.out[0]), s);
        return;
      }
      case Op::Dropout:
        typed_op([&](auto z) {
          using T = decltype(z);
          dropout<T>(n, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), ins.attrs.alpha,
                     util::mix64(ins.attrs.seed ^ util::mix64(uint64_t(ctx.step))),
                     cpu::shard_index(program_.shape(ins.out[0]), ins.attrs, &mesh_, global(d)), s);
        });
        return;
      case Op::ReduceRows:
        typed_op([&](auto z) {
          using T = decltype(z);
          reduce_rows<T>(rows, cols, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), dev.reduce_scratch.as<float>(), s);
        });
        return;
      case Op::LayerNorm:
      case Op::LayerNormGrad:
        typed_op([&](auto z) {
          using T = decltype(z);
          layer_norm<T>(rows, cols, typed<T>(d, ins.in[0]), ins.op == Op::LayerNormGrad ? typed<T>(d, ins.in[1]) : nullptr,
                        typed<T>(d, ins.out[0]), ins.attrs.eps, s);
        });
        return;
      case Op::RmsNorm:
      case Op::RmsNormGrad:
        typed_op([&](auto z) {
          using T = decltype(z);
          rms_norm<T>(rows, cols, typed<T>(d, ins.in[0]), ins.op == Op::RmsNormGrad ? typed<T>(d, ins.in[1]) : nullptr,
                      typed<T>(d, ins.out[0]), ins.attrs.eps, s);
        });
        return;
      case Op::Rope: {
        int64_t outer = 1, positions = s0[size_t(ins.attrs.dim)], mid = 1;
        for (size_t i = 0; i < s0.size(); ++i)
          if (int64_t(i) < ins.attrs.dim) outer *= s0[i];
          else if (int64_t(i) > ins.attrs.dim && i + 1 < s0.size()) mid *= s0[i];
        typed_op([&](auto z) {
          using T = decltype(z);
          rope<T>(outer, positions, mid, s0.back(), ins.attrs.rope_theta, ins.attrs.rope_inverse, typed<T>(d, ins.in[0]),
                  typed<T>(d, ins.out[0]), s);
        });
        return;
      }
      case Op::Reshape: copy(raw_out(0), raw_in(0), n, size, s); return;
      case Op::Stack: {
        const int64_t part = numel(program_.shape(ins.in[0]));
        for (size_t k = 0; k < ins.in.size(); ++k) copy(at(raw_out(0), int64_t(k) * part, size), raw_in(k), part, size, s);
        return;
      }
      case Op::Unstack: {
        const int64_t part = numel(program_.shape(ins.out[0]));
        for (size_t k = 0; k < ins.out.size(); ++k) copy(raw_out(k), at(raw_in(0), int64_t(k) * part, size), part, size, s);
        return;
      }
      case Op::Concat:
      case Op::Split: {
        // Per index of the dims before `dim`, each part is one contiguous run of the whole: one
        // pitched copy per part.
        const bool join = ins.op == Op::Concat;
        const Shape& whole = program_.shape(join ? ins.out[0] : ins.in[0]);
        const size_t dim = size_t(ins.attrs.dim);
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < dim; ++i) outer *= whole[i];
        for (size_t i = dim + 1; i < whole.size(); ++i) inner *= whole[i];
        const int64_t row = whole[dim] * inner;
        int64_t offset = 0;
        for (size_t k = 0; k < (join ? ins.in.size() : ins.out.size()); ++k) {
          const int64_t w = program_.shape(join ? ins.in[k] : ins.out[k])[dim] * inner;
          if (join) copy_rows(at(raw_out(0), offset, size), row, raw_in(k), w, w, outer, size, s);
          else copy_rows(raw_out(k), w, at(raw_in(0), offset, size), row, w, outer, size, s);
          offset += w;
        }
        return;
      }
      case Op::SoftmaxXent:
      case Op::SoftmaxXentGrad:
      case Op::Accuracy: {
        // Losses and metrics read float32 predictions (mixed precision converts them first).
        const Labels labels{raw_in(1), program_.dtype(ins.in[1]) == DType::I32};
        const float* z = f32(d, ins.in[0]);
        check(cudaMemsetAsync(bad, 0x7f, sizeof(int), s), "cudaMemsetAsync");
        if (ins.op == Op::SoftmaxXent) softmax_xent(rows, cols, z, labels, f32(d, ins.out[0]), scratch, bad, s);
        else if (ins.op == Op::Accuracy) accuracy(rows, cols, z, labels, f32(d, ins.out[0]), scratch, bad, s);
        else softmax_xent_grad(rows, cols, z, labels, f32(d, ins.in[2]), f32(d, ins.out[0]), bad, s);
        check(cudaGetLastError(), ir::op_name(ins.op));
        check_labels(d, labels, cols, s);
        return;
      }
      case Op::Mse: mse(numel(s0), f32(d, ins.in[0]), f32(d, ins.in[1]), f32(d, ins.out[0]), s); return;
      case Op::MseGrad: mse_grad(n, f32(d, ins.in[0]), f32(d, ins.in[1]), f32(d, ins.in[2]), f32(d, ins.out[0]), s); return;
      case Op::SgdUpdate: {
        // A sharded update (attrs.group_size > 1) touches only this device's block of the parameter.
        // The parameter and its gradient share a type; the momentum trace is float32.
        const cpu::UpdateBlock b = cpu::update_block(s0, ins.attrs, &mesh_, global(d));
        const LossScaling ls = loss_scaling(d, ins, ctx);
        const bool momentum = ins.in.size() > (ins.attrs.loss_scaled ? 3u : 2u);
        typed_op([&](auto z) {
          using T = decltype(z);
          T* p = typed<T>(d, ins.in[0]);
          const T* g = typed<T>(d, ins.in[1]);
          for (int64_t r = 0; r < b.runs; ++r)
            sgd<T>(b.len, p + r * b.stride + b.offset, g + r * b.len, momentum ? f32(d, ins.in[2]) + r * b.len : nullptr,
                   float(ins.attrs.momentum), ins.attrs.nesterov, float(ctx.learning_rate), ls, s);
        });
        return;
      }
      case Op::AdamUpdate: {
        // Optax scale_by_adam: bias correction with the incremented count (as the CPU's).
        const ir::Attrs& a = ins.attrs;
        const double t = double(ctx.step + 1);
        const cpu::UpdateBlock b = cpu::update_block(s0, a, &mesh_, global(d));
        const LossScaling ls = loss_scaling(d, ins, ctx);
        typed_op([&](auto z) {
          using T = decltype(z);
          T* p = typed<T>(d, ins.in[0]);
          const T* g = typed<T>(d, ins.in[1]);
          float* mu = f32(d, ins.in[2]);
          float* nu = f32(d, ins.in[3]);
          for (int64_t r = 0; r < b.runs; ++r)
            adam<T>(b.len, p + r * b.stride + b.offset, g + r * b.len, mu + r * b.len, nu + r * b.len, float(a.b1),
                    float(a.b2), float(a.opt_eps), float(a.weight_decay), float(ctx.learning_rate),
                    float(1.0 / (1.0 - std::pow(a.b1, t))), float(1.0 / (1.0 - std::pow(a.b2, t))), ls, s);
        });
        return;
      }
      case Op::ShardSlice: {
        int64_t outer, in_inner, out_inner;
        split(s0, ins.attrs.dim, outer, in_inner);
        split(program_.shape(ins.out[0]), ins.attrs.dim, outer, out_inner);
        const int64_t b = cpu::block_index(mesh_, global(d), ins.attrs.mesh_axes);
        copy_rows(raw_out(0), out_inner, at(raw_in(0), b * out_inner, size), in_inner, out_inner, outer, size, s);
        return;
      }
      case Op::BatchMatMul: {
        // One product per index of the leading dims, which both operands share (as the CPU's batch_matmul).
        const Shape& sb = program_.shape(ins.in[1]);
        const size_t r = s0.size();
        const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
        const int64_t m = ta ? s0[r - 1] : s0[r - 2], k = ta ? s0[r - 2] : s0[r - 1], nb = tb ? sb[r - 2] : sb[r - 1];
        const int64_t batch = numel(Shape(s0.begin(), s0.end() - 2));
        if (n == 0) return;
        const GemmOperands o = gemm_operands(d, ins, s);
        if (k == 0) return check(cudaMemsetAsync(o.c, 0, size_t(n) * dtype_size(o.types.c), s), "cudaMemsetAsync");
        rt_->gemms[size_t(d)]->run_batched(ta, tb, m, nb, k, o.a, s0[r - 1], s0[r - 2] * s0[r - 1], o.b, sb[r - 1],
                                           sb[r - 2] * sb[r - 1], o.c, nb, m * nb, batch, s, ins.attrs.precision, o.types);
        round_result(o, n, s);
        return;
      }
      case Op::Transpose:
        typed_op([&](auto z) {
          using T = decltype(z);
          transpose<T>(int(s0.size()), s0.data(), ins.attrs.perm.data(), typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
        });
        return;
      // In place (the result over the operand, or SoftmaxGrad's over its cotangent) is safe: see tensor_kernels.h.
      case Op::Softmax:
        typed_op([&](auto z) {
          using T = decltype(z);
          softmax_rows<T>(rows, cols, ins.attrs.causal ? s0[s0.size() - 2] : 1, ins.attrs.causal, typed<T>(d, ins.in[0]),
                          typed<T>(d, ins.out[0]), s);
        });
        return;
      case Op::SoftmaxGrad:
        typed_op([&](auto z) {
          using T = decltype(z);
          softmax_grad_rows<T>(rows, cols, typed<T>(d, ins.in[0]), typed<T>(d, ins.in[1]), typed<T>(d, ins.out[0]), s);
        });
        return;
      case Op::ReduceAxis:
      case Op::Broadcast: {
        // (outer, len, inner) around dim: of the operand summed along it, of the result broadcast along it.
        const Shape& sh = program_.shape(ins.op == Op::ReduceAxis ? ins.in[0] : ins.out[0]);
        int64_t outer = 1, len = 1, inner = 1;
        for (size_t i = 0; i < sh.size(); ++i)
          (int64_t(i) < ins.attrs.dim ? outer : int64_t(i) == ins.attrs.dim ? len : inner) *= sh[i];
        typed_op([&](auto z) {
          using T = decltype(z);
          if (ins.op == Op::ReduceAxis) reduce_axis<T>(outer, len, inner, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
          else broadcast_axis<T>(outer, len, inner, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
        });
        return;
      }
      case Op::Gather:
      case Op::ScatterAdd: {
        // Gather(table, ids) and ScatterAdd(ids, rows) into a table; ids int32 or float32 whole numbers.
        const bool gather = ins.op == Op::Gather;
        const int table_value = gather ? ins.in[0] : ins.out[0];
        const Shape& table = program_.shape(table_value);
        const int ids_value = gather ? ins.in[1] : ins.in[0];
        const int64_t table_rows = table[0], width = numel(table) / std::max<int64_t>(table_rows, 1);
        const int64_t count = numel(program_.shape(ids_value));
        const RowIds ids{data(d, ids_value), program_.dtype(ids_value) == DType::I32};
        check_row_ids(count, ids, table_rows, bad, s);
        with_type(program_.dtype(table_value), ir::op_name(ins.op), [&](auto z) {
          using T = decltype(z);
          if (gather) gather_rows<T>(count, ids, table_rows, width, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
          else
            scatter_add_rows<T>(count, ids, table_rows, width, typed<T>(d, ins.in[1]), typed<T>(d, ins.out[0]),
                                dev.cast_scratch.as<float>(), s);
        });
        return;
      }
      case Op::Patches:
      case Op::PatchesGrad: {
        // The image is Patches' operand and PatchesGrad's result; the windows the other side.
        const bool forward = ins.op == Op::Patches;
        const Shape& im = program_.shape(forward ? ins.in[0] : ins.out[0]);
        const Shape& win = program_.shape(forward ? ins.out[0] : ins.in[0]);
        const ir::Attrs& a = ins.attrs;
        const WindowGeometry g{im[0], im[1], im[2], im[3], win[1], win[2], win[3], win[4],
                               a.strides[0], a.strides[1], a.dilation[0], a.dilation[1], a.pads[0], a.pads[2]};
        typed_op([&](auto z) {
          using T = decltype(z);
          if (forward) patches<T>(g, a.pad_lowest, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
          else patches_grad<T>(g, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
        });
        return;
      }
      case Op::ReduceMax:
      case Op::ReduceMaxGrad: {
        int64_t outer = 1, len = 1, inner = 1;
        for (size_t i = 0; i < s0.size(); ++i)
          (int64_t(i) < ins.attrs.dim ? outer : int64_t(i) == ins.attrs.dim ? len : inner) *= s0[i];
        typed_op([&](auto z) {
          using T = decltype(z);
          if (ins.op == Op::ReduceMax) reduce_max<T>(outer, len, inner, typed<T>(d, ins.in[0]), typed<T>(d, ins.out[0]), s);
          else
            reduce_max_grad<T>(outer, len, inner, typed<T>(d, ins.in[0]), typed<T>(d, ins.in[1]), typed<T>(d, ins.out[0]), s);
        });
        return;
      }
      case Op::AllReduce:
      case Op::AllGather:
      case Op::ReduceScatter:
      case Op::AllToAll:
      case Op::AllGatherInPlace:
      case Op::Send:
      case Op::Recv:
      case Op::kCount: break;
    }
    throw Error(std::string("internal: no CUDA kernel for ") + ir::op_name(ins.op));
  }


  // An update under dynamic loss scaling reads the step's non-finite count (its last operand) and
  // unscales its gradient (as the CPU's kernels.cpp).
  LossScaling loss_scaling(int d, const ir::Instr& ins, const RunContext& ctx) const {
    if (!ins.attrs.loss_scaled) return {};
    return LossScaling{f32(d, ins.in.back()), float(1.0 / ctx.loss_scale)};
  }

  // A GEMM's operands as cuBLASLt takes them. Under a folded Convert (attrs.round_operands) a
  // float32 operand is first rounded into the device's cast scratch, so both operands are 16-bit;
  // a float32 result of 16-bit products (attrs.result_dtype) is rounded to that type afterwards
  // (round_result), as the Convert pair it replaces would have left it.
  struct GemmOperands {
    const void* a = nullptr;
    const void* b = nullptr;
    void* c = nullptr;
    GemmTypes types;
    std::optional<DType> round_to;  // the result, float32, is rounded through this 16-bit type
  };
  GemmOperands gemm_operands(int d, const ir::Instr& ins, cudaStream_t s, int out = -1) {
    GemmOperands o;
    o.c = data(d, out >= 0 ? out : ins.out[0]);
    o.types.c = program_.dtype(out >= 0 ? out : ins.out[0]);
    char* scratch = devices_[size_t(d)].cast_scratch.as<char>();
    const void* ab[2] = {};
    DType types[2] = {};
    for (size_t k = 0; k < 2; ++k) {
      const int v = ins.in[k];
      ab[k] = data(d, v);
      types[k] = program_.dtype(v);
      if (ins.attrs.round_operands && types[k] == DType::F32) {
        const DType to = *ins.attrs.round_operands;
        const int64_t count = numel(program_.shape(v));
        with_type(to, "matmul", [&](auto z) {
          using T = decltype(z);
          convert<float, T>(count, f32(d, v), reinterpret_cast<T*>(scratch), s);
        });
        ab[k] = scratch;
        types[k] = to;
        scratch += cast_copy_bytes(count, to);
      }
    }
    o.a = ab[0];
    o.b = ab[1];
    o.types.a = types[0];
    o.types.b = types[1];
    if (o.types.a != o.types.b)
      throw Error(std::string("internal: the CUDA backend multiplies operands of one type, not ") + dtype_name(o.types.a) +
                  " by " + dtype_name(o.types.b) + " ('" + program_.values.at(size_t(ins.in[0])).name + "')");
    if (ins.attrs.result_dtype && o.types.c == DType::F32 && o.types.a != DType::F32) o.round_to = o.types.a;
    return o;
  }
  void round_result(const GemmOperands& o, int64_t n, cudaStream_t s) {
    if (!o.round_to) return;
    with_type(*o.round_to, "matmul", [&](auto z) { round_through<decltype(z)>(n, static_cast<float*>(o.c), s); });
  }

  // (rows, k) @ (k, cols) with both operands viewed as row-major matrices, as the CPU's matmul.
  void matmul(int d, const Step& step, const ir::Instr& ins, cudaStream_t s) {
    const Shape& sa = program_.shape(ins.in[0]);
    const Shape& sb = program_.shape(ins.in[1]);
    const int64_t ra = numel(sa) / sa.back(), ca = sa.back();
    const int64_t rb = numel(sb) / sb.back(), cb = sb.back();
    const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
    const int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
    LtGemm& g = *rt_->gemms[size_t(d)];
    const MatmulPrecision p = ins.attrs.precision;
    GemmOperands o = gemm_operands(d, ins, s, step.bias < 0 ? -1 : step.out);
    if (step.bias < 0) {
      g.run(ta, tb, m, n, k, o.a, ca, o.b, cb, o.c, n, nullptr, false, s, p, o.types);
      round_result(o, m * n, s);
      return;
    }
    // The epilogue adds the bias (and ReLU) to the float32 accumulator before the result is rounded.
    const void* bias = data(d, step.bias);
    o.types.bias = program_.dtype(step.bias);
    if (!o.round_to && g.run(ta, tb, m, n, k, o.a, ca, o.b, cb, o.c, n, bias, step.relu, s, p, o.types)) return;
    // No epilogue algorithm for these operands: the same work in three passes.
    g.run(ta, tb, m, n, k, o.a, ca, o.b, cb, o.c, n, nullptr, false, s, p, o.types);
    round_result(o, m * n, s);
    with_type(o.types.c, "matmul", [&](auto z) {
      using T = decltype(z);
      T* c = static_cast<T*>(o.c);
      if (program_.dtype(step.bias) != o.types.c)
        throw Error("internal: a bias of another type than its product ('" + program_.values.at(size_t(step.bias)).name + "')");
      elementwise<T>(Elementwise::BiasAdd, m * n, c, static_cast<const T*>(bias), c, 0.f, n, s);
      if (step.relu) elementwise<T>(Elementwise::Relu, m * n, c, nullptr, c, 0.f, n, s);
    });
  }

  // The communication primitives: blocks of a non-leading dimension are laid out contiguously in
  // the device's scratch first (as the CPU's comm_kernels.cpp does on the host).
  void collective(int d, const ir::Instr& ins, cudaStream_t s) {
    const ir::Attrs& a = ins.attrs;
    if (ins.op == Op::Send || ins.op == Op::Recv) {
      // To or from the device of stage `peer` with this device's other coordinates; buffered, so
      // two stages may each send before either receives (1F1B's steady state).
      const int axis = mesh_.axis_index(program_.stage_axis);
      if (axis < 0) throw Error("internal: a pipeline transfer outside a pipelined program");
      std::vector<int64_t> c = mesh_.coords(global(d));
      c.at(size_t(axis)) = a.peer;
      const int peer = int(mesh_.device_at(c));
      if (ins.op == Op::Send)
        rt_->comm->post(global(d), peer, a.tag, data(d, ins.in.at(0)), numel(program_.shape(ins.in[0])), program_.dtype(ins.in[0]));
      else
        rt_->comm->take(global(d), peer, a.tag, data(d, ins.out.at(0)), numel(program_.shape(ins.out[0])),
                        program_.dtype(ins.out[0]));
      return;
    }
    const Shape& is = program_.shape(ins.in[0]);
    const DType t = program_.dtype(ins.in[0]);
    const size_t size = dtype_size(t);
    char* staged = devices_[size_t(d)].comm_scratch.as<char>();
    const int64_t n = a.group_size;
    const int g = global(d);  // the mesh and the collectives know devices by global id
    const std::vector<int> group = mesh_.group(g, a.mesh_axes);
    if (int64_t(group.size()) != n) throw Error("internal: collective group size does not match the program");
    Collectives& comm = *rt_->comm;
    auto settle = [&] { check(cudaStreamSynchronize(s), "laying out a collective's blocks"); };
    auto el = [&](auto* p, int64_t elems) { return at(p, elems, size); };
    if (ins.op == Op::AllGatherInPlace) {
      // This device's block is in place already; the peers' blocks arrive around it.
      void* x = data(d, ins.in[0]);
      const cpu::UpdateBlock b = cpu::update_block(is, a, &mesh_, g);
      const int64_t count = b.runs * b.len;
      if (b.runs == 1) return comm.all_gather(g, group, el(x, b.offset), x, count, t);
      copy_rows(staged, b.len, el(x, b.offset), b.stride, b.len, b.runs, size, s);
      settle();
      comm.all_gather(g, group, staged, el(staged, count), count, t);
      for (int64_t r = 0; r < n; ++r)
        copy_rows(el(x, r * b.len), b.stride, el(staged, count + r * count), b.len, b.len, b.runs, size, s);
      return settle();
    }
    const Shape& os = program_.shape(ins.out[0]);
    const void* x = data(d, ins.in[0]);
    void* y = data(d, ins.out[0]);
    switch (ins.op) {
      case Op::AllReduce: comm.all_reduce(g, group, x, y, numel(is), t); return;
      case Op::AllGather: {
        int64_t outer, inner;
        split(is, a.dim, outer, inner);
        if (outer == 1) return comm.all_gather(g, group, x, y, numel(is), t);
        comm.all_gather(g, group, x, staged, numel(is), t);
        for (int64_t r = 0; r < n; ++r)
          copy_rows(el(y, r * inner), n * inner, el(staged, r * numel(is)), inner, inner, outer, size, s);
        return settle();
      }
      case Op::ReduceScatter: {
        int64_t outer, inner;
        split(os, a.dim, outer, inner);
        if (outer == 1) return comm.reduce_scatter(g, group, x, y, numel(os), t);
        for (int64_t r = 0; r < n; ++r)
          copy_rows(el(staged, r * numel(os)), inner, el(x, r * inner), n * inner, inner, outer, size, s);
        settle();
        return comm.reduce_scatter(g, group, staged, y, numel(os), t);
      }
      case Op::AllToAll: {
        // Chunk r (block r of split_dim) goes to rank r; rank r's chunk lands at block r of dim.
        Shape chunk = is;
        chunk[size_t(a.split_dim)] /= n;
        const int64_t cn = numel(chunk);
        char* send = staged;
        char* recv = el(staged, n * cn);
        auto slab = [&](const void* src, const Shape& ss, void* dst, const Shape& ds, int64_t dim, int64_t src_off,
                        int64_t dst_off, int64_t len) {
          int64_t outer = 1, inner = 1;
          for (int64_t i = 0; i < dim; ++i) outer *= ss[size_t(i)];
          for (size_t i = size_t(dim) + 1; i < ss.size(); ++i) inner *= ss[i];
          copy_rows(el(dst, dst_off * inner), ds[size_t(dim)] * inner, el(src, src_off * inner), ss[size_t(dim)] * inner,
                    len * inner, outer, size, s);
        };
        const int64_t sd = chunk[size_t(a.split_dim)], gd = chunk[size_t(a.dim)];
        for (int64_t r = 0; r < n; ++r) slab(x, is, el(send, r * cn), chunk, a.split_dim, r * sd, 0, sd);
        settle();
        comm.all_to_all(g, group, send, recv, cn, t);
        for (int64_t r = 0; r < n; ++r) slab(el(recv, r * cn), chunk, y, os, a.dim, 0, r * gd, gd);
        return settle();
      }
      default: throw Error(std::string("internal: ") + ir::op_name(ins.op) + " is not a collective");
    }
  }

  ir::Program program_;
  plan::MemoryPlan plan_;
  sharding::Mesh mesh_;
  std::shared_ptr<MeshRuntime> rt_;
  std::vector<Device> devices_;
  std::vector<Step> steps_;
  plan::StackViews views_;      // values that live in another's storage; empty without fusion
  std::vector<SpanInfo> info_;  // per step
  double step_flops_ = 0;       // of one device's step
  uint64_t own_bytes_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& o)
      : gpus_(gpu_count()), threads_(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        processes_(o.processes) {
    if (processes_) require_nccl();  // refused here, with the reason, rather than at the first load
  }

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  bool supports(DType d) const override { return d == DType::F32 || d == DType::I32 || d == DType::BF16 || d == DType::F16; }
  using Backend::supports;
  std::optional<std::string> refusal(const ir::Program& program) const override {
    if (program.stages > 1 && processes_)
      return "over several processes the CUDA backend does not run pipeline stages yet (layer=" + program.stage_axis +
             "); run the pipeline in one process (its stages on virtual GPU devices), on the CPU backend, or map layer to None";
    return Backend::refusal(program);
  }
  int threads() const override { return threads_; }
  Processes* processes() const override { return processes_.get(); }

  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    for (int g = 0; g < gpus_; ++g) {
      cudaDeviceProp p{};
      check(cudaGetDeviceProperties(&p, g), "cudaGetDeviceProperties");
      DeviceInfo d;
      d.kind = DeviceKind::Cuda;
      d.index = g;
      d.name = p.name;
      d.memory_bytes = p.totalGlobalMem;
      d.cores = p.multiProcessorCount;
      out.push_back(d);
    }
    return out;
  }

  // The virtual devices of a mesh share GPU 0's free memory. Over several processes each of this
  // process's devices has a GPU of its own: the least free memory among them.
  uint64_t capacity_per_device(int n) const override {
    if (processes_) {
      uint64_t least = UINT64_MAX;
      const int local = local_devices(n), first = first_gpu(local);
      for (int g = first; g < std::min(gpus_, first + local); ++g) least = std::min(least, free_memory(g));
      return least;
    }
    check(cudaSetDevice(kGpu), "cudaSetDevice");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return uint64_t(free) / uint64_t(std::max(1, n));
  }

  std::optional<OutOfMemory> check_fits(const ir::Program& program, const plan::MemoryPlan& memory,
                                        const sharding::Mesh& mesh, const LoadOptions& options) const override {
    const int n = int(mesh.device_count());
    if (processes_) {
      const int local = local_devices(n), first = processes_->rank() * local, gpu0 = first_gpu(local);
      for (int d = 0; d < local && gpu0 + d < gpus_; ++d)
        if (auto refusal = check_capacity(program, memory, options, free_memory(gpu0 + d), scratch_for(program).bytes(),
                                          "CUDA device " + std::to_string(first + d) + " of " + std::to_string(n) + " (GPU " +
                                              std::to_string(gpu0 + d) + " of process " + std::to_string(processes_->rank()) + ")"))
          return refusal;
      return std::nullopt;
    }
    return check_capacity(program, memory, options, capacity_per_device(n), scratch_for(program).bytes(),
                          n == 1 ? std::string("CUDA device 0")
                                 : "CUDA device 0 of " + std::to_string(n) + " (virtual devices share GPU 0's memory)");
  }

  std::unique_ptr<Executable> load(const ir::Program& program, const plan::MemoryPlan& memory, const sharding::Mesh& mesh,
                                   const LoadOptions& options) override {
    if (const auto why = refusal(program)) throw Error(*why);
    const int n = int(mesh.device_count());
    if (processes_) check_placement(mesh);
    const auto* share = dynamic_cast<const CudaExecutable*>(options.share_persistent_with);
    if (options.share_persistent_with && (!share || share->num_devices() != n))
      throw Error("internal: " + options.what + " cannot share state with a program on another backend or mesh");
    // Refuse before allocating.
    if (auto refusal = check_fits(program, memory, mesh, options)) throw *refusal;
    if (processes_) {
      // Keyed by the mesh itself: its axes decide the communicators.
      auto& rt = process_runtimes_[mesh.str()];
      if (!rt || rt->comm->aborted()) rt = std::make_shared<MeshRuntime>(mesh, *processes_, first_gpu(local_devices(n)));
      peak_gpu_ = rt->gpu(0);
      return std::make_unique<CudaExecutable>(program, memory, mesh, rt, options, share);
    }
    auto& rt = runtimes_[n];
    if (!rt || rt->comm->aborted()) rt = std::make_shared<MeshRuntime>(n);
    return std::make_unique<CudaExecutable>(program, memory, mesh, rt, options, share);
  }

  // The GEMM's best rate at `precision` on GPU 0 (over several processes: this process's first
  // GPU of the last mesh loaded), on a square 4096 product: float32 operands with cuBLAS's compute
  // type for Highest and Tf32, bfloat16 or float16 operands and result for Bf16 and F16.
  double gemm_peak_flops(MatmulPrecision precision) override {
    double& peak = peaks_[precision];
    if (peak > 0) return peak;
    check(cudaSetDevice(peak_gpu_), "cudaSetDevice");
    const int64_t m = 4096;
    DeviceBuffer a(size_t(m * m) * 4), b(size_t(m * m) * 4), c(size_t(m * m) * 4);
    GemmTypes types;
    if (precision == MatmulPrecision::Bf16 || precision == MatmulPrecision::F16)
      types.a = types.b = types.c = precision == MatmulPrecision::Bf16 ? DType::BF16 : DType::F16;
    LtGemm g;
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "cudaEventCreate");
    check(cudaEventCreate(&e1), "cudaEventCreate");
    float best = 1e30f;
    for (int r = 0; r < 6; ++r) {
      check(cudaEventRecord(e0, nullptr), "cudaEventRecord");
      g.run(false, false, m, m, m, a.as<void>(), m, b.as<void>(), m, c.as<void>(), m, nullptr, false, nullptr, precision, types);
      check(cudaEventRecord(e1, nullptr), "cudaEventRecord");
      check(cudaEventSynchronize(e1), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
      if (r > 0) best = std::min(best, ms);  // the first run warms up
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    peak = 2.0 * double(m) * double(m) * double(m) / (double(best) * 1e-3);
    return peak;
  }

 private:
  // Over several processes: the devices each process holds.
  int local_devices(int n) const { return std::max(1, n / processes_->size()); }

  // Over several processes: the GPU of this process's first device. Processes that share a
  // machine share its GPUs out in turn where there are enough for all of them; else each takes
  // GPUs from 0 (a launcher that hands each process its own, through CUDA_VISIBLE_DEVICES; NCCL
  // refuses two devices on one GPU).
  int first_gpu(int local) const {
    const int on_host = std::max(1, processes_->processes_on_this_host());
    if (on_host * local > gpus_) return 0;
    return std::min(rank_on_host(*processes_), on_host - 1) * local;
  }

  uint64_t free_memory(int gpu) const {
    check(cudaSetDevice(gpu), "cudaSetDevice");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return uint64_t(free);
  }

  // Over several processes: the mesh divides among them, and each device of this process has a GPU.
  void check_placement(const sharding::Mesh& mesh) const {
    const int n = int(mesh.device_count()), p = processes_->size();
    sharding::check_process_count(mesh, p);
    if (n / p > gpus_)
      throw Error("backend 'cuda': the mesh " + mesh.str() + " puts " + std::to_string(n / p) + " devices on each of the run's " +
                  std::to_string(p) + " processes, one GPU each, but process " + std::to_string(processes_->rank()) +
                  "'s machine has " + std::to_string(gpus_) + " GPU" + (gpus_ == 1 ? "" : "s") +
                  "; start more processes (one per GPU) or use a smaller mesh");
  }

  int gpus_;
  int threads_;
  std::map<MatmulPrecision, double> peaks_;
  int peak_gpu_ = kGpu;
  std::map<int, std::shared_ptr<MeshRuntime>> runtimes_;
  std::shared_ptr<Processes> processes_;  // null: one process
  std::map<std::string, std::shared_ptr<MeshRuntime>> process_runtimes_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) { return std::make_unique<CudaBackend>(options); }

}  // namespace shardlab::backends::cuda
