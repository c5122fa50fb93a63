// Training on the CUDA backend gives the CPU backend's losses: ten steps of a small model with
// every kind of primitive a step has (GEMMs with bias and ReLU epilogues, GELU, LayerNorm,
// dropout, softmax cross-entropy, Adam), on one device and on a 2x2 mesh of virtual devices (the
// collectives), in float32 and with 16-bit arrays (bfloat16; float16 under dynamic loss scaling);
// and a Repeat's layers as pipeline stages on virtual GPU devices.
// A detailed trace of a CUDA run times every kernel with CUDA events. Skips, saying why, where
// there is no CUDA backend or no GPU.
#include <QtTest>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/backends/backend.h"
#include "engine/plan/memory_plan.h"
#include "engine/profiler/trace.h"
#include "engine/runtime/trainer.h"
#include "engine/sharding/mesh.h"
#include "tests/engine/odd_mlp.h"

using namespace shardlab;

namespace {

const char* kProject = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {
    "nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [24]}},
      {"name": "d0", "type": "Dense", "params": {"features": 40}},
      {"name": "g", "type": "GELU"},
      {"name": "ln", "type": "LayerNorm"},
      {"name": "drop", "type": "Dropout", "params": {"rate": 0.1}},
      {"name": "d1", "type": "Dense", "params": {"features": 36}},
      {"name": "r", "type": "ReLU"},
      {"name": "head", "type": "Dense", "params": {"features": 4}}
    ],
    "edges": [{"from": "x.out", "to": "d0.in"}, {"from": "d0.out", "to": "g.in"}, {"from": "g.out", "to": "ln.in"},
              {"from": "ln.out", "to": "drop.in"}, {"from": "drop.out", "to": "d1.in"},
              {"from": "d1.out", "to": "r.in"}, {"from": "r.out", "to": "head.in"}]
  },
  "loss": {"type": "softmax_cross_entropy", "output": "head"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [24], "classes": 4, "examples": 512, "test_fraction": 0.25, "seed": 3},
  "training": {"batch_size": 32, "steps": 10, "seed": 1, "eval": false}
})";

// A 4-layer Repeat, for pipeline stages (its layers split over the stage axis).
const char* kRepeatProject = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {
    "nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [24]}},
      {"name": "d0", "type": "Dense", "params": {"features": 32}},
      {"name": "blocks", "type": "Repeat", "params": {"count": 4}, "body": {
        "nodes": [{"name": "ln", "type": "LayerNorm"}, {"name": "dense", "type": "Dense", "params": {"features": 32}},
                  {"name": "g", "type": "GELU"}, {"name": "res", "type": "Add"}],
        "edges": [{"from": "@in.out", "to": "ln.in"}, {"from": "ln.out", "to": "dense.in"}, {"from": "dense.out", "to": "g.in"},
                  {"from": "g.out", "to": "res.a"}, {"from": "@in.out", "to": "res.b"}],
        "output": "res"}},
      {"name": "head", "type": "Dense", "params": {"features": 4}}
    ],
    "edges": [{"from": "x.out", "to": "d0.in"}, {"from": "d0.out", "to": "blocks.in"}, {"from": "blocks.out", "to": "head.in"}]
  },
  "loss": {"type": "softmax_cross_entropy", "output": "head"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [24], "classes": 4, "examples": 512, "test_fraction": 0.25, "seed": 3},
  "training": {"batch_size": 32, "steps": 10, "seed": 1, "eval": false}
})";

struct Losses : runtime::TrainerListener {
  std::vector<double> loss;
  void on_step(const runtime::StepEvent& e) override { loss.push_back(e.loss); }
};

std::vector<double> train(const std::string& backend, const std::string& mesh, const std::string& rules,
                          const std::string& dtype, const char* project = kProject, int64_t accumulate = -1,
                          const std::string& schedule = "") {
  runtime::TrainOptions o;
  o.backend = backend;
  o.mesh = mesh;
  o.rules = rules;
  o.dtype = dtype;
  o.accumulate = accumulate;
  o.pipeline_schedule = schedule;
  runtime::Trainer t(project::parse_project(project, "cuda-vs-cpu.shardlab.json"), o);
  Losses l;
  t.add_listener(&l);
  t.run();
  return l.loss;
}

}  // namespace

class TestCudaTraining : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    try {
      backends::make_backend("cuda");
    } catch (const std::exception& e) {
      QSKIP(qPrintable(QString("no CUDA backend to compare with the CPU's: %1").arg(e.what())));
    }
  }

  void lossesMatchTheCpuBackend_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("tolerance");
    // 16-bit results round at 3 (bfloat16) or 4 (float16) significant digits, and a GEMM that sums
    // in another order may round the other way.
    for (const char* dt : {"float32", "bfloat16", "float16"}) {
      const double tol = std::string(dt) == "float32" ? 1e-4 : 2e-2;
      QTest::newRow(qPrintable(QString("one device %1").arg(dt))) << QString() << QString() << QString(dt) << tol;
      QTest::newRow(qPrintable(QString("data=2,model=2 embed %1").arg(dt)))
          << QString("data=2,model=2") << QString("batch=data,embed=model") << QString(dt) << tol;
      QTest::newRow(qPrintable(QString("data=2,model=2 mlp %1").arg(dt)))
          << QString("data=2,model=2") << QString("batch=data,mlp=model") << QString(dt) << tol;
    }
  }

  void lossesMatchTheCpuBackend() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(QString, dtype);
    QFETCH(double, tolerance);
    const std::vector<double> cpu = train("cpu", mesh.toStdString(), rules.toStdString(), dtype.toStdString());
    const std::vector<double> gpu = train("cuda", mesh.toStdString(), rules.toStdString(), dtype.toStdString());
    QCOMPARE(cpu.size(), size_t(10));
    QCOMPARE(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
      QVERIFY2(std::isfinite(gpu[i]) && std::abs(gpu[i] - cpu[i]) <= tolerance * std::max(1.0, std::abs(cpu[i])),
               qPrintable(QString("step %1: loss %2 on CUDA, %3 on the CPU").arg(i + 1).arg(gpu[i], 0, 'g', 9).arg(cpu[i], 0, 'g', 9)));
  }

  // Pipeline stages on virtual GPU devices (activations and gradients between stages as buffered
  // device-to-device messages) give the CPU backend's pipeline losses on the same mesh.
  void pipelineMatchesTheCpuBackend_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("stage=2 1f1b") << QString("stage=2") << QString("layer=stage") << QString("1f1b") << QString("float32") << 1e-4;
    QTest::newRow("stage=4 gpipe") << QString("stage=4") << QString("layer=stage") << QString("gpipe") << QString("float32") << 1e-4;
    QTest::newRow("data=2,stage=2 1f1b") << QString("data=2,stage=2") << QString("batch=data,layer=stage") << QString("1f1b")
                                         << QString("float32") << 1e-4;
    QTest::newRow("stage=2 1f1b bfloat16") << QString("stage=2") << QString("layer=stage") << QString("1f1b") << QString("bfloat16")
                                           << 2e-2;
  }

  void pipelineMatchesTheCpuBackend() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(QString, schedule);
    QFETCH(QString, dtype);
    QFETCH(double, tolerance);
    const auto run = [&](const std::string& backend) {
      return train(backend, mesh.toStdString(), rules.toStdString(), dtype.toStdString(), kRepeatProject, 4, schedule.toStdString());
    };
    const std::vector<double> cpu = run("cpu"), gpu = run("cuda");
    QCOMPARE(cpu.size(), size_t(10));
    QCOMPARE(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
      QVERIFY2(std::isfinite(gpu[i]) && std::abs(gpu[i] - cpu[i]) <= tolerance * std::max(1.0, std::abs(cpu[i])),
               qPrintable(QString("step %1: loss %2 on CUDA, %3 on the CPU").arg(i + 1).arg(gpu[i], 0, 'g', 9).arg(cpu[i], 0, 'g', 9)));
  }

  // A detailed trace on CUDA has a span per kernel, timed on the GPU: each within its step, the
  // GEMMs' FLOPs counted, and the step's summary split from them.
  void detailedTraceTimesEveryKernel() {
    runtime::TrainOptions o;
    o.backend = "cuda";
    o.steps = 3;
    o.trace_detailed = true;
    o.trace_keep = 3;
    runtime::Trainer t(project::parse_project(kProject, "cuda-trace.shardlab.json"), o);
    t.run();
    const std::vector<profiler::Span> spans = t.trace().spans();
    std::map<int64_t, double> step_us, kernels_us;
    int matmuls = 0;
    double matmul_flops = 0;
    for (const profiler::Span& s : spans) {
      if (s.category == profiler::Category::Step) {
        step_us[s.step] = s.dur_us;
        continue;
      }
      if (s.name == "data") continue;
      QVERIFY2(s.dur_us >= 0 && std::isfinite(s.dur_us), qPrintable(QString("span %1 lasted %2 us").arg(s.name.c_str()).arg(s.dur_us)));
      kernels_us[s.step] += s.dur_us;
      if (s.name.rfind("matmul", 0) == 0) {
        ++matmuls;
        matmul_flops += s.flops;
        QVERIFY2(!s.node.empty(), "a GEMM's span names its layer");
      }
    }
    QCOMPARE(step_us.size(), size_t(3));
    // 3 Dense layers: 3 GEMMs forward, 5 backward (the first layer needs no input gradient), each step.
    QCOMPARE(matmuls, 3 * 8);
    QVERIFY(matmul_flops > 0);
    for (const auto& [step, us] : step_us) {
      QVERIFY2(kernels_us[step] > 0 && kernels_us[step] <= us * 1.05 + 50,
               qPrintable(QString("step %1: kernels %2 us of a %3 us step").arg(step).arg(kernels_us[step]).arg(us)));
    }
    for (const profiler::StepSummary& s : t.trace().summaries()) {
      QVERIFY2(s.flops >= matmul_flops / 3, "the step's summary counts its FLOPs");
      QVERIFY(s.compute_us > 0);
    }
  }

  // A batch of inputs larger than both pinned halves together (host_staging.h), of a size that is
  // no multiple of the copy threads' parts, reaches the GPU exactly, twice in a row (the second
  // write waits for the first's copies before reusing the pinned memory).
  void largeWritesReachTheGpuExactly() {
    const runtime::StepProgram s = testing::mlp_step(10007, 1031, 8, 8);  // a 41.3 MB input
    const plan::MemoryPlan memory = plan::plan_memory(s.program, {s.loss});
    const std::unique_ptr<backends::Backend> cuda = backends::make_backend("cuda");
    auto exe = cuda->load(s.program, memory, sharding::Mesh(), backends::LoadOptions{});
    std::vector<float> host(size_t(numel(s.program.shape(s.input)))), back(host.size());
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < host.size(); ++i) host[i] = float(int64_t((i * 2654435761u + size_t(round)) % 1000003)) - 5e5f;
      exe->write(0, s.input, host.data());
      exe->read(0, s.input, back.data());
      size_t first_bad = host.size();
      for (size_t i = 0; i < host.size() && first_bad == host.size(); ++i)
        if (std::memcmp(&host[i], &back[i], sizeof(float)) != 0) first_bad = i;
      QVERIFY2(first_bad == host.size(), qPrintable(QString("round %1: element %2 of %3 differs").arg(round).arg(first_bad).arg(host.size())));
    }
  }
};

QTEST_APPLESS_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"
