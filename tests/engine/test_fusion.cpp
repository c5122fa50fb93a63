// Folding bias, relu and relu's gradient into the GEMM epilogue changes nothing but speed:
// a fused and an unfused executor give bit-identical results on the same step.
#include <QtTest>
#include <cstring>

#include "engine/backends/cpu/executor.h"
#include "engine/graph/init.h"
#include "engine/project/project.h"
#include "engine/runtime/train_step.h"
#include "tests/engine/odd_mlp.h"

using namespace shardlab;

class TestFusion : public QObject {
  Q_OBJECT
 private slots:
  void fusedStepEqualsUnfusedStep() {
    // Odd sizes exercise the GEMM's edge tiles as well as its full ones.
    const runtime::StepProgram s = testing::odd_mlp_step();
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
