// ONNX export: a trained checkpoint of a project using every exportable layer (Flatten, Dense,
// LayerNorm, a Repeat of LayerNorm, Dense, GELU, Dropout, Dense and a residual Add, Tanh, ReLU)
// becomes an IR 8 / opset 17 model whose nodes and initializers are what the project and its
// parameters say, which ONNX's checker accepts and onnxruntime runs to Shardlab's own forward pass
// within 1e-5; what cannot be exported is refused naming the node and its type.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/export.h"
#include "engine/data/npy.h"
#include "engine/export/onnx_export.h"
#include "engine/runtime/inference.h"
#include "engine/runtime/trainer.h"
#include "tests/engine/python_runner.h"
#include "tests/engine/test_support.h"

#ifdef SHARDLAB_HAVE_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#endif

using namespace shardlab;
using shardlab::testing::error_of;
namespace fs = std::filesystem;

using shardlab::testing::PyResult;
using shardlab::testing::run_python;

namespace {

const char* kEveryLayer = R"({
  "format": "shardlab.project", "version": 1, "name": "every-layer",
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [4, 8]}},
      {"name": "flat", "type": "Flatten"},
      {"name": "proj", "type": "Dense", "params": {"features": 24}},
      {"name": "ln", "type": "LayerNorm", "params": {"epsilon": 1e-5}},
      {"name": "blocks", "type": "Repeat", "params": {"count": 3}, "body": {
        "nodes": [
          {"name": "norm", "type": "LayerNorm", "params": {"use_scale": false}},
          {"name": "up", "type": "Dense", "params": {"features": 48}},
          {"name": "act", "type": "GELU"},
          {"name": "drop", "type": "Dropout", "params": {"rate": 0.2}},
          {"name": "down", "type": "Dense", "params": {"features": 24, "use_bias": false}},
          {"name": "res", "type": "Add"}],
        "edges": [{"from": "@in.out", "to": "norm.in"}, {"from": "norm.out", "to": "up.in"}, {"from": "up.out", "to": "act.in"},
                  {"from": "act.out", "to": "drop.in"}, {"from": "drop.out", "to": "down.in"},
                  {"from": "@in.out", "to": "res.a"}, {"from": "down.out", "to": "res.b"}],
        "output": "res"}},
      {"name": "squash", "type": "Tanh"},
      {"name": "hidden", "type": "Dense", "params": {"features": 16}},
      {"name": "relu", "type": "ReLU"},
      {"name": "out", "type": "Dense", "params": {"features": 5}}],
    "edges": [{"from": "x.out", "to": "flat.in"}, {"from": "flat.out", "to": "proj.in"}, {"from": "proj.out", "to": "ln.in"},
              {"from": "ln.out", "to": "blocks.in"}, {"from": "blocks.out", "to": "squash.in"},
              {"from": "squash.out", "to": "hidden.in"}, {"from": "hidden.out", "to": "relu.in"}, {"from": "relu.out", "to": "out.in"}]},
  "loss": {"type": "softmax_cross_entropy", "output": "out"},
  "optimizer": {"type": "adam", "learning_rate": 0.02},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [4, 8], "classes": 5, "examples": 64},
  "training": {"batch_size": 16, "steps": 5, "eval": false, "seed": 11}
})";

Tensor random_tensor(Shape shape, uint32_t seed, float scale) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (float& v : t.data) v = d(rng);
  return t;
}

std::map<std::string, Tensor> parameters(const runtime::Trainer& t) {
  std::map<std::string, Tensor> m;
  for (const std::string& p : t.parameter_paths()) m[p] = t.parameter(p);
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (size_t i = 0; i < a.data.size(); ++i) m = std::max(m, double(std::fabs(a.data[i] - b.data[i])));
  return m;
}

}  // namespace

class TestOnnxExport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    project_ = project::parse_project(kEveryLayer, "every-layer.shardlab.json");
    trainer_ = std::make_unique<runtime::Trainer>(project_);
    // A few steps on a fixed batch, so no parameter is at its initial value (LayerNorm's ones included).
    const Tensor x = random_tensor({16, 4, 8}, 1, 1.0f);
    Tensor y({16});
    for (int64_t i = 0; i < 16; ++i) y.data[size_t(i)] = float(i % 5);
    for (int i = 0; i < 5; ++i) trainer_->train_step(x, y);
    trainer_->save_checkpoint(dir_.filePath("ckpt").toStdString(), 5);
    checkpoint_ = *checkpoint::latest(dir_.filePath("ckpt").toStdString());
    model_ = dir_.filePath("every-layer.onnx").toStdString();
  }

  // The CLI exports the checkpoint's own project with its parameters; without ONNX it says so.
  void cliExportsTheCheckpoint() {
    QProcess p;
    p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli",
            {"export", QString::fromStdString(checkpoint_.string()), "--format", "onnx", "--out", QString::fromStdString(model_.string())});
    QVERIFY(p.waitForFinished(120000));
    const QString out = p.readAllStandardOutput(), err = p.readAllStandardError();
    if (!interop::onnx_available()) {
      QVERIFY(p.exitCode() != 0);
      VERIFY_CONTAINS(err, "built without ONNX");
      QSKIP("this build has no ONNX: the CLI refuses, as it should");
    }
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    VERIFY_CONTAINS(out, "ONNX IR 8, opset 17");
    VERIFY_CONTAINS(out, "input 'x', output 'out'");
    QVERIFY(fs::file_size(model_) > 0);
  }

  // Parsed back with ONNX's own protobuf classes: versions, graph input and output, the nodes each
  // layer became, and initializers holding exactly the trained values (a Repeat's layer i its slice i).
  void modelHoldsTheGraphAndTheParameters() {
#ifndef SHARDLAB_HAVE_ONNX
    QSKIP("this build has no ONNX, so there is no protobuf to parse the model with");
#else
    QVERIFY(fs::exists(model_));
    onnx::ModelProto m;
    {
      std::ifstream in(model_, std::ios::binary);
      QVERIFY(m.ParseFromIstream(&in));
    }
    onnx::checker::check_model(m);  // throws on an invalid model
    QCOMPARE(m.ir_version(), int64_t(8));
    QCOMPARE(m.opset_import_size(), 1);
    QCOMPARE(m.opset_import(0).domain(), std::string(""));
    QCOMPARE(m.opset_import(0).version(), int64_t(17));
    const onnx::GraphProto& g = m.graph();
    QCOMPARE(g.input_size(), 1);
    QCOMPARE(g.input(0).name(), std::string("x"));
    const auto& in_shape = g.input(0).type().tensor_type().shape();
    QCOMPARE(in_shape.dim_size(), 3);
    QCOMPARE(in_shape.dim(0).dim_param(), std::string("batch"));
    QCOMPARE(in_shape.dim(1).dim_value(), int64_t(4));
    QCOMPARE(in_shape.dim(2).dim_value(), int64_t(8));
    QCOMPARE(g.output_size(), 1);
    QCOMPARE(g.output(0).name(), std::string("out"));
    QCOMPARE(g.output(0).type().tensor_type().shape().dim(1).dim_value(), int64_t(5));

    std::map<std::string, int> ops;
    std::map<std::string, const onnx::NodeProto*> by_name;
    for (const auto& n : g.node()) {
      ++ops[n.op_type()];
      by_name[n.name()] = &n;
    }
    QCOMPARE(ops["Flatten"], 1);
    QCOMPARE(ops["MatMul"], 1 + 3 * 2 + 2);           // proj, up and down per layer, hidden, out
    QCOMPARE(ops["LayerNormalization"], 1 + 3);       // ln, norm per layer
    QCOMPARE(ops["Tanh"], 3 + 1);                     // one per GELU, squash
    QCOMPARE(ops["Relu"], 1);
    QCOMPARE(ops["Identity"], 3);                     // dropout at inference
    QCOMPARE(ops["Erf"], 0);                          // GELU is the tanh form, as the engine's
    QCOMPARE(ops["Add"], 1 + 3 * (1 + 1 + 2) + 2);    // biases, residuals and GELU's two adds
    QVERIFY(by_name.count("blocks/2/res/Add"));
    QVERIFY(by_name.count("blocks/0/act/Tanh"));

    auto attr = [&](const std::string& node, const std::string& name) -> const onnx::AttributeProto* {
      for (const auto& a : by_name.at(node)->attribute())
        if (a.name() == name) return &a;
      return nullptr;
    };
    QCOMPARE(attr("ln/LayerNormalization", "epsilon")->f(), 1e-5f);
    QCOMPARE(attr("blocks/1/norm/LayerNormalization", "epsilon")->f(), 1e-6f);  // the layer's default
    QCOMPARE(attr("ln/LayerNormalization", "axis")->i(), int64_t(-1));
    QCOMPARE(attr("flat/Flatten", "axis")->i(), int64_t(1));

    std::map<std::string, Tensor> inits;
    for (const auto& t : g.initializer()) {
      QCOMPARE(t.data_type(), int32_t(onnx::TensorProto_DataType_FLOAT));
      Tensor v(Shape(t.dims().begin(), t.dims().end()));
      QCOMPARE(t.raw_data().size(), v.data.size() * sizeof(float));
      std::memcpy(v.ptr(), t.raw_data().data(), t.raw_data().size());
      inits[t.name()] = v;
    }
    QCOMPARE(inits.at("proj/kernel").data, trainer_->parameter("proj/kernel").data);
    QCOMPARE(inits.at("ln/scale").data, trainer_->parameter("ln/scale").data);
    QCOMPARE(inits.at("out/bias").data, trainer_->parameter("out/bias").data);
    QVERIFY(!inits.count("blocks/0/down/bias"));  // use_bias false
    const Tensor up = trainer_->parameter("blocks/up/kernel");  // (3, 24, 48)
    for (int layer = 0; layer < 3; ++layer) {
      const Tensor& slice = inits.at("blocks/" + std::to_string(layer) + "/up/kernel");
      QCOMPARE(slice.shape, (Shape{24, 48}));
      QVERIFY(std::equal(slice.data.begin(), slice.data.end(), up.data.begin() + layer * 24 * 48));
      QCOMPARE(inits.at("blocks/" + std::to_string(layer) + "/norm/scale").data, std::vector<float>(24, 1.0f));  // no scale
    }
    QVERIFY(trainer_->parameter("ln/scale").data != std::vector<float>(24, 1.0f));  // trained, not initial
#endif
  }

  // onnxruntime on the exported model matches Shardlab's forward pass to 1e-5, with its graph
  // optimisations off and on; onnx.checker accepts the model where Python's onnx is installed.
  void onnxRuntimeMatchesTheForwardPass() {
    if (!interop::onnx_available()) QSKIP("this build has no ONNX");
    QVERIFY(fs::exists(model_));
    const Tensor x = random_tensor({9, 4, 8}, 2, 2.0f);  // a batch size the project never used
    const Tensor want = runtime::predict(project_, parameters(*trainer_), x);
    QCOMPARE(want.shape, (Shape{9, 5}));
    const fs::path xp = dir_.filePath("x.npy").toStdString(), prefix = dir_.filePath("y").toStdString();
    data::save_npy(xp, x);
    const PyResult r = run_python({SHARDLAB_SOURCE_DIR "/tests/reference/onnx/run_onnx.py", QString::fromStdString(model_.string()),
                                   QString::fromStdString(xp.string()), QString::fromStdString(prefix.string())});
    if (r.exit_code == 3 || !r.started) {
      const QString why = r.out.trimmed().isEmpty() ? QString("python3 did not start") : r.out.trimmed();
      qInfo().noquote() << "skipping:" << why;
      QSKIP(qPrintable(why));
    }
    qInfo().noquote() << r.out.trimmed();
    QVERIFY2(r.exit_code == 0, qPrintable(r.out));
    for (const char* run : {"plain", "optimised"}) {
      const Tensor got = data::load_npy(prefix.string() + "." + run + ".npy");
      QCOMPARE(got.shape, want.shape);
      const double diff = max_abs_diff(got, want);
      qInfo().noquote() << QString("onnxruntime (%1) vs Shardlab: max abs diff %2").arg(run).arg(diff, 0, 'g', 3);
      QVERIFY2(diff <= 1e-5, qPrintable(QString("%1: max abs diff %2").arg(run).arg(diff)));
    }
  }

  // The forward pass the comparison trusts is the one evaluation uses: same loss on a batch.
  void predictIsTheEvaluationForwardPass() {
    const Tensor x = random_tensor({16, 4, 8}, 3, 1.0f);
    const Tensor logits = runtime::predict(project_, parameters(*trainer_), x);
    // Softmax cross-entropy against class 0, from predict()'s logits ...
    double want = 0;
    for (int64_t r = 0; r < 16; ++r) {
      const float* z = logits.ptr() + r * 5;
      const double mx = *std::max_element(z, z + 5);
      double s = 0;
      for (int c = 0; c < 5; ++c) s += std::exp(double(z[c]) - mx);
      want += std::log(s) + mx - double(z[0]);
    }
    want /= 16;
    // ... and from the trainer's own evaluation step.
    data::Dataset ds;
    ds.features = x;
    ds.targets = Tensor({16});
    ds.integer_labels = true;
    ds.num_classes = 5;
    const double got = trainer_->evaluate(ds).loss;
    QVERIFY2(std::fabs(got - want) < 1e-5, qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }

  // A node the exporter has no mapping for, at the top level or inside a Repeat's block, is refused
  // with its path and type; so is a parameter that is missing or of the wrong shape.
  void refusesWhatItCannotExport() {
    if (!interop::onnx_available()) QSKIP("this build has no ONNX");
    const auto params = parameters(*trainer_);
    graph::GraphReport report = project::analyze_project(project_);
    for (auto& n : report.nodes)
      if (n.name == "relu") n.type = "Conv2D";  // as a layer type this exporter does not know
    QString e = error_of([&] { interop::onnx_model(project_, report, params); });
    VERIFY_CONTAINS(e, "node 'relu' (type 'Conv2D'): ONNX export does not support this layer type");

    report = project::analyze_project(project_);
    for (auto& n : report.nodes)
      if (n.name == "blocks")
        for (auto& b : n.body)
          if (b.name == "blocks/act") b.type = "Swish";
    e = error_of([&] { interop::onnx_model(project_, report, params); });
    VERIFY_CONTAINS(e, "node 'blocks/act' (type 'Swish')");

    auto missing = params;
    missing.erase("hidden/kernel");
    e = error_of([&] { interop::onnx_model(project_, missing, ""); });
    VERIFY_CONTAINS(e, "parameter 'hidden/kernel': not among the given parameters");

    auto wrong = params;
    wrong["blocks/down/kernel"] = Tensor({2, 48, 24});
    e = error_of([&] { interop::onnx_model(project_, wrong, ""); });
    VERIFY_CONTAINS(e, "parameter 'blocks/down/kernel'");
    VERIFY_CONTAINS(e, "not stacked over the Repeat's 3 layers");

    wrong = params;
    wrong["out/kernel"] = Tensor({5, 16});
    e = error_of([&] { interop::onnx_model(project_, wrong, ""); });
    VERIFY_CONTAINS(e, "parameter 'out/kernel': shape (5, 16) given, node 'out' needs (16, 5)");
  }

 private:
  QTemporaryDir dir_;
  project::Project project_;
  std::unique_ptr<runtime::Trainer> trainer_;
  fs::path checkpoint_, model_;
};

QTEST_GUILESS_MAIN(TestOnnxExport)
#include "test_onnx_export.moc"
