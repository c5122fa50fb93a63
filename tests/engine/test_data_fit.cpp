// One truth for whether data fits a model: for a table of graphs, data sources and losses that fit
// or do not, the design check (runtime::preflight with the data, what `check` and the editor's
// design check show) and the trainer (what Start and `train` do) give the same verdict, and where
// they refuse, the same first message, naming the split, the node and both shapes. The design
// check's problem is marked on the node at fault (the Input for examples, the loss's output node
// for labels and targets) and says what would fix it.
#include <QtTest>
#include <memory>

#include "engine/backends/backend.h"
#include "engine/project/project.h"
#include "engine/runtime/preflight.h"
#include "engine/runtime/trainer.h"
#include "tests/engine/test_support.h"

using namespace shardlab;

namespace {

// A project over synthetic data: `nodes` after an Input of `input` (JSON arrays as text), chained
// in order, the loss on the last; the data `data` (a synthetic spec's fields).
std::string fit_project(const std::string& input, const std::vector<std::string>& nodes, const std::string& loss,
                    const std::string& data, int batch = 8) {
  std::string n = R"({"name": "x", "type": "Input", "params": {"shape": )" + input + "}}";
  std::string e;
  std::string prev = "x";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    n += ", {\"name\": \"" + name + "\", " + nodes[i] + "}";
    e += std::string(e.empty() ? "" : ", ") + "{\"from\": \"" + prev + ".out\", \"to\": \"" + name + ".in\"}";
    prev = name;
  }
  return R"({"format": "shardlab.project", "version": 1, "name": "fit",
    "graph": {"nodes": [)" + n + R"(], "edges": [)" + e + R"(]},
    "loss": {"type": ")" + loss + R"(", "output": ")" + prev + R"("},
    "optimizer": {"type": "sgd", "learning_rate": 0.01},
    "data": {"type": "synthetic", )" + data + R"(},
    "training": {"batch_size": )" + std::to_string(batch) + R"(, "steps": 1, "eval": false}})";
}

const std::string kDense10 = R"("type": "Dense", "params": {"features": 10})";
const std::string kDense4 = R"("type": "Dense", "params": {"features": 4})";
const std::string kFlatten = R"("type": "Flatten")";
const std::string kMeanPool = R"("type": "MeanPool")";
const std::string kRelu = R"("type": "ReLU")";

std::string blobs(const std::string& shape, int classes, int examples = 64) {
  return R"("kind": "blobs", "feature_shape": )" + shape + R"(, "classes": )" + std::to_string(classes) +
         R"(, "examples": )" + std::to_string(examples);
}
std::string normal(const std::string& features, const std::string& targets) {
  return R"("kind": "normal", "feature_shape": )" + features + R"(, "target_shape": )" + targets + R"(, "examples": 64)";
}

}  // namespace

class TestDataFit : public QObject {
  Q_OBJECT
 private slots:
  void designCheckAndTrainerAgree_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("fits");
    QTest::addColumn<QString>("reason");  // a piece of the refusal
    QTest::addColumn<QString>("node");    // where the design check marks it: "input", "output" or ""
    QTest::addColumn<QString>("fix");     // a piece of what it says would fix it
    auto row = [](const char* name, const std::string& text, bool fits, const char* reason = "", const char* node = "",
                  const char* fix = "") { QTest::newRow(name) << QString::fromStdString(text) << fits << QString(reason) << QString(node) << QString(fix); };
    const std::string xent = "softmax_cross_entropy", mse = "mean_squared_error";
    // The issue's case: a Dense over (28, 28) gives a class score per row, not per example.
    row("image without Flatten, softmax", fit_project("[28, 28]", {kDense10, kRelu, kDense10}, xent, blobs("[28, 28]", 10)), false,
        "the loss takes class ids of shape (28,) per example", "output", "add Flatten after the Input, or MeanPool before 'n2'");
    row("image with Flatten, softmax", fit_project("[28, 28]", {kFlatten, kDense10, kRelu, kDense10}, xent, blobs("[28, 28]", 10)), true);
    row("image pooled, softmax", fit_project("[28, 28]", {kDense10, kMeanPool}, xent, blobs("[28, 28]", 10)), true);
    row("flat input, softmax", fit_project("[784]", {kDense10}, xent, blobs("[784]", 10)), true);
    row("flat input, image data", fit_project("[784]", {kDense10}, xent, blobs("[28, 28]", 10)), false, "examples have shape (28, 28)", "input",
        "set the shape of Input 'x' to (28, 28)");
    row("image input, flat data", fit_project("[28, 28]", {kFlatten, kDense10}, xent, blobs("[784]", 10)), false,
        "but the Input node takes (28, 28)", "input", "set the shape of Input 'x' to (784,)");
    row("more classes than outputs", fit_project("[16]", {kDense10}, xent, blobs("[16]", 12)), false, "labels go up to 11", "output", "set the features of 'n0' to 12");
    row("as many classes as outputs", fit_project("[16]", {kDense10}, xent, blobs("[16]", 10)), true);
    row("fewer classes than outputs", fit_project("[16]", {kDense10}, xent, blobs("[16]", 3)), true);
    row("softmax on float targets", fit_project("[16]", {kDense10}, xent, normal("[16]", "[10]")), false, "needs integer class labels", "output",
        "use mean_squared_error");
    row("mse on float targets", fit_project("[16]", {kDense10}, mse, normal("[16]", "[10]")), true);
    row("mse, targets too narrow", fit_project("[16]", {kDense10}, mse, normal("[16]", "[4]")), false, "targets have shape (4,)", "output", "make 'n0' give (4,) per example");
    row("mse, targets too wide", fit_project("[16]", {kDense4}, mse, normal("[16]", "[10]")), false, "targets have shape (10,)", "output", "make 'n0' give (10,) per example");
    row("mse on class labels", fit_project("[16]", {kDense10}, mse, blobs("[16]", 10)), false, "targets have shape ()", "output", "make 'n0' give () per example");
    row("mse over rows", fit_project("[6, 16]", {kDense4}, mse, normal("[6, 16]", "[6, 4]")), true);
    row("mse over rows, targets flat", fit_project("[6, 16]", {kDense4}, mse, normal("[6, 16]", "[24]")), false,
        "targets have shape (24,)", "output", "make 'n0' give (24,) per example");
    row("softmax over rows, labels per row", fit_project("[6, 16]", {kDense4, kMeanPool}, xent, blobs("[6, 16]", 4)), true);
    row("softmax over rows, no pooling", fit_project("[6, 16]", {kDense4}, xent, blobs("[6, 16]", 4)), false,
        "the loss takes class ids of shape (6,) per example", "output", "MeanPool before 'n0'");
    row("batch larger than the data", fit_project("[16]", {kDense10}, xent, blobs("[16]", 10, 6), 8), false,
        "training.batch_size: 8 is larger than the training split", "", "a batch of at most 6");
    row("batch as large as the data", fit_project("[16]", {kDense10}, xent, blobs("[16]", 10, 8), 8), true);
    row("flatten of a flat input", fit_project("[16]", {kFlatten, kDense10}, xent, blobs("[16]", 10)), true);
    row("mse after flatten", fit_project("[4, 4]", {kFlatten, kDense4}, mse, normal("[4, 4]", "[4]")), true);
  }

  void designCheckAndTrainerAgree() {
    QFETCH(QString, text);
    QFETCH(bool, fits);
    QFETCH(QString, reason);
    QFETCH(QString, node);
    QFETCH(QString, fix);
    const project::Project p = project::parse_project(text.toStdString(), "fit.shardlab.json");
    const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
    runtime::PreflightOptions o;
    o.data = true;
    const runtime::Preflight check = runtime::preflight(p, *cpu, o);
    const QString design = check.errors.empty() ? QString() : QString::fromStdString(check.errors.front());
    runtime::TrainOptions t;
    t.steps = 1;
    t.threads = 1;
    const QString trainer = testing::error_of([&] { runtime::Trainer(p, t).run(); });
    QCOMPARE(design.isEmpty(), fits);
    QCOMPARE(trainer.isEmpty(), fits);
    if (!fits) {
      VERIFY_CONTAINS(design, reason);
      QCOMPARE(trainer, design);  // the same first message from both
      const Diagnostic& d = check.problems.front();
      const std::string at = node == "input" ? p.graph.nodes.front().name : node == "output" ? p.loss.output : "";
      QCOMPARE(d.nodes.empty() ? std::string() : d.nodes.front(), at);
      QCOMPARE(QString::fromStdString(d.field), node.isEmpty() ? QString("training.batch_size") : QString("data"));
      VERIFY_CONTAINS(QString::fromStdString(d.fix), fix);
    }
  }
};

QTEST_APPLESS_MAIN(TestDataFit)
#include "test_data_fit.moc"
