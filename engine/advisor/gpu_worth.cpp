#include "engine/advisor/gpu_worth.h"

#include <cstdio>

#include "engine/sharding/layout.h"
#include "engine/util/error.h"

namespace shardlab::advisor {

GpuVerdict gpu_worth_it(const project::Project& p, const Hardware& cpu, const Hardware& gpu) {
  const graph::GraphReport report = project::analyze_project(p);
  if (!report.ok()) throw Error(p.display_name() + ": " + report.errors.front());
  const sharding::Mesh one;
  const sharding::ShardingReport r = sharding::analyze_sharding(p, report, one, {});
  if (!r.plan) throw Error(p.display_name() + ": " + (r.errors.empty() ? "the step could not be planned" : r.errors.front()));

  GpuVerdict v;
  v.cpu_name = cpu.name;
  v.gpu_name = gpu.name;
  v.cpu = predict(*r.plan, one, cpu);
  v.gpu = predict(*r.plan, one, gpu);
  v.speedup = v.gpu.step_s > 0 ? v.cpu.step_s / v.gpu.step_s : 0;
  v.bytes_per_step = r.devices.front().total();
  v.fits_gpu = gpu.memory_bytes <= 0 || v.bytes_per_step <= gpu.memory_bytes;
  for (const ir::Value& val : r.plan->program.values)
    if (val.kind == ir::ValueKind::Input || val.kind == ir::ValueKind::Target) v.batch_bytes += double(numel(val.shape) * int64_t(dtype_size(val.dtype)));
  v.examples_per_step = double(p.training.batch_size);
  if (v.gpu.step_s > 0) {
    v.examples_per_s_needed = v.examples_per_step / v.gpu.step_s;
    v.bytes_per_s_needed = v.batch_bytes / v.gpu.step_s;
  }
  if (gpu.host_to_device_bytes_per_s > 0) v.host_link_fraction = v.bytes_per_s_needed / gpu.host_to_device_bytes_per_s;

  char buf[400];
  if (!v.fits_gpu)
    std::snprintf(buf, sizeof buf, "No: one step needs more memory than one GPU has; shard it over several (advise --devices N --hardware ...).");
  else if (v.speedup < 2)
    std::snprintf(buf, sizeof buf, "Hardly: the GPU is predicted only %.1fx faster; steps this small are bound by fixed costs, not arithmetic.",
                  v.speedup);
  else if (v.host_link_fraction > 1)
    std::snprintf(buf, sizeof buf,
                  "Only with a faster input pipeline: the GPU is predicted %.0fx faster, but feeding it would take %.1fx its host link.",
                  v.speedup, v.host_link_fraction);
  else
    std::snprintf(buf, sizeof buf, "Yes: predicted %.0fx faster, if the input pipeline delivers %.0f examples/s.", v.speedup,
                  v.examples_per_s_needed);
  v.verdict = buf;
  return v;
}

}  // namespace shardlab::advisor
