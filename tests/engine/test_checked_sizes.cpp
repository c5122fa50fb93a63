// Sizes, counts and products from a user (mesh sizes, shapes, the batch size, Repeat counts,
// --max-shard-size) are checked: an overflow is one error line naming the field and exit 1, never
// a crash, a wrapped number or a run on the wrong mesh.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "engine/sharding/mesh.h"
#include "engine/util/checked.h"
#include "engine/util/error.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using Json = nlohmann::ordered_json;
using shardlab::testing::error_of;

namespace {

using Result = shardlab::testing::CliResult;
using shardlab::testing::run_cli;

using shardlab::testing::kCli;
const QString kMlp = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json");
const QString kRepeat = QStringLiteral(SHARDLAB_SOURCE_DIR "/tests/reference/dot-relu-dot-small.shardlab.json");



// Exit 1 with one error line holding every fragment.
void verify_refused(const Result& r, const QStringList& fragments) {
  QVERIFY2(r.exit_code == 1, qPrintable(QString("exit %1: %2").arg(r.exit_code).arg(r.err)));
  QCOMPARE(r.err.trimmed().count('\n'), 0);
  VERIFY_CONTAINS(r.err, "shardlab-cli: error: ");
  for (const QString& f : fragments) VERIFY_CONTAINS(r.err, f);
}

Json small_json() {
  return Json::parse(R"({
    "format": "shardlab.project", "version": 1, "name": "small",
    "graph": {"nodes": [{"name": "x", "type": "Input", "params": {"shape": [16]}},
                        {"name": "dense", "type": "Dense", "params": {"features": 10}}],
              "edges": [{"from": "x.out", "to": "dense.in"}]},
    "loss": {"type": "mean_squared_error", "output": "dense"},
    "optimizer": {"type": "sgd", "learning_rate": 0.1},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 1, "eval": false}
  })");
}

QString write(const QTemporaryDir& dir, const Json& j) {
  const QString path = dir.filePath("p.shardlab.json");
  std::ofstream(path.toStdString()) << j.dump(2);
  return path;
}

}  // namespace

class TestCheckedSizes : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + " is not built")); }

  void checkedArithmeticReportsOverflow() {
    QCOMPARE(util::mul<int64_t>(int64_t(1) << 31, int64_t(1) << 31), std::optional<int64_t>(int64_t(1) << 62));
    QVERIFY(!util::mul<int64_t>(int64_t(1) << 32, int64_t(1) << 32));
    QVERIFY(!util::add<int64_t>(INT64_MAX, 1));
    QVERIFY(!util::product({65536, 65536, 65536, 65536}));
    QVERIFY(!util::product({4, -1}));
    QCOMPARE(util::product({}), std::optional<int64_t>(1));
    VERIFY_CONTAINS(error_of([] { util::mul_or_throw(int64_t(1) << 40, int64_t(1) << 40, "batch_size"); }), "batch_size: ");
  }

  void meshDeviceCountOverflowIsAnError() {
    const QString e = error_of([] { sharding::parse_mesh("data=4294967296,model=4294967296"); });
    VERIFY_CONTAINS(e, "mesh data=4294967296,model=4294967296");
    VERIFY_CONTAINS(e, "device count");
    VERIFY_CONTAINS(error_of([] { sharding::parse_mesh("data=65536,model=65536,x=65536,y=65536"); }), "device count");
    VERIFY_CONTAINS(error_of([] { sharding::parse_mesh("data=99999999999999999999"); }), "size of 'data' is too large");
    QCOMPARE(sharding::parse_mesh("data=2,model=4").device_count(), int64_t(8));
  }

  void shardWithAnOverflowingMeshExitsWithOneLine() {
    verify_refused(run_cli({"shard", kMlp, "--mesh", "data=4294967296,model=4294967296"}), {"mesh", "device count"});
  }

  void trainOnAMeshOfTwoToThe64DevicesIsRefused() {
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--mesh", "data=65536,model=65536,x=65536,y=65536"}),
                   {"mesh", "device count"});
  }

  void hugeFeaturesAreAnErrorNotANegativeSize() {
    QTemporaryDir dir;
    Json j = small_json();
    j["graph"]["nodes"][1]["params"]["features"] = int64_t(1000000000000000000);
    const Result r = run_cli({"check", write(dir, j)});
    verify_refused(r, {"node 'dense'", "2^48 elements"});
    VERIFY_LACKS(r.out + r.err, "-18");
  }

  void hugeInputShapeIsAnError() {
    QTemporaryDir dir;
    Json j = small_json();
    j["graph"]["nodes"][0]["params"]["shape"] = Json::array({int64_t(1) << 40, int64_t(1) << 40});
    verify_refused(run_cli({"check", write(dir, j)}), {"node 'x'", "output", "overflows"});
  }

  void hugeBatchSizeIsAnErrorNamingIt() {
    verify_refused(run_cli({"check", kMlp, "--batch-size", "1000000000000000000"}), {"batch_size"});
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--batch-size", "1000000000000000000"}), {"batch_size"});
  }

  void hugeRepeatCountIsAnErrorNamingIt() {
    QTemporaryDir dir;
    std::ifstream in(kRepeat.toStdString());
    Json j = Json::parse(in);
    for (Json& n : j["graph"]["nodes"])
      if (n["type"] == "Repeat") n["params"]["count"] = int64_t(1000000000);
    verify_refused(run_cli({"check", write(dir, j)}), {"count: 1000000000", "unrolled"});
  }

  void maxShardSizeOf401DigitsSaysWhatIsWrong() {
    QTemporaryDir dir;
    const QString digits = QString("9").repeated(401);
    const Result r = run_cli({"train", kMlp, "--steps", "1", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", digits});
    verify_refused(r, {"--max-shard-size", "too large"});
    VERIFY_LACKS(r.err, "stod");
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", "0"}),
                   {"--max-shard-size", "at least one byte"});
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", "12XB"}),
                   {"--max-shard-size: size '12XB'", "unknown unit"});
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", "0.5B"}),
                   {"a fraction of a byte"});
    verify_refused(run_cli({"train", kMlp, "--steps", "1", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", "10000000TB"}),
                   {"too large"});
  }

  void maxShardSizeTakesUnits_data() {
    QTest::addColumn<QString>("size");
    QTest::newRow("GB") << "2GB";
    QTest::newRow("MB") << "500MB";
    QTest::newRow("GiB") << "1GiB";
    QTest::newRow("fraction") << "1.5gb";
  }
  void maxShardSizeTakesUnits() {
    QFETCH(QString, size);
    QTemporaryDir dir;
    const Result r = run_cli({"train", write(dir, small_json()), "--quiet", "--checkpoint-dir", dir.filePath("c"), "--max-shard-size", size});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestCheckedSizes)
#include "test_checked_sizes.moc"
