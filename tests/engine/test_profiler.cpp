// Step traces: the Chrome trace JSON is well formed (every span has pid/tid/ts/dur, spans on a
// track nest), span totals account for the step's wall time, collectives show where the plan
// put them, spans name the arrays they touched as the Sharding view does, light mode keeps only
// totals, and the ring keeps the last K steps.
#include <QtTest>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "engine/api/design.h"
#include "engine/profiler/instruction_arrays.h"
#include "engine/runtime/trainer.h"

using namespace shardlab;
using Json = nlohmann::json;

namespace {

const char* kMlp = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [64], "axes": ["embed"]}},
      {"name": "l0", "type": "Dense", "params": {"features": 128}}, {"name": "r0", "type": "ReLU"},
      {"name": "l1", "type": "Dense", "params": {"features": 128}, "param_axes": {"kernel": ["mlp", "embed"], "bias": ["embed"]}},
      {"name": "r1", "type": "ReLU"},
      {"name": "out", "type": "Dense", "params": {"features": 8}, "param_axes": {"kernel": ["embed", "classes"], "bias": ["classes"]}}],
    "edges": [{"from": "x.out", "to": "l0.in"}, {"from": "l0.out", "to": "r0.in"}, {"from": "r0.out", "to": "l1.in"},
              {"from": "l1.out", "to": "r1.in"}, {"from": "r1.out", "to": "out.in"}]},
  "loss": {"type": "mean_squared_error", "output": "out"},
  "optimizer": {"type": "adam"},
  "data": {"type": "synthetic", "kind": "normal", "feature_shape": [64], "target_shape": [8], "examples": 512},
  "training": {"batch_size": 64, "steps": 6, "eval": false}
})";

}  // namespace

class TestProfiler : public QObject {
  Q_OBJECT
 private slots:
  void chromeTraceIsWellFormedAndNests() {
    runtime::TrainOptions o;
    o.trace_detailed = true;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    Json j = Json::parse(t.trace().to_chrome_json());
    QVERIFY(j.contains("traceEvents"));
    QCOMPARE(j["displayTimeUnit"].get<std::string>(), std::string("ms"));
    std::map<int, std::vector<std::pair<double, double>>> tracks;
    int named = 0, counters = 0, spans = 0;
    for (const auto& e : j["traceEvents"]) {
      const std::string ph = e["ph"];
      QVERIFY(e.contains("pid"));
      if (ph == "M") {
        named += e["name"] == "thread_name";
      } else if (ph == "C") {
        ++counters;
        QVERIFY(e.contains("ts") && e["args"].contains("live bytes"));
      } else {
        QCOMPARE(ph, std::string("X"));
        QVERIFY(e.contains("tid") && e.contains("ts") && e.contains("dur") && e.contains("name") && e.contains("cat"));
        QVERIFY(e["dur"].get<double>() >= 0);
        tracks[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
        ++spans;
      }
    }
    QVERIFY(named >= 2);  // compute and data tracks of CPU 0
    QVERIFY(counters > 0);
    QVERIFY(spans > 6 * 10);
    // Spans on one track either nest or follow each other (what Perfetto needs of X events).
    for (auto& [tid, list] : tracks) {
      std::sort(list.begin(), list.end(), [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
      std::vector<double> open;
      for (auto [b, e] : list) {
        while (!open.empty() && open.back() <= b) open.pop_back();
        QVERIFY2(open.empty() || e <= open.back() + 1e-3, qPrintable(QString("track %1: span [%2, %3] straddles its parent").arg(tid).arg(b).arg(e)));
        open.push_back(e);
      }
    }
  }

  void spanTotalsAccountForTheStep() {
    runtime::TrainOptions o;
    o.trace_detailed = true;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    const auto summaries = t.trace().summaries();
    QCOMPARE(summaries.size(), size_t(6));
    // Spans never exceed their step. They cover it but for the gaps between them; a step of a few
    // hundred microseconds can lose one scheduler slice to another process, so the coverage is
    // asserted on the median step, not on every one.
    std::vector<double> coverage;
    for (const auto& s : summaries) {
      const double busy = s.compute_us + s.collective_us + s.optimizer_us + s.data_us;
      QVERIFY2(busy <= s.wall_us * 1.0001, qPrintable(QString("step %1: spans %2 us of %3 us").arg(s.step).arg(busy).arg(s.wall_us)));
      coverage.push_back(busy / s.wall_us);
      QVERIFY(s.optimizer_us > 0 && s.compute_us > 0);
      QCOMPARE(s.collective_us, 0.0);
    }
    std::sort(coverage.begin(), coverage.end());
    QVERIFY2(coverage[coverage.size() / 2] >= 0.95, qPrintable(QString("median step: spans cover %1 of it").arg(coverage[coverage.size() / 2])));
    // Per step, the primitive spans' FLOPs are the plan's training-step FLOPs.
    double flops = 0;
    for (const auto& sp : t.trace().spans())
      if (sp.step == 2 && sp.category != profiler::Category::Step) flops += sp.flops;
    QVERIFY2(std::abs(flops - t.step_program().step_flops) <= 1e-6 * flops, qPrintable(QString("%1 vs %2").arg(flops).arg(t.step_program().step_flops)));
  }

  // The weight update is sharded over `data`: each gradient is reduce-scattered, each device
  // updates its quarter, and an in-place all-gather brings the parameter back whole.
  void dataParallelTraceShowsEachGradientsCollectives() {
    runtime::TrainOptions o;
    o.trace_detailed = true;
    o.mesh = "data=4";
    o.rules = "batch=data";
    o.threads = 4;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    std::map<std::pair<int, int64_t>, std::map<std::string, int>> seen;  // (device, step) -> collective -> count
    for (const auto& sp : t.trace().spans())
      if (sp.category == profiler::Category::Collective) {
        QVERIFY(sp.bytes > 0);
        ++seen[{sp.device, sp.step}][sp.name];
      }
    QCOMPARE(seen.size(), size_t(4 * 6));
    const std::map<std::string, int> want{{"reduce_scatter", 6}, {"all_gather_in_place", 6}, {"all_reduce", 1}};
    for (auto& [key, n] : seen) QCOMPARE(n, want);  // 3 kernels, 3 biases, and the loss
    QCOMPARE(t.trace().summaries().size(), size_t(4 * 6));
  }

  // dot-relu-dot: a Repeat of 4 layers (W1, relu, W2) on a data=2 x model=4 mesh. Every array a
  // span names is one the Sharding view has; the program's own value names never show.
  void spansNameOnlyArraysTheShardingViewHas() {
    const project::Project p = project::load_project(std::string(SHARDLAB_SOURCE_DIR) + "/projects/dot-relu-dot.shardlab.json");
    const api::Design design = api::check_design(p);
    QVERIFY(design.sharding_ok);
    runtime::TrainOptions o;
    o.trace_detailed = true;
    o.steps = 2;
    o.threads = 2;
    runtime::Trainer t(p, o);
    t.run();
    std::set<std::string> named;
    std::map<std::string, std::set<std::string>> readsOf, writesOf;  // "node primitive" -> arrays
    int collectivesNamingAnArray = 0;
    for (const auto& sp : t.trace().spans()) {
      if (sp.category == profiler::Category::Data || sp.category == profiler::Category::Step) continue;
      if (!sp.array.empty()) QVERIFY2(design.sharding.find(sp.array), sp.array.c_str());
      if (!sp.arrays) continue;
      for (const auto* list : {&sp.arrays->reads, &sp.arrays->writes})
        for (const std::string& a : *list) {
          QVERIFY2(design.sharding.find(a), qPrintable(QString::fromStdString(sp.node + " " + sp.name + ": " + a)));
          named.insert(a);
        }
      const std::string key = sp.node + " " + sp.name.substr(0, sp.name.find('+'));  // "matmul+bias+relu" is a matmul
      readsOf[key].insert(sp.arrays->reads.begin(), sp.arrays->reads.end());
      writesOf[key].insert(sp.arrays->writes.begin(), sp.arrays->writes.end());
      collectivesNamingAnArray += sp.category == profiler::Category::Collective;
    }
    // The stacked kernel, read layer by layer; its gradient and Adam state at the update (whose
    // spans carry the parameter's path as their node).
    QVERIFY(readsOf["blocks/W1 matmul"].count("blocks/W1/kernel"));
    QVERIFY(writesOf["blocks/W1 matmul"].count("blocks/W1"));  // W1's activation
    QVERIFY(readsOf["blocks/W2 matmul"].count("blocks/relu"));
    QVERIFY(readsOf["blocks/W1/kernel adam_update"].count("d_blocks/W1/kernel"));
    QVERIFY(writesOf["blocks/W1/kernel adam_update"].count("blocks/W1/kernel"));
    QVERIFY(writesOf["blocks/W1/kernel adam_update"].count("blocks/W1/kernel/mu"));
    QVERIFY(named.count("x"));
    QVERIFY(collectivesNamingAnArray > 0);
  }

  // Per value of a small program: what instruction_arrays calls it.
  void valuesAreNamedAsArraysOrLeftOut() {
    ir::Program p;
    const int x = p.add_value("input:x", {4, 8}, ir::ValueKind::Input);
    const int k = p.add_value("d/kernel", {8, 8}, ir::ValueKind::Param);
    const int mu = p.add_value("d/kernel/mu", {8, 8}, ir::ValueKind::OptState);
    const int y = p.add_value("y", {4, 8}, ir::ValueKind::Target);
    const int mm = p.apply1(ir::Op::MatMul, {x, k}, {}, "d");   // "d/matmul": d's output, the loss reads it
    const int loss = p.apply1(ir::Op::Mse, {mm, y}, {}, "", "loss");
    const int g = p.apply1(ir::Op::Fill, {}, [] { ir::Attrs a; a.shape = {8, 8}; return a; }(), "d", "");
    const int gr = p.apply1(ir::Op::AllReduce, {g}, {}, "d");  // the gradient summed over devices
    p.apply(ir::Op::AdamUpdate, {k, gr, mu, mu}, {}, "d");
    const std::vector<std::string> names = profiler::value_arrays(p);
    QCOMPARE(names[size_t(x)], std::string("x"));
    QCOMPARE(names[size_t(k)], std::string("d/kernel"));
    QCOMPARE(names[size_t(mu)], std::string("d/kernel/mu"));
    QCOMPARE(names[size_t(y)], std::string());  // the labels are fed, but are no array of the model
    QCOMPARE(names[size_t(mm)], std::string("d"));
    QCOMPARE(names[size_t(loss)], std::string());
    QCOMPARE(names[size_t(gr)], std::string("d_d/kernel"));
    QCOMPARE(names[size_t(g)], std::string("d_d/kernel"));  // before the collective: the same gradient
    const auto per = profiler::instruction_arrays(p);
    QCOMPARE(per.back().reads, (std::vector<std::string>{"d/kernel", "d_d/kernel", "d/kernel/mu"}));
    QCOMPARE(per.back().writes, (std::vector<std::string>{"d/kernel", "d/kernel/mu"}));
  }

  void lightModeKeepsTotalsButNoSpans() {
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"));
    t.run();
    QVERIFY(t.trace().spans().empty());
    QCOMPARE(t.trace().summaries().size(), size_t(6));
  }

  void ringKeepsTheLastSteps() {
    runtime::TrainOptions o;
    o.trace_detailed = true;
    o.trace_keep = 2;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    std::set<int64_t> steps;
    for (const auto& sp : t.trace().spans()) steps.insert(sp.step);
    QCOMPARE(steps, (std::set<int64_t>{4, 5}));
    QCOMPARE(t.trace().summaries().size(), size_t(6));  // summaries of every step stay
  }

  void traceStepRangeLimitsDetailedSpans() {
    runtime::TrainOptions o;
    o.trace_detailed = true;
    o.trace_first = 2;
    o.trace_last = 3;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    std::set<int64_t> steps;
    for (const auto& sp : t.trace().spans())
      if (sp.category != profiler::Category::Data) steps.insert(sp.step);
    QCOMPARE(steps, (std::set<int64_t>{1, 2}));  // 0-based steps 1 and 2 are steps 2 and 3
  }

  void perfettoTraceProcessorIsNotAvailableOffline() {
    // Perfetto's Python TraceProcessor downloads its trace_processor_shell binary at run time,
    // which this machine (no network beyond package registries) cannot do; the structural checks
    // above stand in for it.
    QSKIP("perfetto's trace processor fetches its binary from the network at run time; checked the JSON structurally instead");
  }
};

QTEST_APPLESS_MAIN(TestProfiler)
#include "test_profiler.moc"
