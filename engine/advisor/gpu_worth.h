// Seed 000's question, "is a GPU worth it?", answered for a project before anything runs: its step
// on one device of this machine's CPU and on one GPU of a profile, predicted from the same
// one-device plan, and the rate at which batches must arrive to keep the GPU busy.
#pragma once

#include <string>

#include "engine/advisor/hardware.h"
#include "engine/advisor/step_cost.h"
#include "engine/project/project.h"

namespace shardlab::advisor {

struct GpuVerdict {
  std::string cpu_name, gpu_name;
  Prediction cpu, gpu;               // one step on one device of each
  double speedup = 0;                // cpu.step_s / gpu.step_s
  double bytes_per_step = 0;         // the plan's memory on one device
  bool fits_gpu = false;             // against the GPU's memory
  double batch_bytes = 0;            // inputs and targets of one step
  double examples_per_step = 0;
  double examples_per_s_needed = 0;  // to keep the GPU busy: a batch per predicted GPU step
  double bytes_per_s_needed = 0;
  double host_link_fraction = 0;     // of the GPU's host link that feeding it takes
  std::string verdict;               // one sentence
};

GpuVerdict gpu_worth_it(const project::Project& p, const Hardware& cpu, const Hardware& gpu);

}  // namespace shardlab::advisor
