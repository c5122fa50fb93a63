// Which parameters the CPU backend's virtual devices may hold in one buffer instead of one copy each.
//
// Under data parallelism with a sharded weight update every device holds the whole parameter, updates
// its own block of it, and an in-place all-gather then copies every other device's block into its
// copy: on 8 virtual devices of deep-mlp-small that is 1 GB written per step to keep 8 identical
// copies of 125 MB in one address space. Held once, each device's update writes its block straight
// into the one buffer and the gather only waits for the other owners (a barrier).
//
// That is the same computation only where no device can see a peer's write early or late. A
// parameter qualifies where, in the step program:
//   - it is float32, no instruction produces it, and every update of it is sharded over all the
//     mesh's devices (so it is replicated on every device, and the blocks the devices write are
//     disjoint);
//   - each update is followed by the in-place gather of that parameter, over the same devices,
//     before anything reads it;
//   - between every read and the next update (going round into the next step) some collective over
//     all the devices stands, so no device updates while a peer still reads the old values.
// One process and no pipeline stages: a gather across processes copies blocks in, and a stage's
// devices run different instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::backends::cpu {

// The values of `program` (a per-device program on a mesh of `devices` devices, all in this
// process) that qualify; empty for one device.
std::vector<int> shared_replicas(const ir::Program& program, int64_t devices);

}  // namespace shardlab::backends::cpu
