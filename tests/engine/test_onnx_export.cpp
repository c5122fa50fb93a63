// ONNX export: a trained checkpoint of a project using every exportable layer (Flatten, Dense,
// LayerNorm, a Repeat of LayerNorm, Dense, GELU, Dropout, Dense and a residual Add, Tanh, ReLU)
// becomes an IR 8 / opset 17 model whose nodes and initializers are what the project and its
// parameters say, which ONNX's checker accepts and onnxruntime runs to Shardlab's own forward pass
// within 1e-5; what cannot be exported is refused naming the node and its type. The transformer
// layers likewise, through projects/vit-fashion (PatchEmbed, PositionEmbedding, a Repeat of blocks
// with MultiHeadAttention, MeanPool), projects/copy-transformer (Embed, causal attention) and a
// small project for the rest (Reshape, PatchEmbed over channels without a bias, causal attention
// without biases and with other qkv and out features, Softmax): each checkpoint, its parameters all
// moved off their initial values, exported by the CLI, passes ONNX's checker and strict shape
// inference, holds the parameters (a Repeat's layer i its slice i), and runs in onnxruntime to
// Shardlab's forward pass. The convolution layers (Conv2D, MaxPool2D, AvgPool2D) through
// tests/reference/cnn-tiny, and the Llama layers (RMSNorm, rotary embedding, grouped-query
// attention, SiLU, Multiply) through tests/reference/llama-tiny.
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
#include "engine/tensor/convert.h"
#include "engine/util/error.h"
#include "tests/engine/python_runner.h"
#include "tests/engine/test_support.h"

#ifdef SHARDLAB_HAVE_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
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

double max_abs(const Tensor& a) {
  double m = 0;
  for (float v : a.data) m = std::max(m, double(std::fabs(v)));
  return m;
}

// The layers the two example projects leave out: Reshape, PatchEmbed over channels without a bias,
// causal attention without biases (qkv 6 over 3 heads of 2, out 10, a dropout that inference
// skips), Softmax; then MeanPool and a Dense.
const char* kOtherLayers = R"({
  "format": "shardlab.project", "version": 1, "name": "other-layers",
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [48]}},
      {"name": "image", "type": "Reshape", "params": {"shape": [4, 4, 3], "axes": ["height", "width", "channels"]}},
      {"name": "patches", "type": "PatchEmbed", "params": {"patch": 2, "features": 12, "use_bias": false}},
      {"name": "attn", "type": "MultiHeadAttention",
       "params": {"num_heads": 3, "qkv_features": 6, "out_features": 10, "use_bias": false, "causal": true, "dropout_rate": 0.5}},
      {"name": "probs", "type": "Softmax"},
      {"name": "pool", "type": "MeanPool"},
      {"name": "out", "type": "Dense", "params": {"features": 5}}],
    "edges": [{"from": "x.out", "to": "image.in"}, {"from": "image.out", "to": "patches.in"}, {"from": "patches.out", "to": "attn.in"},
              {"from": "attn.out", "to": "probs.in"}, {"from": "probs.out", "to": "pool.in"}, {"from": "pool.out", "to": "out.in"}]},
  "loss": {"type": "softmax_cross_entropy", "output": "out"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [48], "classes": 5, "examples": 64},
  "training": {"batch_size": 8, "steps": 1, "eval": false, "seed": 5}
})";

// A project exported as a user would: its initial parameters, each moved by noise (so no bias is
// zero and no LayerNorm scale one), saved as a checkpoint, and that exported by the CLI.
struct Exported {
  project::Project project;
  std::map<std::string, Tensor> params;
  fs::path model;
  QString cli_error;  // empty when the CLI succeeded
};

Exported export_through_cli(project::Project project, const fs::path& dir, uint32_t seed, const QStringList& extra = {}) {
  Exported e;
  project.training.batch_size = 4;  // the export does not depend on it; the trainer's buffers do
  runtime::Trainer t(project);
  for (const std::string& path : t.parameter_paths()) {
    Tensor v = t.parameter(path);
    const Tensor noise = random_tensor(v.shape, seed++, 0.05f);
    for (size_t i = 0; i < v.data.size(); ++i) v.data[i] += noise.data[i];
    t.set_parameter(path, v);
  }
  e.project = t.project();
  e.params = parameters(t);
  t.save_checkpoint((dir / "ckpt").string(), 0);
  e.model = dir / (project.name + ".onnx");
  const auto step = checkpoint::latest(dir / "ckpt");
  if (!step) {
    e.cli_error = "no checkpoint was saved";
    return e;
  }
  QProcess p;
  p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli",
          QStringList{"export", QString::fromStdString(step->string()), "--format", "onnx", "--out", QString::fromStdString(e.model.string())} +
              extra);
  if (!p.waitForFinished(120000)) e.cli_error = "the CLI did not finish";
  else if (p.exitCode() != 0) e.cli_error = p.readAllStandardError();
  return e;
}

// onnxruntime (run_onnx.py, graph optimisations off and on) on `x` against Shardlab's predict(),
// within `tol` of the largest output; "" when it ran, else why it was skipped (failures are QVERIFY's).
QString compare_with_onnxruntime(const Exported& e, const Tensor& x, const fs::path& dir, double tol) {
  const Tensor want = runtime::predict(e.project, e.params, x);
  const fs::path xp = dir / "x.npy", prefix = dir / "y";
  data::save_npy(xp, x);
  const PyResult r = run_python({SHARDLAB_SOURCE_DIR "/tests/reference/onnx/run_onnx.py", QString::fromStdString(e.model.string()),
                                 QString::fromStdString(xp.string()), QString::fromStdString(prefix.string())});
  if (r.exit_code == 3 || !r.started) return r.out.trimmed().isEmpty() ? QString("python3 did not start") : r.out.trimmed();
  qInfo().noquote() << r.out.trimmed();
  [&] { QVERIFY2(r.exit_code == 0, qPrintable(r.out)); }();
  if (r.exit_code != 0) return "";
  const double scale = std::max(1.0, max_abs(want));
  for (const char* run : {"plain", "optimised"}) {
    const Tensor got = data::load_npy(prefix.string() + "." + run + ".npy");
    [&] { QCOMPARE(got.shape, want.shape); }();
    if (got.shape != want.shape) return "";
    const double diff = max_abs_diff(got, want);
    qInfo().noquote() << QString("%1: onnxruntime (%2) vs Shardlab on %3: max abs diff %4 (outputs up to %5)")
                             .arg(QString::fromStdString(e.project.name), run, QString::fromStdString(shape_str(x.shape)))
                             .arg(diff, 0, 'g', 3)
                             .arg(max_abs(want), 0, 'g', 3);
    [&] { QVERIFY2(diff <= tol * scale, qPrintable(QString("%1: max abs diff %2").arg(run).arg(diff))); }();
  }
  return "";
}

#ifdef SHARDLAB_HAVE_ONNX
// The model as ONNX reads it, checked by its checker, and its shapes inferred in strict mode (every
// node's inference must succeed and agree with the declared input and output); throws otherwise.
onnx::ModelProto checked_model(const fs::path& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  if (!m.ParseFromIstream(&in)) throw Error(path.string() + ": not a ModelProto");
  onnx::checker::check_model(m);
  onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                     onnx::ShapeInferenceOptions(/*check_type=*/true, /*strict=*/1, /*data_prop=*/true));
  return m;
}

// A tensor's inferred (or declared) shape, -1 for a symbolic dimension; empty when unknown.
std::vector<int64_t> shape_of(const onnx::GraphProto& g, const std::string& name) {
  auto dims = [](const onnx::ValueInfoProto& v) {
    std::vector<int64_t> d;
    if (!v.type().tensor_type().has_shape()) return d;
    for (const auto& x : v.type().tensor_type().shape().dim()) d.push_back(x.has_dim_value() ? x.dim_value() : -1);
    return d;
  };
  for (const auto& v : g.value_info())
    if (v.name() == name) return dims(v);
  for (const auto& v : g.output())
    if (v.name() == name) return dims(v);
  return {};
}

std::map<std::string, Tensor> float_initializers(const onnx::GraphProto& g) {
  std::map<std::string, Tensor> inits;
  for (const auto& t : g.initializer()) {
    if (t.data_type() != onnx::TensorProto_DataType_FLOAT) continue;
    Tensor v(Shape(t.dims().begin(), t.dims().end()));
    if (t.raw_data().size() != v.data.size() * sizeof(float)) throw Error(t.name() + ": raw data of the wrong size");
    std::memcpy(v.ptr(), t.raw_data().data(), t.raw_data().size());
    inits[t.name()] = v;
  }
  return inits;
}

std::map<std::string, int> op_counts(const onnx::GraphProto& g) {
  std::map<std::string, int> ops;
  for (const auto& n : g.node()) ++ops[n.op_type()];
  return ops;
}

// Lookups that throw naming what is missing (the tests catch it and fail with that message).
bool has_node(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& n : g.node())
    if (n.name() == name) return true;
  return false;
}

const onnx::NodeProto& node_named(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& n : g.node())
    if (n.name() == name) return n;
  throw Error("the model has no node '" + name + "'");
}

const onnx::AttributeProto& attr_of(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a;
  throw Error("node '" + n.name() + "' has no attribute '" + name + "'");
}

const Tensor& init(const std::map<std::string, Tensor>& inits, const std::string& name) {
  auto it = inits.find(name);
  if (it == inits.end()) throw Error("the model has no float initializer '" + name + "'");
  return it->second;
}

// Slice `layer` of a Repeat's stacked parameter.
std::vector<float> slice(const Tensor& stacked, int64_t layer) {
  const int64_t n = numel(Shape(stacked.shape.begin() + 1, stacked.shape.end()));
  return std::vector<float>(stacked.data.begin() + layer * n, stacked.data.begin() + (layer + 1) * n);
}
#endif

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
    if (!exporter::onnx_available()) {
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
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
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

  // projects/vit-fashion: PatchEmbed, PositionEmbedding, 4 blocks of pre-norm attention and MLP,
  // MeanPool, a classifier.
  void vitExportMatchesTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("vit").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/projects/vit-fashion.shardlab.json"), dir, 100);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(g.input(0).name(), std::string("image"));
      QCOMPARE(shape_of(g, "head"), (std::vector<int64_t>{-1, 10}));
      QCOMPARE(shape_of(g, "patches"), (std::vector<int64_t>{-1, 16, 64}));  // 4 x 4 patches of 7 x 7
      QCOMPARE(shape_of(g, "patches/grid"), (std::vector<int64_t>{-1, 4, 4, 7, 7, 1}));
      QCOMPARE(shape_of(g, "blocks/3/attn/query"), (std::vector<int64_t>{-1, 4, 16, 16}));  // (batch, heads, seq, kv)
      QCOMPARE(shape_of(g, "blocks/3/attn/key"), (std::vector<int64_t>{-1, 4, 16, 16}));    // (batch, heads, kv, seq)
      QCOMPARE(shape_of(g, "blocks/0/attn/weights"), (std::vector<int64_t>{-1, 4, 16, 16}));
      QCOMPARE(shape_of(g, "blocks/0/attn"), (std::vector<int64_t>{-1, 16, 64}));
      QCOMPARE(shape_of(g, "pool"), (std::vector<int64_t>{-1, 64}));

      std::map<std::string, int> ops = op_counts(g);
      QCOMPARE(ops["MatMul"], 1 + 4 * (6 + 2) + 1);  // patches; q, k, v, scores, context, out and the MLP per block; head
      QCOMPARE(ops["Softmax"], 4);
      QCOMPARE(ops["ReduceMean"], 1);
      QCOMPARE(ops["Transpose"], 1 + 4 * 4);  // the patch grid; q, k, v and the context per block
      QCOMPARE(ops["Gather"], 0);
      QVERIFY(!has_node(g, "blocks/0/attn/causal"));  // not causal
      QCOMPARE(attr_of(node_named(g, "patches/grid"), "perm").ints_size(), 6);
      QCOMPARE(attr_of(node_named(g, "pool/ReduceMean"), "keepdims").i(), int64_t(0));
      QCOMPARE(attr_of(node_named(g, "pool/ReduceMean"), "axes").ints(0), int64_t(1));
      QCOMPARE(attr_of(node_named(g, "blocks/2/attn/Softmax"), "axis").i(), int64_t(-1));

      const std::map<std::string, Tensor> inits = float_initializers(g);
      QCOMPARE(init(inits, "patches/kernel").shape, (Shape{7, 7, 1, 64}));
      QCOMPARE(init(inits, "patches/kernel").data, e.params.at("patches/kernel").data);
      QCOMPARE(init(inits, "patches/bias").data, e.params.at("patches/bias").data);
      QCOMPARE(init(inits, "pos/embedding").shape, (Shape{16, 64}));
      QCOMPARE(init(inits, "pos/embedding").data, e.params.at("pos/embedding").data);
      for (int layer = 0; layer < 4; ++layer) {
        const std::string at = "blocks/" + std::to_string(layer) + "/attn/";
        QCOMPARE(init(inits, at + "query/kernel").shape, (Shape{64, 4, 16}));
        QCOMPARE(init(inits, at + "value/bias").shape, (Shape{4, 16}));
        QCOMPARE(init(inits, at + "out/kernel").shape, (Shape{4, 16, 64}));
        for (const char* p :
             {"query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel", "value/bias", "out/kernel", "out/bias"})
          QCOMPARE(init(inits, at + p).data, slice(e.params.at(std::string("blocks/attn/") + p), layer));
      }
      QCOMPARE(init(inits, "const/f32/3e800000").data, std::vector<float>{0.25f});  // 1/sqrt(16), q's scale
      QCOMPARE(node_named(g, "blocks/1/attn/query/scale").input(1), std::string("const/f32/3e800000"));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    const QString skipped = compare_with_onnxruntime(e, random_tensor({5, 28, 28}, 7, 1.0f), dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // --dtype float16 / bfloat16: every float initializer in that type (the parameters rounded to it,
  // to nearest even), the input and output float32 with a Cast at each end (none for token ids,
  // which an Embed reads as they are: a 16-bit float would round ids past 2048 or 256), accepted by
  // ONNX's checker and strict, type-checked shape inference; float16 runs in onnxruntime close to
  // Shardlab's float32 forward pass where it is installed.
  void sixteenBitExportsHoldTheirDtype_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<QString>("dtype");
    for (const char* p : {"vit-fashion", "copy-transformer"})
      for (const char* d : {"float16", "bfloat16"}) QTest::newRow(qPrintable(QString("%1 %2").arg(p, d))) << QString(p) << QString(d);
  }
  void sixteenBitExportsHoldTheirDtype() {
    QFETCH(QString, project);
    QFETCH(QString, dtype);
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath(project + "-" + dtype).toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/projects/" + project.toStdString() + ".shardlab.json"),
                                          dir, 300, {"--dtype", dtype});
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
    const DType d = *parse_float_dtype(dtype.toStdString());
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      const int want = d == DType::F16 ? onnx::TensorProto_DataType_FLOAT16 : onnx::TensorProto_DataType_BFLOAT16;
      QCOMPARE(g.input(0).type().tensor_type().elem_type(), int(onnx::TensorProto_DataType_FLOAT));
      QCOMPARE(g.output(0).type().tensor_type().elem_type(), int(onnx::TensorProto_DataType_FLOAT));
      int sixteen = 0;
      for (const auto& t : g.initializer()) {
        if (t.data_type() == onnx::TensorProto_DataType_INT64) continue;  // shapes
        QCOMPARE(t.data_type(), want);
        ++sixteen;
      }
      QVERIFY(sixteen > 10);
      // A parameter as written: the checkpoint's values rounded to the dtype.
      const std::string name = project == "vit-fashion" ? "head/kernel" : "head/kernel";
      for (const auto& t : g.initializer())
        if (t.name() == name) {
          const Tensor& p = e.params.at(name);
          std::vector<uint16_t> bits(p.data.size());
          from_float(p.data.data(), bits.data(), d, bits.size());
          QCOMPARE(t.raw_data(), std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * 2));
        }
      const bool cast_input = has_node(g, g.input(0).name() + "/Cast");
      QCOMPARE(cast_input, project == "vit-fashion");  // copy-transformer's input is token ids
      QCOMPARE(node_named(g, g.output(0).name() + "/output").op_type(), std::string("Cast"));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    if (d != DType::F16 || project != "vit-fashion") return;  // onnxruntime's CPU runs no bfloat16 MatMul
    const QString skipped = compare_with_onnxruntime(e, random_tensor({5, 28, 28}, 7, 1.0f), dir, 3e-2);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // projects/copy-transformer: Embed of token ids, 2 blocks of causal attention, per-token logits.
  void copyTransformerExportMatchesTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("copy").toStdString());
    fs::create_directories(dir);
    const Exported e =
        export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/projects/copy-transformer.shardlab.json"), dir, 200);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(g.input(0).name(), std::string("tokens"));
      QCOMPARE(g.input(0).type().tensor_type().elem_type(), int32_t(onnx::TensorProto_DataType_FLOAT));  // ids as floats
      QCOMPARE(shape_of(g, "embed/ids"), (std::vector<int64_t>{-1, 16}));
      QCOMPARE(shape_of(g, "embed"), (std::vector<int64_t>{-1, 16, 64}));
      QCOMPARE(shape_of(g, "blocks/1/attn/masked_scores"), (std::vector<int64_t>{-1, 4, 16, 16}));
      QCOMPARE(shape_of(g, "logits"), (std::vector<int64_t>{-1, 16, 16}));

      std::map<std::string, int> ops = op_counts(g);
      QCOMPARE(ops["Cast"], 1);
      QCOMPARE(ops["Gather"], 1);
      QCOMPARE(ops["Softmax"], 2);
      QCOMPARE(ops["MatMul"], 2 * (6 + 2) + 1);
      QCOMPARE(attr_of(node_named(g, "embed/Cast"), "to").i(), int64_t(onnx::TensorProto_DataType_INT64));
      QCOMPARE(attr_of(node_named(g, "embed/Gather"), "axis").i(), int64_t(0));
      QCOMPARE(node_named(g, "embed/Gather").input(0), std::string("embed/embedding"));
      QCOMPARE(node_named(g, "embed/Gather").input(1), std::string("embed/ids"));
      for (const char* layer : {"blocks/0", "blocks/1"}) {
        const onnx::NodeProto& mask = node_named(g, std::string(layer) + "/attn/causal");
        QCOMPARE(mask.op_type(), std::string("Add"));
        QCOMPARE(mask.input(1), std::string("const/causal_mask/16"));
      }

      const std::map<std::string, Tensor> inits = float_initializers(g);
      const Tensor& mask = init(inits, "const/causal_mask/16");
      QCOMPARE(mask.shape, (Shape{16, 16}));
      for (int64_t q = 0; q < 16; ++q)
        for (int64_t k = 0; k < 16; ++k) {
          const float v = mask.data[size_t(q * 16 + k)];
          QVERIFY2(k <= q ? v == 0.0f : std::isinf(v) && v < 0, qPrintable(QString("mask[%1][%2] = %3").arg(q).arg(k).arg(v)));
        }
      QCOMPARE(init(inits, "embed/embedding").shape, (Shape{16, 64}));
      QCOMPARE(init(inits, "embed/embedding").data, e.params.at("embed/embedding").data);
      QCOMPARE(init(inits, "pos/embedding").data, e.params.at("pos/embedding").data);
      QCOMPARE(init(inits, "blocks/1/attn/key/kernel").data, slice(e.params.at("blocks/attn/key/kernel"), 1));
      QCOMPARE(init(inits, "blocks/0/attn/out/bias").data, slice(e.params.at("blocks/attn/out/bias"), 0));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    // Token ids in [0, 16), as floats.
    Tensor x({6, 16});
    std::mt19937 rng(9);
    for (float& v : x.data) v = float(rng() % 16);
    const QString skipped = compare_with_onnxruntime(e, x, dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // Reshape, PatchEmbed over channels without a bias, causal attention without biases and with its
  // own qkv and out features, Softmax.
  void otherNewLayersExportMatchTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("other").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::parse_project(kOtherLayers, "other-layers.shardlab.json"), dir, 300);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(shape_of(g, "image"), (std::vector<int64_t>{-1, 4, 4, 3}));
      QCOMPARE(shape_of(g, "patches"), (std::vector<int64_t>{-1, 4, 12}));  // 2 x 2 patches of 2 x 2 x 3
      QCOMPARE(shape_of(g, "attn/query"), (std::vector<int64_t>{-1, 3, 4, 2}));
      QCOMPARE(shape_of(g, "attn/merged"), (std::vector<int64_t>{-1, 4, 6}));
      QCOMPARE(shape_of(g, "attn"), (std::vector<int64_t>{-1, 4, 10}));
      QCOMPARE(shape_of(g, "probs"), (std::vector<int64_t>{-1, 4, 10}));
      QCOMPARE(shape_of(g, "pool"), (std::vector<int64_t>{-1, 10}));
      QCOMPARE(node_named(g, "image/Reshape").op_type(), std::string("Reshape"));
      QCOMPARE(node_named(g, "probs/Softmax").op_type(), std::string("Softmax"));
      QCOMPARE(node_named(g, "attn/out/MatMul").output(0), std::string("attn"));  // no bias to add
      QCOMPARE(node_named(g, "patches/MatMul").output(0), std::string("patches"));
      QCOMPARE(op_counts(g)["Dropout"], 0);
      const std::map<std::string, Tensor> inits = float_initializers(g);
      QVERIFY(!inits.count("patches/bias"));
      QVERIFY(!inits.count("attn/query/bias"));
      QVERIFY(!inits.count("attn/out/bias"));
      QCOMPARE(init(inits, "patches/kernel").shape, (Shape{2, 2, 3, 12}));
      QCOMPARE(init(inits, "attn/out/kernel").shape, (Shape{3, 2, 10}));
      QCOMPARE(init(inits, "attn/out/kernel").data, e.params.at("attn/out/kernel").data);
      QVERIFY(inits.count("const/causal_mask/4"));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    const QString skipped = compare_with_onnxruntime(e, random_tensor({7, 48}, 11, 1.0f), dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // The convolution layers through tests/reference/cnn-tiny (a strided SAME Conv2D on a
  // one-channel image, SAME max pooling, a dilated VALID Conv2D of 2 feature groups, AvgPool2D):
  // NHWC transposed to ONNX's NCHW and back, the kernel to (out, in / groups, kh, kw), pads in
  // ONNX's order (top, left, bottom, right).
  void convolutionLayersExportMatchTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("cnn").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/tests/reference/cnn-tiny.shardlab.json"), dir, 400);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(shape_of(g, "conv1/nchw"), (std::vector<int64_t>{-1, 1, 12, 12}));
      QCOMPARE(shape_of(g, "conv1"), (std::vector<int64_t>{-1, 6, 6, 8}));
      QCOMPARE(shape_of(g, "pool1"), (std::vector<int64_t>{-1, 6, 6, 8}));
      QCOMPARE(shape_of(g, "conv2"), (std::vector<int64_t>{-1, 2, 2, 8}));
      QCOMPARE(shape_of(g, "pool2"), (std::vector<int64_t>{-1, 1, 1, 8}));
      const std::map<std::string, int> ops = op_counts(g);
      QCOMPARE(ops.at("Conv"), 2);
      QCOMPARE(ops.at("MaxPool"), 1);
      QCOMPARE(ops.at("AveragePool"), 1);
      auto ints = [&](const std::string& node, const std::string& attr) {
        const auto& a = attr_of(node_named(g, node), attr).ints();
        return std::vector<int64_t>(a.begin(), a.end());
      };
      QCOMPARE(ints("conv1/Conv", "strides"), (std::vector<int64_t>{2, 2}));
      QCOMPARE(ints("conv1/Conv", "pads"), (std::vector<int64_t>{0, 0, 1, 1}));  // SAME on 12 by 2: the odd row after
      QCOMPARE(ints("pool1/MaxPool", "pads"), (std::vector<int64_t>{1, 1, 1, 1}));
      QCOMPARE(ints("conv2/Conv", "dilations"), (std::vector<int64_t>{2, 2}));
      QCOMPARE(ints("conv2/Conv", "pads"), (std::vector<int64_t>{0, 0, 0, 0}));
      QCOMPARE(attr_of(node_named(g, "conv2/Conv"), "group").i(), int64_t(2));
      QCOMPARE(attr_of(node_named(g, "pool2/AveragePool"), "count_include_pad").i(), int64_t(1));
      QCOMPARE(shape_of(g, "conv2/kernel/oihw"), (std::vector<int64_t>{8, 4, 3, 3}));
      const std::map<std::string, Tensor> inits = float_initializers(g);
      QCOMPARE(init(inits, "conv2/kernel").data, e.params.at("conv2/kernel").data);
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    const QString skipped = compare_with_onnxruntime(e, random_tensor({5, 12, 12}, 13, 1.0f), dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // GroupNorm through tests/reference/gn-tiny: laid out as (batch, groups, a group's values) for a
  // LayerNormalization, back, then scaled and shifted per channel; on an image and on a vector.
  void groupNormExportMatchesTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("gn").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/tests/reference/gn-tiny.shardlab.json"), dir, 400);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(shape_of(g, "norm1/rows"), (std::vector<int64_t>{-1, 4, 72}));  // 4 groups of 6 x 6 x 2
      QCOMPARE(shape_of(g, "norm1"), (std::vector<int64_t>{-1, 6, 6, 8}));
      QCOMPARE(shape_of(g, "norm2/rows"), (std::vector<int64_t>{-1, 2, 8}));
      QCOMPARE(shape_of(g, "norm2"), (std::vector<int64_t>{-1, 16}));
      const std::map<std::string, int> ops = op_counts(g);
      QCOMPARE(ops.at("LayerNormalization"), 2);
      QCOMPARE(attr_of(node_named(g, "norm2/LayerNormalization"), "epsilon").f(), 1e-5f);
      const std::map<std::string, Tensor> inits = float_initializers(g);
      QCOMPARE(init(inits, "norm1/scale").data, e.params.at("norm1/scale").data);
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    const QString skipped = compare_with_onnxruntime(e, random_tensor({5, 6, 6}, 17, 1.0f), dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // Concatenate, as ONNX's Concat: cat-tiny's channels (axis -1 of an NHWC image) and features.
  void concatenateExportsAsConcat() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("cat").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/tests/reference/cat-tiny.shardlab.json"), dir, 700);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(op_counts(g).at("Concat"), 2);
      QCOMPARE(shape_of(g, "skip"), (std::vector<int64_t>{-1, 6, 6, 8}));
      QCOMPARE(shape_of(g, "branches"), (std::vector<int64_t>{-1, 24}));
      QCOMPARE(attr_of(node_named(g, "skip/Concat"), "axis").i(), int64_t(-1));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    const QString skipped = compare_with_onnxruntime(e, random_tensor({5, 6, 6}, 19, 1.0f), dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // The Llama layers through tests/reference/llama-tiny: RMSNorm composed (opset 17 has none),
  // rotary embedding as t * cos + rotate_half(t) * sin, grouped keys and values expanded to every
  // query head of their group, SiLU and the gating Multiply.
  void llamaLayersExportMatchTheForwardPass() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("llama").toStdString());
    fs::create_directories(dir);
    const Exported e = export_through_cli(project::load_project(SHARDLAB_SOURCE_DIR "/tests/reference/llama-tiny.shardlab.json"), dir, 500);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      QCOMPARE(shape_of(g, "blocks/0/attn/key/grouped"), (std::vector<int64_t>{-1, 2, 8, 16}));
      QCOMPARE(shape_of(g, "blocks/0/attn/key"), (std::vector<int64_t>{-1, 4, 8, 16}));
      QCOMPARE(shape_of(g, "blocks/1/attn/value"), (std::vector<int64_t>{-1, 4, 16, 8}));
      QCOMPARE(shape_of(g, "blocks/0/attn/query/rope"), (std::vector<int64_t>{-1, 16, 4, 8}));
      QCOMPARE(shape_of(g, "norm"), (std::vector<int64_t>{-1, 16, 32}));
      const std::map<std::string, int> ops = op_counts(g);
      QCOMPARE(ops.at("Expand"), 4);       // key and value of 2 blocks
      QCOMPARE(ops.at("Neg"), 4);          // query and key of 2 blocks turn; value does not
      QCOMPARE(ops.at("Sigmoid"), 2);      // one SiLU a block
      QCOMPARE(ops.at("ReduceMean"), 5);   // two RMSNorms a block and the final one
      QCOMPARE(attr_of(node_named(g, "blocks/1/attn/key/rope/Concat"), "axis").i(), int64_t(3));
      const std::map<std::string, Tensor> inits = float_initializers(g);
      QCOMPARE(init(inits, "const/rope/16_8_10000/cos").shape, (Shape{16, 1, 8}));
      QCOMPARE(init(inits, "blocks/1/attn/key/kernel").data, slice(e.params.at("blocks/attn/key/kernel"), 1));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    Tensor x({6, 16});
    std::mt19937 rng(17);
    for (float& v : x.data) v = float(rng() % 64);
    const QString skipped = compare_with_onnxruntime(e, x, dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // A tied LM head (Attend on the Embed's table, as an imported GPT-2 has it): the file holds the
  // table once, and the logits go through its transpose.
  void aTiedHeadExportsTheTableOnce() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const fs::path dir = fs::path(dir_.filePath("tied").toStdString());
    fs::create_directories(dir);
    QProcess import;
    import.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli",
                 {"import", SHARDLAB_SOURCE_DIR "/tests/reference/hf/gpt2-tiny", "--out", QString::fromStdString((dir / "gpt.shardlab.json").string())});
    QVERIFY(import.waitForFinished(120000));
    QCOMPARE(import.exitCode(), 0);
    const Exported e = export_through_cli(project::load_project(dir / "gpt.shardlab.json"), dir, 600);
    QVERIFY2(e.cli_error.isEmpty(), qPrintable(e.cli_error));
#ifdef SHARDLAB_HAVE_ONNX
    try {
      const onnx::ModelProto m = checked_model(e.model);
      const onnx::GraphProto& g = m.graph();
      const std::map<std::string, Tensor> inits = float_initializers(g);
      QCOMPARE(init(inits, "embed/embedding").data, e.params.at("embed/embedding").data);
      QVERIFY(!inits.count("head/embedding"));
      QCOMPARE(attr_of(node_named(g, "head/Transpose"), "perm").ints_size(), 2);
      QCOMPARE(shape_of(g, "head"), (std::vector<int64_t>{-1, 16, 64}));
    } catch (const std::exception& ex) {
      QFAIL(ex.what());
    }
#endif
    Tensor x({6, 16});
    std::mt19937 rng(23);
    for (float& v : x.data) v = float(rng() % 64);
    const QString skipped = compare_with_onnxruntime(e, x, dir, 1e-5);
    if (!skipped.isEmpty()) {
      qInfo().noquote() << "skipping:" << skipped;
      QSKIP(qPrintable(skipped));
    }
  }

  // A node the exporter has no mapping for, at the top level or inside a Repeat's block, is refused
  // with its path and type; so is a parameter that is missing or of the wrong shape.
  void refusesWhatItCannotExport() {
    if (!exporter::onnx_available()) QSKIP("this build has no ONNX");
    const auto params = parameters(*trainer_);
    graph::GraphReport report = project::analyze_project(project_);
    for (auto& n : report.nodes)
      if (n.name == "relu") n.type = "LSTM";  // as a layer type this exporter does not know
    QString e = error_of([&] { exporter::onnx_model(project_, report, params); });
    VERIFY_CONTAINS(e, "node 'relu' (type 'LSTM'): ONNX export does not support this layer type");

    report = project::analyze_project(project_);
    for (auto& n : report.nodes)
      if (n.name == "blocks")
        for (auto& b : n.body)
          if (b.name == "blocks/act") b.type = "Swish";
    e = error_of([&] { exporter::onnx_model(project_, report, params); });
    VERIFY_CONTAINS(e, "node 'blocks/act' (type 'Swish')");

    auto missing = params;
    missing.erase("hidden/kernel");
    e = error_of([&] { exporter::onnx_model(project_, missing, ""); });
    VERIFY_CONTAINS(e, "parameter 'hidden/kernel': not among the given parameters");

    auto wrong = params;
    wrong["blocks/down/kernel"] = Tensor({2, 48, 24});
    e = error_of([&] { exporter::onnx_model(project_, wrong, ""); });
    VERIFY_CONTAINS(e, "parameter 'blocks/down/kernel'");
    VERIFY_CONTAINS(e, "not stacked over the Repeat's 3 layers");

    wrong = params;
    wrong["out/kernel"] = Tensor({5, 16});
    e = error_of([&] { exporter::onnx_model(project_, wrong, ""); });
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
