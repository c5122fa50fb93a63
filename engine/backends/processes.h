// The processes of one run, launched together by mpirun or srun (seed 001's multi-host model: each
// process runs the same program, the mesh spans every process's devices, each process holds its
// own devices' blocks). The engine sees them only through this interface; the MPI implementation
// lives in engine/backends/mpi and is linked by the programs that can be launched that way.
//
// Device order: the mesh's devices are numbered row-major over its axes (sharding::Mesh), and
// process r holds the `local` consecutive devices [r * local, (r + 1) * local). Axes listed last
// thus stay inside a process (data=2,model=4 on 2 processes: each process holds one data row of 4
// model devices), as JAX lays a mesh over hosts.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/collectives.h"

namespace shardlab::backends {

class Processes {
 public:
  virtual ~Processes() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What a launcher calls this run ("Open MPI 4.1.4"), for logs.
  virtual std::string describe() const = 0;
  // Processes of this run on this machine (they share its cores).
  virtual int processes_on_this_host() const = 0;

  // Host-side collectives, called by every process at the same point of the program (between
  // steps, never while devices run).
  virtual void barrier() = 0;
  // out (size() * bytes) = every process's `bytes` at `in`, in rank order.
  virtual void all_gather(const void* in, void* out, size_t bytes) = 0;
  // buf (bytes) on every process = root's.
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  // True on every process when `flag` is true on any (a stop asked for on one process stops all
  // of them at the same step).
  virtual bool any(bool flag) = 0;

  // The collectives among the `num_devices` devices of a mesh laid over these processes, `local`
  // of them in each: global device ids, the shared-memory path between a process's own devices.
  virtual std::unique_ptr<Collectives> device_collectives(int num_devices, int local) = 0;

  // Ends every process of the run at once, after this process has reported its error.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// The process that holds `device` when every process holds `local` devices.
constexpr int process_of_device(int device, int local) { return local > 0 ? device / local : 0; }

// A broadcast string from `root` to every process (a checkpoint directory chosen by process 0).
std::string broadcast_string(Processes& p, const std::string& s, int root);
// Every process's `s`, in rank order, on every process (each process's error, or none).
std::vector<std::string> all_gather_strings(Processes& p, const std::string& s);

}  // namespace shardlab::backends
