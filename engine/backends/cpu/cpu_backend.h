// The CPU backend: N virtual devices of one process, each a persistent thread with its own buffers,
// exchanging data through shared-memory collectives (like XLA's host platform device count).
#pragma once

#include <map>
#include <memory>

#include "engine/backends/backend.h"

namespace shardlab::backends::cpu {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

// The host's memory a new allocation can still get: available memory, and the address-space limit.
uint64_t host_memory_available();

}  // namespace shardlab::backends::cpu
