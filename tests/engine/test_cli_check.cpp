// `shardlab-cli check` refuses what `train` would refuse, first and in the same words: the mesh, the
// rules, indivisible dimensions, the constraint fallback, a model larger than the machine, and the
// data source against the model. Both exit 1 (never a signal) with a line naming the field, axis,
// node or file at fault.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "engine/data/data_spec.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/test_support.h"

using Json = nlohmann::ordered_json;
using shardlab::testing::CliResult;
using shardlab::testing::run_cli;

namespace {

const QString kProjects = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects");

QString describe(const CliResult& r) {
  return QString("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(r.exit_code).arg(r.out.left(3000), r.err.left(3000));
}

// The errors, one line each (a fix printed under one, indented, is not an error line).
QStringList error_lines(const CliResult& r) {
  QStringList out;
  for (const QString& line : r.err.split('\n', Qt::SkipEmptyParts))
    if (!line.startsWith("  fix: ")) out << line;
  return out;
}

// Input 16 -> Dense 10 ("dense", its output constrained to (batch, classes)), mean squared error on
// synthetic ones, batch 8: every row below breaks one thing of it.
Json small_project() {
  return Json::parse(R"({
    "format": "shardlab.project",
    "version": 1,
    "name": "small",
    "graph": {
      "nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [16], "axes": ["embed"]}},
        {"name": "dense", "type": "Dense", "params": {"features": 10}, "output_axes": ["batch", "classes"]}
      ],
      "edges": [{"from": "x.out", "to": "dense.in"}]
    },
    "loss": {"type": "mean_squared_error", "output": "dense"},
    "optimizer": {"type": "sgd", "learning_rate": 0.1},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 2, "eval": false}
  })");
}

// Input (784) -> Dense 10 on Fashion-MNIST, whose examples are (28, 28).
Json flat_input_on_fashion_mnist() {
  return Json::parse(R"({
    "format": "shardlab.project",
    "version": 1,
    "name": "flat",
    "graph": {
      "nodes": [
        {"name": "pixels", "type": "Input", "params": {"shape": [784], "axes": ["embed"]}},
        {"name": "logits", "type": "Dense", "params": {"features": 10}}
      ],
      "edges": [{"from": "pixels.out", "to": "logits.in"}]
    },
    "loss": {"type": "softmax_cross_entropy", "output": "logits"},
    "optimizer": {"type": "adam", "learning_rate": 0.001},
    "data": {"type": "fashion_mnist"},
    "training": {"batch_size": 128, "steps": 2, "eval": false}
  })");
}

bool have_fashion_mnist() {
  return std::filesystem::exists(std::string(shardlab::data::kFashionMnistDefaultDir) + "/train-images-idx3-ubyte.gz");
}

QString write_project(const QTemporaryDir& dir, const QString& name, const Json& j) {
  const QString path = dir.filePath(name);
  std::ofstream(path.toStdString()) << j.dump(2) << "\n";
  return path;
}

}  // namespace

class TestCliCheck : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(shardlab::testing::kCli).isExecutable(), qPrintable(shardlab::testing::kCli + " is not built"));
  }

  // Each row: a project (a variant of small_project), extra flags for both commands, and what the
  // reason must name.
  void checkAndTrainRefuseAlike_data() {
    QTest::addColumn<QByteArray>("project");
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QStringList>("expected");

    Json j = small_project();
    j["mesh"] = {{"axes", {{"data", 3}}}};
    j["logical_axis_rules"] = Json::parse(R"([["batch", "data"]])");
    QTest::newRow("mesh axis of 3 on a batch of 8") << QByteArray::fromStdString(j.dump()) << QStringList{}
                                                   << QStringList{"mesh axis data (3) does not divide", "'x' dimension 0 (8)",
                                                                  "2 or 4"};

    j = small_project();
    j["mesh"] = {{"axes", {{"data", 2}}}};
    j["logical_axis_rules"] = Json::parse(R"([["batch", "dta"]])");
    QTest::newRow("rule naming a misspelt mesh axis")
        << QByteArray::fromStdString(j.dump()) << QStringList{}
        << QStringList{"logical_axis_rules[0] (batch=dta)", "has no axis 'dta'", "did you mean 'data'?"};

    QTest::newRow("--rules naming an axis the --mesh lacks")
        << QByteArray::fromStdString(small_project().dump()) << QStringList{"--mesh", "data=2", "--rules", "classes=model"}
        << QStringList{"rules 'classes=model'", "mesh data=2 has no axis 'model'", "its axes: data"};

    QTest::newRow("--mesh that does not parse") << QByteArray::fromStdString(small_project().dump())
                                                << QStringList{"--mesh", "data=two"}
                                                << QStringList{"mesh 'data=two'", "size of 'data' is not a whole number"};

    QTest::newRow("--devices that the mesh does not have")
        << QByteArray::fromStdString(small_project().dump()) << QStringList{"--mesh", "data=2", "--devices", "4"}
        << QStringList{"mesh data=2 has 2 devices but 4 are available"};

    j = small_project();
    j["constraint_fallback"] = "error";
    QTest::newRow("constraint without a rule, fallback error")
        << QByteArray::fromStdString(j.dump()) << QStringList{}
        << QStringList{"array 'dense/", "logical axis 'batch'", "has no rule, and its constraint asks for one"};

    j = small_project();
    j["loss"]["type"] = "softmax_cross_entropy";
    QTest::newRow("float targets for softmax cross-entropy")
        << QByteArray::fromStdString(j.dump()) << QStringList{}
        << QStringList{"data (train split)", "softmax_cross_entropy needs integer class labels", "(10,)"};

    j = small_project();
    j["data"]["feature_shape"] = {4, 4};
    QTest::newRow("examples of another shape than the Input")
        << QByteArray::fromStdString(j.dump()) << QStringList{}
        << QStringList{"data (train split)", "examples have shape (4, 4) but the Input node takes (16,)"};

    j = small_project();
    j["data"] = {{"type", "npy"}, {"features", "missing-features.npy"}, {"targets", "missing-targets.npy"}};
    QTest::newRow("missing data file") << QByteArray::fromStdString(j.dump()) << QStringList{}
                                       << QStringList{"data.features", "missing-features.npy", "no such file"};

    j = small_project();
    j["training"]["batch_size"] = 64;
    QTest::newRow("batch larger than the data") << QByteArray::fromStdString(j.dump()) << QStringList{}
                                                << QStringList{"training.batch_size: 64", "(32 examples)"};
  }
  void checkAndTrainRefuseAlike() {
    QFETCH(QByteArray, project);
    QFETCH(QStringList, flags);
    QFETCH(QStringList, expected);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "refused.shardlab.json", Json::parse(project.toStdString()));

    const CliResult check = run_cli(QStringList{"check", path} + flags);
    QVERIFY2(check.exit_code == 1, qPrintable(describe(check)));
    QVERIFY2(check.out.isEmpty(), qPrintable(describe(check)));
    const QStringList reasons = error_lines(check);
    QVERIFY2(!reasons.isEmpty() && reasons[0].startsWith("shardlab-cli: error: "), qPrintable(describe(check)));
    for (const QString& e : expected) VERIFY_CONTAINS(check.err, e);

    const CliResult train = run_cli(QStringList{"train", path, "--threads", "1", "--quiet"} + flags);
    QVERIFY2(train.exit_code == 1, qPrintable(describe(train)));
    const QStringList refused = error_lines(train);
    QVERIFY2(refused.size() == 1, qPrintable(describe(train)));
    QCOMPARE(refused[0], reasons[0]);
  }

  // IDX images whose header promises more examples than the file holds, plain and gzip: check
  // reads only headers, yet refuses as train does, naming the file.
  void truncatedIdxImagesAreRefusedByCheck_data() {
    QTest::addColumn<bool>("gzip");
    QTest::newRow("plain") << false;
    QTest::newRow("gzip") << true;
  }
  void truncatedIdxImagesAreRefusedByCheck() {
    QFETCH(bool, gzip);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    auto idx = [](uint8_t rank, std::vector<uint32_t> dims, size_t payload) {
      std::string b{'\0', '\0', '\x08', char(rank)};
      for (uint32_t d : dims) b += {char(d >> 24), char(d >> 16), char(d >> 8), char(d)};
      for (size_t i = 0; i < payload; ++i) b += char(i % 10);
      return b;
    };
    const std::string images = idx(2, {32, 16}, 32 * 16 - 100), labels = idx(1, {32}, 32);
    const std::string image_file = gzip ? "images.idx.gz" : "images.idx";
    if (gzip) {
      gzFile f = gzopen(dir.filePath(QString::fromStdString(image_file)).toStdString().c_str(), "wb");
      QVERIFY(f);
      QCOMPARE(gzwrite(f, images.data(), unsigned(images.size())), int(images.size()));
      gzclose(f);
    } else {
      std::ofstream(dir.filePath("images.idx").toStdString(), std::ios::binary) << images;
    }
    std::ofstream(dir.filePath("labels.idx").toStdString(), std::ios::binary) << labels;
    Json j = small_project();
    j["loss"]["type"] = "softmax_cross_entropy";
    j["data"] = {{"type", "idx"}, {"train_images", image_file}, {"train_labels", "labels.idx"}};
    const QString path = write_project(dir, "truncated.shardlab.json", j);
    const CliResult check = run_cli({"check", path});
    QVERIFY2(check.exit_code == 1, qPrintable(describe(check)));
    VERIFY_CONTAINS(check.err, QString::fromStdString(image_file));
    const CliResult train = run_cli({"train", path, "--threads", "1", "--quiet"});
    QVERIFY2(train.exit_code == 1, qPrintable(describe(train)));
    QCOMPARE(error_lines(train).value(0), error_lines(check).value(0));
  }

  // The (784,) Input fed Fashion-MNIST's (28, 28) images: refused by check, not only at train.
  void aFlatInputOnFashionMnistIsRefusedByCheck() {
    if (!have_fashion_mnist()) QSKIP("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "flat.shardlab.json", flat_input_on_fashion_mnist());
    const CliResult check = run_cli({"check", path});
    QVERIFY2(check.exit_code == 1, qPrintable(describe(check)));
    VERIFY_CONTAINS(check.err, "flat.shardlab.json: data (train split): examples have shape (28, 28) but the Input node takes (784,)");
    const CliResult train = run_cli({"train", path, "--threads", "1", "--quiet"});
    QVERIFY2(train.exit_code == 1, qPrintable(describe(train)));
    QCOMPARE(error_lines(train).value(0), error_lines(check).value(0));
  }

  // One Dense of 400,000,000 features on 784 inputs: 4.6 TiB of parameters, gradients and Adam state. check names the need and
  // the largest array; train refuses the same way before allocating any of it (it would take hours
  // or be killed otherwise).
  void aModelLargerThanTheMachineIsRefusedByCheckAndTrain() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json j = small_project();
    j["graph"]["nodes"][0]["params"]["shape"] = {784};
    j["graph"]["nodes"][1]["params"]["features"] = 400000000;
    j["optimizer"] = {{"type", "adam"}, {"learning_rate", 0.001}};
    j["data"]["feature_shape"] = {784};
    j["data"]["target_shape"] = {400000000};
    j["data"]["examples"] = 8;
    const QString path = write_project(dir, "huge.shardlab.json", j);
    const CliResult check = run_cli({"check", path});
    QVERIFY2(check.exit_code == 1, qPrintable(describe(check)));
    const QString reason = error_lines(check).value(0);
    for (const char* e : {"the CPU device: the training step needs", "TiB but only", "the largest arrays: dense/kernel"})
      VERIFY_CONTAINS(reason, e);
    const CliResult train = run_cli({"train", path, "--threads", "1", "--quiet"}, 60000);
    QVERIFY2(train.exit_code == 1, qPrintable(describe(train)));
    // The capacity is the memory free at the moment, so only the need and the arrays must agree.
    const QString refused = error_lines(train).value(0);
    QCOMPARE(refused.section(" but only ", 0, 0), reason.section(" but only ", 0, 0));
    QCOMPARE(refused.section("the largest arrays: ", 1), reason.section("the largest arrays: ", 1));
  }

  // Every reason is reported, one line each, not only the first.
  void checkReportsEveryReason() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json j = small_project();
    j["mesh"] = {{"axes", {{"data", 2}}}};
    j["logical_axis_rules"] = Json::parse(R"([["batch", "dta"], ["classes", "modle"]])");
    j["data"]["feature_shape"] = {4, 4};
    const QString path = write_project(dir, "several.shardlab.json", j);
    const CliResult r = run_cli({"check", path});
    QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
    const QStringList lines = error_lines(r);
    QVERIFY2(lines.size() == 3, qPrintable(describe(r)));
    VERIFY_CONTAINS(lines[0], "has no axis 'dta'; did you mean 'data'?");
    VERIFY_CONTAINS(lines[1], "has no axis 'modle' (its axes: data)");
    VERIFY_CONTAINS(lines[2], "examples have shape (4, 4)");
    VERIFY_CONTAINS(r.err, lines[2] + "\n  fix: set the shape of Input 'x' to (4, 4), the data's examples\n");
  }

  // One cause, one line: an unset loss output, a rule naming an axis the mesh lacks.
  void oneCauseIsOneLine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json unset = small_project();
    unset["loss"]["output"] = "";
    CliResult r = run_cli({"check", write_project(dir, "unset.shardlab.json", unset)});
    QVERIFY2(r.exit_code == 1 && error_lines(r).size() == 1, qPrintable(describe(r)));
    VERIFY_CONTAINS(error_lines(r)[0], "unset.shardlab.json: loss.output: not set: name the node whose output the loss reads");
    Json rule = small_project();
    rule["mesh"] = {{"axes", {{"data", 2}}}};
    rule["logical_axis_rules"] = Json::parse(R"([["batch", "data"], ["classes", "nosuch"]])");
    r = run_cli({"check", write_project(dir, "rule.shardlab.json", rule)});
    QVERIFY2(r.exit_code == 1 && error_lines(r).size() == 1, qPrintable(describe(r)));
    VERIFY_CONTAINS(error_lines(r)[0], "has no axis 'nosuch'");
  }

  // --json carries the verdict: ok with the plan's size for a project that trains, the reasons for
  // one that would not (and exit 1).
  void checkJsonCarriesTheValidation() {
    CliResult r = run_cli({"check", "--json", kProjects + "/dot-relu-dot.shardlab.json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j = Json::parse(r.out.toStdString());
    QCOMPARE(j["validation"]["ok"].get<bool>(), true);
    QCOMPARE(j["validation"]["mesh"].get<std::string>(), std::string("data=2,model=4"));
    QCOMPARE(j["validation"]["devices"].get<int64_t>(), int64_t(8));
    QVERIFY(j["validation"]["bytes_per_device"].get<double>() > 0);
    QVERIFY(j["validation"]["capacity_per_device"].get<double>() > j["validation"]["bytes_per_device"].get<double>());
    QVERIFY(j["validation"]["errors"].empty());

    r = run_cli({"check", "--json", kProjects + "/dot-relu-dot.shardlab.json", "--mesh", "data=3,model=4"});
    QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
    j = Json::parse(r.out.toStdString());
    QCOMPARE(j["validation"]["ok"].get<bool>(), false);
    QVERIFY(!j["validation"]["errors"].empty());
    VERIFY_CONTAINS(QString::fromStdString(j["validation"]["errors"][0].get<std::string>()), "mesh axis data (3) does not divide");
  }

  // The overrides check takes are train's: a mesh that works passes and is named.
  void checkTakesTrainsMeshAndRules() {
    const CliResult r = run_cli({"check", kProjects + "/fashion-mlp.shardlab.json", "--mesh", "data=4", "--rules", "batch=data"});
    if (!have_fashion_mnist()) {
      QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
      VERIFY_CONTAINS(r.err, "dataset-fashion-mnist");
      QSKIP("Fashion-MNIST is not installed: checked that check names the package instead");
    }
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "train would run: mesh data=4");
  }
};

QTEST_MAIN(TestCliCheck)
#include "test_cli_check.moc"
