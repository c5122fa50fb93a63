// `shardlab-cli check`: refuses what `train` would refuse, with train's words (runtime::preflight);
// for a project that would train, the per-layer table, like Flax's tabulate or MATLAB's analyzeNetwork.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/pipeline_summary.h"
#include "engine/backends/backend.h"
#include "engine/project/project.h"
#include "engine/project/run_overrides.h"
#include "engine/runtime/preflight.h"
#include "engine/runtime/train_step.h"

namespace shardlab::cli {

namespace {

std::string axes_shape(const Shape& s, const std::vector<std::string>& axes) {
  return graph::describe(graph::ArrayInfo{s, axes});
}

std::string si(double v) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (v >= 1000.0 && u < 5) v /= 1000.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

struct Row {
  const graph::NodeReport* node;
  int depth;  // > 0: inside a Repeat block (shown, not counted again in the totals)
};

void flatten(const std::vector<graph::NodeReport>& nodes, int depth, std::vector<Row>& out) {
  for (const auto& n : nodes) {
    out.push_back({&n, depth});
    flatten(n.body, depth + 1, out);
  }
}

// The validation's verdict, for --json.
nlohmann::ordered_json validation_json(const runtime::Preflight& f) {
  nlohmann::ordered_json v;
  v["ok"] = f.ok();
  v["errors"] = f.errors;
  if (!f.ok()) return v;
  v["mesh"] = f.mesh.str();
  v["devices"] = f.mesh.device_count();
  v["bytes_per_device"] = f.need_bytes;
  v["capacity_per_device"] = f.capacity_bytes;
  return v;
}

// One line per error, as main() prints a thrown one, and under it, indented, what would fix it
// where the check can say.
void print_errors(const runtime::Preflight& f) {
  auto one_line = [](std::string s) {
    for (char& ch : s)
      if (ch == '\n') ch = ';';
    return s;
  };
  for (size_t i = 0; i < f.errors.size(); ++i) {
    std::cerr << "shardlab-cli: error: " << one_line(f.errors[i]) << "\n";
    if (i < f.problems.size() && f.problems[i].message == f.errors[i] && !f.problems[i].fix.empty())
      std::cerr << "  fix: " << one_line(f.problems[i].fix) << "\n";
  }
}

}  // namespace

int run_check(const CheckArgs& a) {
  project::Project p = project::load_project(a.project);
  project::RunOverrides o;
  o.batch_size = a.batch_size;
  o.accumulate = a.accumulate;
  o.pipeline_schedule = a.pipeline_schedule;
  o.dtype = a.precision.dtype;
  o.param_dtype = a.precision.param_dtype;
  o.matmul_precision = a.precision.matmul_precision;
  p = project::with_overrides(std::move(p), o);
  runtime::PreflightOptions checks;
  checks.mesh = a.mesh;
  checks.rules = a.rules;
  checks.devices = a.devices;
  checks.data = true;
  const runtime::Preflight verdict = runtime::preflight(p, *backends::make_backend("cpu"), checks);
  if (!verdict.ok()) {
    if (a.json) {
      nlohmann::ordered_json j;
      j["project"] = p.display_name();
      j["batch_size"] = p.training.batch_size;
      j["validation"] = validation_json(verdict);
      std::cout << j.dump(2) << "\n";
    }
    print_errors(verdict);
    return 1;
  }
  graph::GraphReport report = project::analyze_project(p);
  runtime::StepProgram step = runtime::build_step(p, report, p.training.batch_size, true);
  // Pipeline stages: what each holds and the bubble, from the plan train would run.
  sharding::ShardingReport layouts;
  if (sharding::pipeline_of(verdict.rules, verdict.mesh).on()) layouts = sharding::analyze_sharding(p, report, verdict.mesh, verdict.rules);
  std::vector<Row> rows;
  flatten(report.nodes, 0, rows);

  int64_t total_params = 0;
  double total_flops = 0;
  for (const Row& r : rows)
    if (r.depth == 0) total_params += r.node->param_count, total_flops += r.node->flops;
  const auto& m = step.memory;

  if (a.json) {
    nlohmann::ordered_json j;
    j["project"] = p.display_name();
    j["batch_size"] = p.training.batch_size;
    j["accumulate"] = p.training.accumulate;
    j["precision"] = project::summary_json(p.precision);
    j["layers"] = nlohmann::ordered_json::array();
    for (const Row& row : rows) {
      const graph::NodeReport* n = row.node;
      nlohmann::ordered_json l;
      l["name"] = n->name;
      l["type"] = n->type;
      l["output_shape"] = n->output.shape;
      l["output_axes"] = n->output.axes;
      l["params"] = nlohmann::ordered_json::array();
      for (const auto& prm : n->params)
        l["params"].push_back({{"name", prm.name}, {"shape", prm.shape}, {"axes", prm.axes}, {"init", prm.init.type}});
      l["param_count"] = n->param_count;
      l["forward_flops"] = n->flops;
      l["depth"] = row.depth;  // inside a Repeat block when > 0 (its figures are per layer)
      j["layers"].push_back(l);
    }
    j["totals"] = {{"param_count", total_params},
                   {"forward_flops", total_flops},
                   {"train_step_flops", step.step_flops}};
    j["memory"] = {{"param_bytes", double(m.param_bytes)},
                   {"opt_state_bytes", double(m.opt_state_bytes)},
                   {"arena_bytes", double(m.arena_bytes)},
                   {"staging_bytes", double(m.staging_bytes)},
                   {"input_bytes", double(m.input_bytes)},
                   {"unplanned_temp_bytes", double(m.naive_temp_bytes)},
                   {"total_bytes", double(m.total_bytes())}};
    if (!layouts.stages.empty()) j["pipeline"] = pipeline_json(layouts);
    j["validation"] = validation_json(verdict);
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  if (p.training.accumulate > 1)
    std::printf("%s — batch %lld, as %lld microbatches of %lld\n\n", p.display_name().c_str(), (long long)p.training.batch_size,
                (long long)p.training.accumulate, (long long)(p.training.batch_size / p.training.accumulate));
  else
    std::printf("%s — batch %lld\n\n", p.display_name().c_str(), (long long)p.training.batch_size);
  // The type column grows to the longest type (MultiHeadAttention).
  int tw = 10;
  for (const Row& row : rows) tw = std::max(tw, int(row.node->type.size()));
  const std::string rule(size_t(133 + tw - 10), '-');
  std::printf("%-18s %-*s %-34s %-44s %12s %10s\n", "layer", tw, "type", "output", "parameters", "params", "FLOPs");
  std::printf("%s\n", rule.c_str());
  for (const Row& row : rows) {
    const graph::NodeReport* n = row.node;
    const std::string name = std::string(size_t(2 * row.depth), ' ') + n->name;
    std::vector<std::string> plines;
    for (const auto& prm : n->params) plines.push_back(prm.name + " " + axes_shape(prm.shape, prm.axes));
    if (plines.empty()) plines.push_back("");
    for (size_t i = 0; i < plines.size(); ++i) {
      if (i == 0)
        std::printf("%-18s %-*s %-34s %-44s %12s %10s\n", name.c_str(), tw, n->type.c_str(),
                    graph::describe(n->output).c_str(), plines[0].c_str(),
                    n->param_count ? si(double(n->param_count)).c_str() : "", n->flops ? si(n->flops).c_str() : "");
      else
        std::printf("%-18s %-*s %-34s %-44s\n", "", tw, "", "", plines[i].c_str());
    }
  }
  std::printf("%s\n", rule.c_str());
  std::printf("total: %lld parameters (%s), forward %sFLOPs, training step %sFLOPs\n", (long long)total_params,
              runtime::format_bytes(double(m.param_bytes)).c_str(), si(total_flops).c_str(),
              si(step.step_flops).c_str());
  std::printf("memory plan: parameters %s + optimizer state %s + step arena %s%s = %s (temporaries unplanned: %s)\n",
              runtime::format_bytes(double(m.param_bytes)).c_str(), runtime::format_bytes(double(m.opt_state_bytes)).c_str(),
              runtime::format_bytes(double(m.arena_bytes)).c_str(),
              m.staging_bytes ? (" + float32 staging " + runtime::format_bytes(double(m.staging_bytes))).c_str() : "",
              runtime::format_bytes(double(m.total_bytes())).c_str(),
              runtime::format_bytes(double(m.naive_temp_bytes + m.input_bytes)).c_str());
  std::printf("%s", pipeline_text(layouts).c_str());
  std::printf("train would run: mesh %s, %s of %s per device, data fits the model\n", verdict.mesh.str().c_str(),
              runtime::format_bytes(verdict.need_bytes).c_str(), runtime::format_bytes(verdict.capacity_bytes).c_str());
  return 0;
}

}  // namespace shardlab::cli
