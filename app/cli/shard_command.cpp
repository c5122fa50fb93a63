// `shardlab-cli shard`: every array's PartitionSpec, shard shape and bytes per device under a mesh
// and logical axis rules, per-device memory, warnings; `--show` draws one array's blocks.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/pipeline_summary.h"
#include <algorithm>
#include <memory>

#include "engine/backends/backend.h"
#include "engine/ir/primitive.h"
#include "engine/project/run_overrides.h"
#include "engine/runtime/train_step.h"
#include "engine/sharding/partitioner.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/visualize.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {

std::string names_str(const std::vector<std::string>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + (v[i].empty() ? std::string("-") : v[i]);
  return s + ")";
}

nlohmann::ordered_json spec_json(const sharding::PartitionSpec& s, size_t rank) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (size_t i = 0; i < std::max(rank, s.dims.size()); ++i) {
    const auto& d = s.axes_of(i);
    if (d.empty()) j.push_back(nullptr);
    else if (d.size() == 1) j.push_back(d[0]);
    else j.push_back(d);
  }
  return j;
}

// "P('data', None)", with "+sum(model)" where the step holds a pending sum over mesh axes there.
std::string spec_text(const sharding::ArraySharding& x) { return x.error.empty() ? x.spec_text() : "ERROR"; }

}  // namespace

int run_shard(const ShardArgs& a) {
  // Made first: a backend this machine lacks (no GPU) is then the one error reported.
  std::unique_ptr<backends::Backend> backend;
  if (a.backend != "cpu") backend = backends::make_backend(a.backend);
  project::Project p = project::load_project(a.project);
  project::RunOverrides o;
  o.batch_size = a.batch_size;
  o.accumulate = a.accumulate;
  o.pipeline_schedule = a.pipeline_schedule;
  o.dtype = a.precision.dtype;
  o.param_dtype = a.precision.param_dtype;
  o.matmul_precision = a.precision.matmul_precision;
  p = project::with_overrides(std::move(p), o);
  const sharding::Mesh mesh = a.mesh.empty() ? sharding::project_mesh(p) : sharding::parse_mesh(a.mesh);
  try {
    sharding::check_process_count(mesh, a.processes);
  } catch (const Error& e) {
    throw Error("--processes " + std::to_string(a.processes) + ": " + e.what());
  }
  const sharding::LogicalRules rules = a.rules.empty() ? sharding::project_rules(p) : sharding::parse_rules(a.rules);
  graph::GraphReport report = project::analyze_project(p);
  // The report partitions the training step itself: its layouts, buffer plan and collectives are
  // the ones `train` runs with.
  sharding::ShardingReport r = sharding::analyze_sharding(p, report, mesh, rules);
  const sharding::PartitionedStep* step = r.plan.get();
  struct CommSummary {
    std::string kind, axes;
    int count = 0;
    double bytes = 0;
  };
  std::vector<CommSummary> comms;
  if (step)
    for (const auto& c : step->collectives) {
      std::string axes;
      for (const std::string& a : c.axes) axes += (axes.empty() ? "" : "+") + a;
      auto it = std::find_if(comms.begin(), comms.end(), [&](const CommSummary& x) { return x.kind == ir::op_name(c.op) && x.axes == axes; });
      if (it == comms.end()) comms.push_back({ir::op_name(c.op), axes, 0, 0}), it = comms.end() - 1;
      ++it->count;
      it->bytes += c.bytes;
    }

  if (!a.show.empty()) {
    const sharding::ArraySharding* arr = r.find(a.show);
    if (!arr) throw Error("there is no array '" + a.show + "' (see `shardlab-cli shard " + a.project + "` for the names)");
    if (!arr->error.empty()) throw Error(arr->error);
    int rows = 0, cols = 1;
    if (std::sscanf(a.dims.c_str(), "%d,%d", &rows, &cols) != 2) throw Error("--dims '" + a.dims + "': expected two numbers, e.g. 0,1");
    std::printf("%s %s %s on mesh %s: %s, shard %s\n", arr->name.c_str(), shape_str(arr->shape).c_str(),
                names_str(arr->logical).c_str(), mesh.str().c_str(), arr->spec.str().c_str(), shape_str(arr->shard).c_str());
    std::printf("%s", sharding::render_sharding(arr->spec, arr->shape, mesh, rows, cols, "CPU", a.processes).c_str());
    return 0;
  }

  if (a.json) {
    nlohmann::ordered_json j;
    j["project"] = p.display_name();
    j["mesh"] = sharding::mesh_to_json(mesh)["axes"];
    j["microbatches"] = r.microbatches;
    j["rules"] = sharding::rules_to_json(rules);
    j["precision"] = project::summary_json(p.precision);
    j["arrays"] = nlohmann::ordered_json::array();
    for (const auto& x : r.arrays) {
      nlohmann::ordered_json o{{"name", x.name},
                               {"kind", sharding::kind_name(x.kind)},
                               {"logical_axes", x.logical},
                               {"spec", spec_json(x.spec, x.shape.size())},
                               {"shape", x.shape},
                               {"shard_shape", x.shard},
                               {"dtype", dtype_name(x.dtype)},
                               {"bytes_per_device", x.bytes_per_device}};
      if (!x.pending_sum.empty()) o["pending_sum"] = x.pending_sum;
      if (!x.error.empty()) o["error"] = x.error;
      j["arrays"].push_back(o);
    }
    j["devices"] = nlohmann::ordered_json::array();
    for (size_t d = 0; d < r.devices.size(); ++d) {
      const auto& m = r.devices[d];
      nlohmann::ordered_json o{{"device", d}, {"params", m.params}, {"opt_state", m.opt_state},
                               {"arena", m.arena}, {"total", m.total()}};
      if (a.processes > 1) o["process"] = int64_t(d) / (int64_t(r.devices.size()) / a.processes);
      j["devices"].push_back(o);
    }
    j["collectives"] = nlohmann::ordered_json::array();
    for (const auto& c : comms) j["collectives"].push_back({{"kind", c.kind}, {"mesh_axes", c.axes}, {"count", c.count}, {"bytes_per_device", c.bytes}});
    if (step) {
      const auto& m = step->memory;
      j["plan_per_device"] = {{"param_bytes", double(m.param_bytes)}, {"opt_state_bytes", double(m.opt_state_bytes)},
                              {"arena_bytes", double(m.arena_bytes + m.staging_bytes)}, {"total_bytes", double(m.total_bytes())}};
    }
    if (!r.stages.empty()) j["pipeline"] = pipeline_json(r);
    j["warnings"] = r.warnings;
    j["errors"] = r.errors;
    std::cout << j.dump(2) << "\n";
    return r.errors.empty() ? 0 : 1;
  }

  std::printf("%s on mesh %s (%lld devices), rules %s\n\n", p.display_name().c_str(), mesh.str().c_str(),
              (long long)mesh.device_count(), rules.empty() ? "(none)" : sharding::rules_str(rules).c_str());
  if (a.processes > 1) {
    // The device order of a run over processes (backends/processes.h).
    const int64_t per = mesh.device_count() / a.processes;
    std::printf("over %d processes:", a.processes);
    for (int q = 0; q < a.processes; ++q)
      std::printf("%s process %d holds devices %lld-%lld", q ? ";" : "", q, (long long)(q * per), (long long)(q * per + per - 1));
    std::printf("\n\n");
  }
  if (p.precision.str() != "float32") std::printf("precision: %s\n\n", p.precision.str().c_str());
  std::printf("%-28s %-16s %-30s %-47s %-22s %-20s %-5s %12s\n", "array", "kind", "logical axes", "PartitionSpec", "shape",
              "shard", "dtype", "per device");
  std::printf("%s\n", std::string(187, '-').c_str());
  for (const auto& x : r.arrays) {
    std::printf("%-28s %-16s %-30s %-47s %-22s %-20s %-5s %12s\n", x.name.c_str(), sharding::kind_name(x.kind),
                names_str(x.logical).c_str(), spec_text(x).c_str(), shape_str(x.shape).c_str(),
                shape_str(x.shard).c_str(), dtype_short(x.dtype), runtime::format_bytes(x.bytes_per_device).c_str());
  }
  const auto& d0 = r.devices.front();
  if (r.microbatches > 1)
    std::printf("\ngradient accumulation: each step runs %lld microbatches of %lld examples one after another; the inputs "
                "and activations above are one microbatch's\n",
                (long long)r.microbatches, (long long)(p.training.batch_size / r.microbatches));
  if (!r.stages.empty()) std::printf("\n%s", pipeline_text(r).c_str());
  if (step && !r.stages.empty())
    std::printf("\nper device, from the partitioned training step's buffer plan:\n"
                "  parameters %s + optimizer state %s + step arena %s (on stage 0's; each stage's above) = %s\n",
                runtime::format_bytes(d0.params).c_str(), runtime::format_bytes(d0.opt_state).c_str(),
                runtime::format_bytes(d0.arena).c_str(), runtime::format_bytes(d0.total()).c_str());
  else if (step)
    std::printf("\nper device, from the partitioned training step's buffer plan:\n"
                "  parameters %s + optimizer state %s + step arena %s (inputs, activations, gradients; reused as the step runs)"
                " = %s on each of %zu devices\n",
                runtime::format_bytes(d0.params).c_str(), runtime::format_bytes(d0.opt_state).c_str(),
                runtime::format_bytes(d0.arena).c_str(), runtime::format_bytes(d0.total()).c_str(), r.devices.size());
  else
    std::printf("\nno partitioned step while a layout is in error: the blocks above are what the rules give\n");
  if (step) {
    const auto& m = step->memory;
    if (backend) {
      const uint64_t cap = backend->capacity_per_device(int(mesh.device_count()));
      std::printf("  on %s: %s free per device%s\n", backend->devices().front().name.c_str(),
                  runtime::format_bytes(double(cap)).c_str(),
                  double(m.total_bytes()) > double(cap) ? " (the step will not fit)" : "");
    }
    std::printf("\ncollectives per training step:%s\n", comms.empty() ? " none" : "");
    for (const auto& c : comms)
      std::printf("  %-19s over %-12s x%-4d %s per device\n", c.kind.c_str(), c.axes.c_str(), c.count, runtime::format_bytes(c.bytes).c_str());
  }
  for (const std::string& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  for (const std::string& e : r.errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  return r.errors.empty() ? 0 : 1;
}

}  // namespace shardlab::cli
