// Training on the CUDA backend gives the CPU backend's losses: ten steps of a small model with
// every kind of primitive a step has (GEMMs with bias and ReLU epilogues, GELU, LayerNorm,
// dropout, softmax cross-entropy, Adam), on one device and on a 2x2 mesh of virtual devices (the
// collectives). Skips, saying why, where there is no CUDA backend or no GPU.
#include <QtTest>
#include <cmath>

#include "engine/backends/backend.h"
#include "engine/runtime/trainer.h"

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

struct Losses : runtime::TrainerListener {
  std::vector<double> loss;
  void on_step(const runtime::StepEvent& e) override { loss.push_back(e.loss); }
};

std::vector<double> train(const std::string& backend, const std::string& mesh, const std::string& rules) {
  runtime::TrainOptions o;
  o.backend = backend;
  o.mesh = mesh;
  o.rules = rules;
  runtime::Trainer t(project::parse_project(kProject, "cuda-vs-cpu.shardlab.json"), o);
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
    QTest::newRow("one device") << QString() << QString();
    QTest::newRow("data=2,model=2 embed") << QString("data=2,model=2") << QString("batch=data,embed=model");
    QTest::newRow("data=2,model=2 mlp") << QString("data=2,model=2") << QString("batch=data,mlp=model");
  }

  void lossesMatchTheCpuBackend() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    const std::vector<double> cpu = train("cpu", mesh.toStdString(), rules.toStdString());
    const std::vector<double> gpu = train("cuda", mesh.toStdString(), rules.toStdString());
    QCOMPARE(cpu.size(), size_t(10));
    QCOMPARE(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
      QVERIFY2(std::isfinite(gpu[i]) && std::abs(gpu[i] - cpu[i]) <= 1e-4,
               qPrintable(QString("step %1: loss %2 on CUDA, %3 on the CPU").arg(i + 1).arg(gpu[i], 0, 'g', 9).arg(cpu[i], 0, 'g', 9)));
  }
};

QTEST_APPLESS_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"
