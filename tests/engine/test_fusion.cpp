// Folding bias, relu and relu's gradient into the GEMM epilogue changes nothing but speed:
// a fused and an unfused executor give bit-identical results on the same step.
#include <QtTest>
#include <cstring>

#include "engine/backends/cpu/executor.h"
#include "engine/graph/init.h"
#include "engine/project/project.h"
#include "engine/runtime/train_step.h"

using namespace shardlab;

class TestFusion : public QObject {
  Q_OBJECT
 private slots:
  void fusedStepEqualsUnfusedStep() {
    // Odd sizes exercise the GEMM's edge tiles as well as its full ones.
    auto j = nlohmann::ordered_json::parse(R"({
      "format": "shardlab.project", "version": 1,
      "graph": {"nodes": [
          {"name": "x", "type": "Input", "params": {"shape": [37]}},
          {"name": "d1", "type": "Dense", "params": {"features": 70}}, {"name": "r1", "type": "ReLU"},
          {"name": "d2", "type": "Dense", "params": {"features": 45}}, {"name": "r2", "type": "ReLU"},
          {"name": "d3", "type": "Dense", "params": {"features": 3}}],
        "edges": [{"from": "x.out", "to": "d1.in"}, {"from": "d1.out", "to": "r1.in"}, {"from": "r1.out", "to": "d2.in"},
                  {"from": "d2.out", "to": "r2.in"}, {"from": "r2.out", "to": "d3.in"}]},
      "loss": {"type": "mean_squared_error", "output": "d3"},
      "optimizer": {"type": "adam"},
      "data": {"type": "synthetic", "kind": "normal", "feature_shape": [37], "target_shape": [3], "examples": 64},
      "training": {"batch_size": 29, "steps": 1}
    })");
    project::Project p = project::parse_project(j.dump(), "fusion.shardlab.json");
    runtime::StepProgram s = runtime::build_step(p, project::analyze_project(p), 29, true);
    backends::cpu::Executor<float> fused(s.program, s.memory, true), plain(s.program, s.memory, false);
    QCOMPARE(plain.fused_instructions(), size_t(0));
    // d1, d2: bias + relu forward, relu_grad backward; d3: bias only.
    QVERIFY2(fused.fused_instructions() >= 7, qPrintable(QString::number(fused.fused_instructions())));
    for (const runtime::ModelParam& mp : s.params) {
      graph::initialize(fused.data(mp.value), mp.info.shape, 1, mp.info.init, mp.path, 5);
      std::memcpy(plain.data(mp.value), fused.data(mp.value), size_t(numel(mp.info.shape)) * sizeof(float));
    }
    for (auto* ex : {&fused, &plain}) {
      for (int64_t i = 0; i < numel(s.program.shape(s.input)); ++i) ex->data(s.input)[i] = float((i * 7919) % 13) / 6.f - 1.f;
      for (int64_t i = 0; i < numel(s.program.shape(s.target)); ++i) ex->data(s.target)[i] = float(i % 5) / 4.f;
      ex->run({0, 1e-3});
    }
    QCOMPARE(fused.data(s.loss)[0], plain.data(s.loss)[0]);
    for (const runtime::ModelParam& mp : s.params)
      QVERIFY2(std::memcmp(fused.data(mp.value), plain.data(mp.value), size_t(numel(mp.info.shape)) * sizeof(float)) == 0,
               mp.path.c_str());
  }
};

QTEST_APPLESS_MAIN(TestFusion)
#include "test_fusion.moc"
