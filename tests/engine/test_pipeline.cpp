// Pipeline parallelism (a rule layer=<mesh axis>): a Repeat's layers split into stages on the
// devices of that axis, microbatches flowing through them by send/recv in GPipe or 1F1B order. The
// losses and parameters after 3 steps equal the unpipelined run's, alone and with data parallelism
// beside it; 1F1B holds fewer activations per stage than GPipe; what cannot be split is refused
// naming the parameter or rule.
#include <QtTest>
#include <cmath>
#include <random>

#include "engine/profiler/trace.h"
#include "engine/profiler/trace_file.h"
#include "engine/project/run_overrides.h"
#include "engine/runtime/spmd_session.h"
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

// tests/data/pipeline.shardlab.json (an embedding Dense before the Repeat and a head after it, each
// on one stage; 8 residual blocks with a LayerNorm inside: 4 or 2 per stage with 2 or 4 stages), on
// one device unless a test gives a mesh, one microbatch unless it asks for more.
project::Project base_project(const std::string& schedule = "1f1b") {
  project::Project p = project::load_project(SHARDLAB_SOURCE_DIR "/tests/data/pipeline.shardlab.json");
  p.mesh = nullptr;
  p.logical_axis_rules = graph::Json::array();
  p.training.accumulate = 1;
  p.training.pipeline_schedule = schedule;
  return p;
}

Run train(int64_t accumulate, const std::string& mesh = "", const std::string& rules = "", const std::string& schedule = "1f1b") {
  runtime::TrainOptions o;
  o.accumulate = accumulate;
  o.mesh = mesh;
  o.rules = rules;
  runtime::Trainer t(base_project(schedule), o);
  Run r;
  for (const Batch& b : batches(3, 32)) r.losses.push_back(t.train_step(b.x, b.y));
  for (const std::string& path : t.parameter_paths()) r.params[path] = t.parameter(path);
  return r;
}

sharding::ShardingReport design(project::Project p, int64_t accumulate, const std::string& mesh, const std::string& rules) {
  project::RunOverrides o;
  o.accumulate = accumulate;
  p = project::with_overrides(std::move(p), o);
  return sharding::analyze_sharding(p, project::analyze_project(p), sharding::parse_mesh(mesh), sharding::parse_rules(rules));
}

}  // namespace

class TestPipeline : public QObject {
  Q_OBJECT
 private slots:
  void stagesEqualTheUnpipelinedRun_data() {
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("schedule");
    for (const char* schedule : {"gpipe", "1f1b"}) {
      for (int m : {4, 8}) {
        for (const char* mesh : {"stage=2", "stage=4"})
          QTest::newRow(qPrintable(QString("%1, %2, M=%3").arg(schedule, mesh).arg(m))) << m << QString(mesh) << QString("layer=stage")
                                                                                           << QString(schedule);
        QTest::newRow(qPrintable(QString("%1, stage=2,data=4, M=%2").arg(schedule).arg(m)))
            << m << QString("stage=2,data=4") << QString("layer=stage,batch=data") << QString(schedule);
      }
    }
    QTest::newRow("1f1b, stage=2,model=2 (Megatron inside each stage), M=4")
        << 4 << QString("stage=2,model=2") << QString("layer=stage,mlp=model,embed=None") << QString("1f1b");
  }

  // Losses and every parameter after 3 Adam steps equal one device's without a pipeline (1e-6
  // relative), the stages' layers and the parameters outside the Repeat alike.
  void stagesEqualTheUnpipelinedRun() {
    QFETCH(int, microbatches);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(QString, schedule);
    const Run whole = train(1);
    const Run piped = train(microbatches, mesh.toStdString(), rules.toStdString(), schedule.toStdString());
    const QString diff = shardlab::testing::first_difference(piped, whole);
    QVERIFY2(diff.isEmpty(), qPrintable("pipelined, against one device: " + diff));
    const runtime::Trainer fresh(base_project());
    for (const char* path : {"embed/kernel", "blocks/a/kernel", "head/kernel"})
      QVERIFY2(relative_difference(whole.params.at(path), fresh.parameter(path)) > 1e-3, path);
  }

  // Each stage's devices hold their own layers only: the stacked parameters' blocks are a quarter of
  // them on stage=4, and the program gives every instruction of a layer to that layer's stage.
  void eachStageHoldsItsOwnLayers() {
    const project::Project p = base_project();
    const runtime::StepProgram g = runtime::build_step(p, project::analyze_project(p), 32, true);
    const sharding::PartitionedStep s = sharding::partition(g, sharding::parse_mesh("stage=4"), sharding::parse_rules("layer=stage"));
    QCOMPARE(s.program.stages, int64_t(4));
    const runtime::ModelParam& k = runtime::find_param(g, "blocks/a/kernel");
    QCOMPARE(s.program.shape(s.local[size_t(k.value)]), (Shape{2, 32, 32}));
    int sends = 0;
    for (const ir::Instr& ins : s.program.instrs) {
      if (ins.op == ir::Op::Send) ++sends;
      if (ins.layer >= 0 && ins.op != ir::Op::Send) QCOMPARE(ins.stage, ins.layer * 4 / ins.layers);
    }
    // Forward: the carry crosses 3 boundaries; backward: its gradient crosses them back. One microbatch.
    QVERIFY2(sends >= 6, qPrintable(QString("%1 sends").arg(sends)));
  }

  // 1F1B keeps at most S-s microbatches in flight on stage s where GPipe keeps all M: the first
  // stage's arena is smaller, for M >= S.
  void oneFOneBHoldsLessThanGPipe() {
    for (const auto& [m, mesh] : {std::pair<int64_t, std::string>{4, "stage=2"}, {8, "stage=2"}, {8, "stage=4"}}) {
      project::Project p = base_project("gpipe");
      p.training.batch_size = 256;
      const sharding::ShardingReport gpipe = design(p, m, mesh, "layer=stage");
      p.training.pipeline_schedule = "1f1b";
      const sharding::ShardingReport onef = design(p, m, mesh, "layer=stage");
      QVERIFY2(gpipe.errors.empty() && onef.errors.empty(), "the design check refused the pipeline");
      const auto& ga = gpipe.plan->memory.stage_arena_bytes;
      const auto& oa = onef.plan->memory.stage_arena_bytes;
      QCOMPARE(ga.size(), size_t(sharding::parse_mesh(mesh).axis_size("stage")));
      QVERIFY2(oa[0] < ga[0], qPrintable(QString("%1, M=%2: stage 0 holds %3 elements under 1F1B, %4 under GPipe")
                                             .arg(QString::fromStdString(mesh)).arg(m).arg(oa[0]).arg(ga[0])));
    }
  }

  // A traced step says, for every span, its device's stage and the microbatch and pass it worked
  // on; each stage runs every microbatch's forward and backward pass, and the stages after the
  // first wait in recv for their neighbours. The Chrome trace keeps it.
  void theTraceShowsEachStagesMicrobatches() {
    project::Project p = base_project("1f1b");
    p.training.accumulate = 4;
    const sharding::Mesh mesh = sharding::parse_mesh("stage=2");
    runtime::SpmdSession s(p, mesh, sharding::parse_rules("layer=stage"), 32, 1);
    profiler::Trace trace(profiler::Trace::Mode::Detailed);
    const Batch b = batches(1, 32).front();
    s.train_step(b.x, b.y, 0.01, &trace);
    std::map<int, std::set<std::pair<int64_t, bool>>> units;
    std::map<int, int> recvs;
    for (const profiler::Span& sp : trace.spans()) {
      if (sp.category == profiler::Category::Step) continue;
      QCOMPARE(sp.stage, int64_t(sp.device));  // on stage=2, device d is stage d
      if (sp.microbatch >= 0) units[sp.device].insert({sp.microbatch, sp.backward});
      if (sp.name == "recv") ++recvs[sp.device];
    }
    for (int d : {0, 1}) {
      QCOMPARE(units[d].size(), size_t(8));  // 4 microbatches, forward and backward
      QVERIFY2(recvs[d] >= 4, qPrintable(QString("device %1 received %2 times").arg(d).arg(recvs[d])));
    }
    const profiler::TraceContents back = profiler::parse_chrome_trace(trace.to_chrome_json(), "pipeline trace");
    int backward = 0;
    for (const profiler::Span& sp : back.spans) backward += sp.backward && sp.microbatch == 3 && sp.stage == 1;
    QVERIFY2(backward > 0, "the Chrome trace lost the spans' microbatches");
  }

  // The same, measured: a traced step's memory samples (each device's live step buffers as it
  // runs) peak lower on the first stage under 1F1B than under GPipe.
  void oneFOneBsTracedPeakIsBelowGPipes() {
    auto peak = [](const std::string& schedule) {
      project::Project p = base_project(schedule);
      p.training.batch_size = 256;
      p.training.accumulate = 8;
      runtime::SpmdSession s(p, sharding::parse_mesh("stage=2"), sharding::parse_rules("layer=stage"), 256, 1);
      profiler::Trace trace(profiler::Trace::Mode::Detailed);
      const Batch b = batches(1, 256).front();
      s.train_step(b.x, b.y, 0.01, &trace);
      double most = 0;
      for (const profiler::MemorySample& m : profiler::parse_chrome_trace(trace.to_chrome_json(), "trace").memory)
        if (m.device == 0) most = std::max(most, m.bytes);
      return most;
    };
    const double gpipe = peak("gpipe"), onef = peak("1f1b");
    QVERIFY2(onef > 0 && onef < gpipe, qPrintable(QString("stage 0 peaks at %1 bytes under 1F1B, %2 under GPipe").arg(onef).arg(gpipe)));
  }

  // Bad layouts are refused before anything runs, naming what is at fault.
  void badPipelinesAreRefused() {
    auto refusal = [](const std::string& mesh, const std::string& rules) {
      runtime::TrainOptions o;
      o.mesh = mesh;
      o.rules = rules;
      return shardlab::testing::error_of([&] { runtime::Trainer t(base_project(), o); });
    };
    // 8 layers do not divide among 3 stages: the parameters are named, and the counts that would do.
    const QString layers = refusal("stage=3", "layer=stage");
    VERIFY_CONTAINS(layers, "blocks/a/kernel");
    VERIFY_CONTAINS(layers, "2 or 4");
    // The batch cannot also split over the pipeline's axis.
    VERIFY_CONTAINS(refusal("stage=2", "layer=stage,batch=stage"), "carries the pipeline");
    QCOMPARE(sharding::bubble_fraction(4, 8), 3.0 / 11.0);
    QCOMPARE(sharding::bubble_fraction(1, 8), 0.0);
  }
};

QTEST_GUILESS_MAIN(TestPipeline)
#include "test_pipeline.moc"
