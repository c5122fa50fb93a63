// Gradient accumulation (training.accumulate, Optax's MultiSteps): M microbatches in one step give
// the update of one step on the whole batch, on one device and sharded; only one microbatch's
// activations are live at a time, so the plan's arena shrinks with M; the gradients' collectives
// run once per step, not once per microbatch; a count that does not divide the batch is refused
// naming the field.
#include <QtTest>
#include <cmath>
#include <random>

#include "engine/project/run_overrides.h"
#include "engine/runtime/trainer.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/partitioner.h"
#include "microbatch_runs.h"
#include "test_support.h"

using namespace shardlab;
using shardlab::testing::Batch;
using shardlab::testing::batches;
using shardlab::testing::relative_difference;
using shardlab::testing::Run;

namespace {

// Every kind of layer a step differentiates through except Dropout (whose masks are drawn per
// microbatch, so they differ from the whole batch's by design).
const char* kProject = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {
    "nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [24]}},
      {"name": "d0", "type": "Dense", "params": {"features": 64}},
      {"name": "g", "type": "GELU"},
      {"name": "ln", "type": "LayerNorm"},
      {"name": "d1", "type": "Dense", "params": {"features": 32}},
      {"name": "r", "type": "ReLU"},
      {"name": "head", "type": "Dense", "params": {"features": 4}}
    ],
    "edges": [{"from": "x.out", "to": "d0.in"}, {"from": "d0.out", "to": "g.in"}, {"from": "g.out", "to": "ln.in"},
              {"from": "ln.out", "to": "d1.in"}, {"from": "d1.out", "to": "r.in"}, {"from": "r.out", "to": "head.in"}]
  },
  "loss": {"type": "softmax_cross_entropy", "output": "head"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [24], "classes": 4, "examples": 512, "seed": 3},
  "training": {"batch_size": 32, "steps": 3, "seed": 1, "eval": false}
})";

project::Project base_project() { return project::parse_project(kProject, "accumulation.shardlab.json"); }

Run train(int64_t accumulate, const std::string& mesh = "", const std::string& rules = "") {
  runtime::TrainOptions o;
  o.accumulate = accumulate;
  o.mesh = mesh;
  o.rules = rules;
  runtime::Trainer t(base_project(), o);
  Run r;
  for (const Batch& b : batches(3, 32)) r.losses.push_back(t.train_step(b.x, b.y));
  for (const std::string& path : t.parameter_paths()) r.params[path] = t.parameter(path);
  return r;
}

// The step's arena per device (bytes) with M microbatches, as the design check reads it.
double arena_bytes(project::Project p, int64_t accumulate, const std::string& mesh, const std::string& rules) {
  project::RunOverrides o;
  o.accumulate = accumulate;
  p = project::with_overrides(std::move(p), o);
  const sharding::ShardingReport r =
      sharding::analyze_sharding(p, project::analyze_project(p), sharding::parse_mesh(mesh), sharding::parse_rules(rules));
  if (!r.errors.empty()) throw Error(r.errors.front());
  return r.devices.front().arena;
}

}  // namespace

class TestAccumulation : public QObject {
  Q_OBJECT
 private slots:
  void microbatchesEqualOneStepOnTheWholeBatch_data() {
    QTest::addColumn<int>("accumulate");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("one device, 2 microbatches") << 2 << QString() << QString();
    QTest::newRow("one device, 8 microbatches") << 8 << QString() << QString();
    QTest::newRow("data=8, 4 microbatches") << 4 << QString("data=8") << QString("batch=data");
    QTest::newRow("FSDP data=8, 2 microbatches") << 2 << QString("data=8") << QString("batch=data,embed=data");
    QTest::newRow("Megatron data=2,model=4, 4 microbatches") << 4 << QString("data=2,model=4") << QString("batch=data,mlp=model");
  }

  // The update of M microbatches is the update of the whole batch: losses (the mean over the
  // microbatches) and every parameter after 3 Adam steps, against one device without accumulation.
  void microbatchesEqualOneStepOnTheWholeBatch() {
    QFETCH(int, accumulate);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    const Run whole = train(1);
    const Run micro = train(accumulate, mesh.toStdString(), rules.toStdString());
    const QString diff = shardlab::testing::first_difference(micro, whole);
    QVERIFY2(diff.isEmpty(), qPrintable("in microbatches, against the whole batch: " + diff));
    // The parameters moved: the comparison is of three real updates.
    const runtime::Trainer fresh(base_project());
    QVERIFY(relative_difference(whole.params.at("d0/kernel"), fresh.parameter("d0/kernel")) > 1e-3);
  }

  // An activation-heavy model (narrow layers, a large batch): the design check's arena per device
  // falls as M grows, on one device and on data=2, because one microbatch's activations are live
  // at a time.
  void theArenaShrinksWithMicrobatches() {
    project::Project p = base_project();
    p.training.batch_size = 1024;
    p.training_json["batch_size"] = 1024;
    for (const auto& [mesh, rules] : {std::pair<std::string, std::string>{"data=1", "batch=data"}, {"data=2", "batch=data"}}) {
      double last = 0;
      for (int64_t m : {1, 2, 4, 8}) {
        const double arena = arena_bytes(p, m, mesh, rules);
        if (m > 1)
          QVERIFY2(arena < last, qPrintable(QString("%1: %2 microbatches need %3 bytes, %4 need %5")
                                                 .arg(QString::fromStdString(mesh)).arg(m).arg(arena).arg(m / 2).arg(last)));
        last = arena;
      }
      QVERIFY2(last < 0.5 * arena_bytes(p, 1, mesh, rules), qPrintable(QString("8 microbatches: %1 bytes").arg(last)));
    }
  }

  // Where the summed gradients cost more than the activations save (wide layers, a small batch),
  // the design check warns, naming the field; where activations dominate it does not.
  void theDesignCheckWarnsWhenMicrobatchesCostMemory() {
    auto accumulate_warnings = [](project::Project p, int64_t m) {
      p.training.accumulate = m;
      const sharding::ShardingReport r = sharding::analyze_sharding(p, project::analyze_project(p), sharding::parse_mesh("data=1"),
                                                                    sharding::parse_rules("batch=data"));
      std::vector<Diagnostic> out;
      for (const Diagnostic& d : r.diagnostics)
        if (d.code == "memory.accumulate") out.push_back(d);
      return out;
    };
    std::string text = kProject;
    for (const auto& [from, to] : {std::pair<std::string, std::string>{R"("features": 64)", R"("features": 1024)"},
                                   {R"("batch_size": 32)", R"("batch_size": 8)"}})
      text.replace(text.find(from), from.size(), to);
    const project::Project wide = project::parse_project(text, "wide.shardlab.json");
    const std::vector<Diagnostic> w = accumulate_warnings(wide, 4);
    QCOMPARE(w.size(), size_t(1));
    QCOMPARE(w[0].field, std::string("training.accumulate"));
    QCOMPARE(w[0].severity, Severity::Warning);
    VERIFY_CONTAINS(QString::fromStdString(w[0].message), "4 microbatches need a step arena of");
    QVERIFY(accumulate_warnings(wide, 1).empty());
    project::Project tall = base_project();
    tall.training.batch_size = 1024;
    QVERIFY(accumulate_warnings(tall, 8).empty());
  }

  // The design check shows one microbatch's inputs and activations, and says there are M.
  void theReportShowsOneMicrobatch() {
    project::Project p = base_project();
    p.training.accumulate = 4;
    const sharding::ShardingReport r = sharding::analyze_sharding(p, project::analyze_project(p), sharding::parse_mesh("data=2"),
                                                                  sharding::parse_rules("batch=data"));
    QVERIFY2(r.errors.empty(), qPrintable(QString::fromStdString(r.errors.empty() ? "" : r.errors.front())));
    QCOMPARE(r.microbatches, int64_t(4));
    const sharding::ArraySharding* x = r.find("x");
    const sharding::ArraySharding* d1 = r.find("d1");
    QVERIFY(x && d1);
    QCOMPARE(x->shape, (Shape{8, 24}));
    QCOMPARE(x->shard, (Shape{4, 24}));
    QCOMPARE(d1->shape, (Shape{8, 32}));
  }

  // Under data parallelism each microbatch's gradient stays a pending sum, added locally; the
  // gradients are reduced once per step, as without accumulation.
  void gradientsAreReducedOncePerStep() {
    auto gradient_collectives = [](int64_t m) {
      project::Project p = base_project();
      p.training.accumulate = m;
      const runtime::StepProgram g = runtime::build_step(p, project::analyze_project(p), 32, true);
      const sharding::PartitionedStep s = sharding::partition(g, sharding::parse_mesh("data=8"), sharding::parse_rules("batch=data"));
      int n = 0;
      double bytes = 0;
      // The reductions of anything larger than the scalar loss and accuracy: the gradients'.
      for (const sharding::CollectiveInfo& c : s.collectives)
        if ((c.op == ir::Op::ReduceScatter || c.op == ir::Op::AllReduce) && c.bytes > 64) ++n, bytes += c.bytes;
      return std::pair<int, double>{n, bytes};
    };
    const auto [n1, b1] = gradient_collectives(1);
    const auto [n4, b4] = gradient_collectives(4);
    QVERIFY(n1 > 0);
    QCOMPARE(n4, n1);
    QCOMPARE(b4, b1);
  }

  void aCountThatDoesNotDivideTheBatchIsRefused() {
    std::string text = kProject;
    const std::string from = R"("batch_size": 32,)";
    text.replace(text.find(from), from.size(), R"("batch_size": 32, "accumulate": 3,)");
    QString e = testing::error_of([&] { project::parse_project(text, "bad.shardlab.json"); });
    VERIFY_CONTAINS(e, "training.accumulate: 3 microbatches do not divide batch_size 32");
    const std::string three = R"("accumulate": 3)";
    text.replace(text.find(three), three.size(), R"("accumulate": 0)");
    e = testing::error_of([&] { project::parse_project(text, "bad.shardlab.json"); });
    VERIFY_CONTAINS(e, "accumulate");
    project::RunOverrides o;
    o.accumulate = 5;
    e = testing::error_of([&] { project::with_overrides(base_project(), o); });
    VERIFY_CONTAINS(e, "training.accumulate: 5 microbatches do not divide the batch size 32");
    // A microbatch the mesh cannot split: 32 / 8 = 4 examples over data=8.
    runtime::TrainOptions t;
    t.accumulate = 8;
    t.mesh = "data=8";
    t.rules = "batch=data";
    e = testing::error_of([&] { runtime::Trainer trainer(base_project(), t); });
    VERIFY_CONTAINS(e, "data");
    VERIFY_CONTAINS(e, "4");
  }

  // The count is kept in the project as written, and a run saves what it ran.
  void theFieldRoundTrips() {
    project::RunOverrides o;
    o.accumulate = 4;
    const project::Project p = project::with_overrides(base_project(), o);
    const project::Project back = project::parse_project(project::to_json_string(p), "again.shardlab.json");
    QCOMPARE(back.training.accumulate, int64_t(4));
    QCOMPARE(base_project().training.accumulate, int64_t(1));
  }
};

QTEST_APPLESS_MAIN(TestAccumulation)
#include "test_accumulation.moc"
