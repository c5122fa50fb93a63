// A checkpointing run killed at every file-system call it makes in its checkpoint directory
// (tests/engine/fault_injection_shim.c, loaded with LD_PRELOAD into shardlab-cli), into a fresh
// directory (one file a save, or shards and their index) and over steps that already exist. After each kill, before anything else touches the
// directory: the newest committed step is never older than at the previous kill point (nor than
// what was committed before the run), and it loads; then `--continue` finishes the run and its
// losses are bit for bit those of an uninterrupted run.
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/util/error.h"

using namespace shardlab;
using testing::run_cli;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr int kKilledStatus = 86;  // what the shim exits with
constexpr int kSteps = 6;

// A small Adam MLP on random data that wraps its 20 examples every 2.5 steps, so a resume must
// restore parameters, optimizer state and the data position to reproduce the losses.
const char* kProject = R"({
  "format": "shardlab.project", "version": 1, "name": "kill-test",
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [12]}},
      {"name": "d1", "type": "Dense", "params": {"features": 9}}, {"name": "r1", "type": "ReLU"},
      {"name": "d2", "type": "Dense", "params": {"features": 3}}],
    "edges": [{"from": "x.out", "to": "d1.in"}, {"from": "d1.out", "to": "r1.in"}, {"from": "r1.out", "to": "d2.in"}]},
  "loss": {"type": "mean_squared_error", "output": "d2"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "normal", "feature_shape": [12], "target_shape": [3], "examples": 20},
  "training": {"batch_size": 8, "steps": 6, "eval": false}
})";

QString describe(const testing::CliResult& r) {
  return QString("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(r.exit_code).arg(r.out, r.err);
}

// step -> loss of every step line of a JSONL log.
std::map<int64_t, double> losses(const QString& log) {
  std::map<int64_t, double> out;
  std::ifstream in(log.toStdString());
  std::string line;
  while (std::getline(in, line)) {
    const Json e = Json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "step") out[e["step"].get<int64_t>()] = e["loss"].get<double>();
  }
  return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

class TestCheckpointKill : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString project_;
  std::map<int64_t, double> reference_;  // an uninterrupted run's losses, steps 1..kSteps
  bool can_swap_ = true;                 // whether the file system here has renameat2(RENAME_EXCHANGE)

  QString path(const QString& name) const { return tmp_.filePath(name); }

  QStringList train_args(const QString& ck, int steps = kSteps) const {
    return {"train", project_, "--steps", QString::number(steps), "--threads", "1", "--quiet", "--checkpoint-dir", ck};
  }

  // Kills `args` (a run writing into `ck`, which `setup` prepares afresh each time) at kill point
  // 1, 2, ... until the run completes; `floor` is the newest step committed before the run (-1:
  // none). Returns the number of kill points, -1 after a failure.
  int kill_at_every_point(const std::function<void(const fs::path&)>& setup, const QStringList& args, const QString& ck,
                          int64_t floor) {
    const fs::path root = ck.toStdString();
    int64_t newest_before = floor;
    for (int n = 1;; ++n) {
      std::error_code ec;
      fs::remove_all(root, ec);
      setup(root);
      QProcessEnvironment env;
      env.insert("LD_PRELOAD", SHARDLAB_FAULT_SHIM);
      env.insert("SHARDLAB_FAULT_DIR", QString::fromStdString(fs::absolute(root).string()));
      env.insert("SHARDLAB_FAULT_AT", QString::number(n));
      const testing::CliResult killed = run_cli(args, 120000, env);
      if (killed.exit_code == 0) {
        if (n == 1) QTest::qFail("the shim never fired: is it loaded?", __FILE__, __LINE__);
        return n - 1;
      }
      if (n > 10000) {
        QTest::qFail("the run never completes", __FILE__, __LINE__);
        return -1;
      }
      const QString at = QString("kill point %1: ").arg(n);
      if (killed.exit_code != kKilledStatus) {
        QTest::qFail(qPrintable(at + "the run failed instead of being killed: " + describe(killed)), __FILE__, __LINE__);
        return -1;
      }

      // As the kill left it: the newest committed step is there, under its own name, and loads.
      // (Where directories cannot be swapped, it may lie moved aside, listed for the next run to
      // restore: checkpoint::list shows it.)
      auto steps = checkpoint::committed(root);
      if (!can_swap_)
        for (const checkpoint::Leftover& l : checkpoint::leftovers(root))
          if (l.restorable) steps.push_back({l.step, l.path});
      std::sort(steps.begin(), steps.end());
      const int64_t newest = steps.empty() ? -1 : steps.back().first;
      if (newest < newest_before) {
        QTest::qFail(qPrintable(at + QString("the newest committed step is %1, but %2 was committed before").arg(newest).arg(newest_before)),
                     __FILE__, __LINE__);
        return -1;
      }
      newest_before = newest;
      if (newest >= 0) {
        try {
          const checkpoint::Loaded c = checkpoint::load(steps.back().second);
          if (c.step != newest) throw Error("loaded step " + std::to_string(c.step));
        } catch (const std::exception& e) {
          QTest::qFail(qPrintable(at + "the newest committed step does not load: " + e.what()), __FILE__, __LINE__);
          return -1;
        }
      }

      // Continuing reproduces the uninterrupted run from there on, bit for bit, and clears the leftovers.
      const QString log = path("resumed.jsonl");
      const testing::CliResult resumed = run_cli(train_args(ck) + QStringList{"--continue", "--log", log});
      if (resumed.exit_code != 0) {
        QTest::qFail(qPrintable(at + "--continue failed: " + describe(resumed)), __FILE__, __LINE__);
        return -1;
      }
      const std::map<int64_t, double> got = losses(log);
      std::map<int64_t, double> want(reference_.upper_bound(std::max<int64_t>(newest, 0)), reference_.end());
      bool equal = got.size() == want.size();
      for (auto [s, l] : want) equal = equal && got.count(s) && same_bits(got.at(s), l);
      if (!equal) {
        QTest::qFail(qPrintable(at + QString("resumed from step %1, the losses differ from the uninterrupted run's").arg(newest)),
                     __FILE__, __LINE__);
        return -1;
      }
      if (!checkpoint::leftovers(root).empty()) {
        QTest::qFail(qPrintable(at + "--continue left " + QString::fromStdString(checkpoint::leftovers(root)[0].path.string())),
                     __FILE__, __LINE__);
        return -1;
      }
    }
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    const fs::path a = path("swap-a").toStdString(), b = path("swap-b").toStdString();
    fs::create_directory(a);
    fs::create_directory(b);
    can_swap_ = ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
    if (!can_swap_)
      qInfo("this file system cannot swap directories: a replaced step may lie moved aside after a kill (the weaker guarantee)");
    project_ = path("kill-test.shardlab.json");
    std::ofstream(project_.toStdString()) << kProject;
    const testing::CliResult r = run_cli(train_args(path("reference")) + QStringList{"--save-every", "2", "--log", path("reference.jsonl")});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    reference_ = losses(path("reference.jsonl"));
    QCOMPARE(int(reference_.size()), kSteps);
  }

  void killedFreshRunNeverLosesACommittedStep() {
    const QString ck = path("fresh");
    QElapsedTimer t;
    t.start();
    const int points = kill_at_every_point([](const fs::path&) {}, train_args(ck) + QStringList{"--save-every", "2", "--keep", "2"}, ck, -1);
    if (points > 0) qInfo("fresh directory: %d kill points in %.1f s", points, t.elapsed() / 1000.0);
  }

  // The same with each save split over safetensors shards and their index (sharded.h).
  void killedShardedRunNeverLosesACommittedStep() {
    const QString ck = path("sharded");
    QElapsedTimer t;
    t.start();
    const int points = kill_at_every_point(
        [](const fs::path&) {}, train_args(ck) + QStringList{"--save-every", "3", "--keep", "1", "--max-shard-size", "200"}, ck, -1);
    if (points > 0) qInfo("sharded saves: %d kill points in %.1f s", points, t.elapsed() / 1000.0);
  }

  // A second run from step 2 saves steps 4 (which exists) and 6 again: the committed step 4 must
  // stay committed until its replacement is.
  void killedReplacingRunNeverLosesTheNewestStep() {
    const QString base = path("base");
    const testing::CliResult r = run_cli(train_args(base, 4) + QStringList{"--save-every", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY(fs::exists(checkpoint::step_dir(base.toStdString(), 4)));
    const QString ck = path("replacing");
    auto copy_base = [&](const fs::path& root) { fs::copy(base.toStdString(), root, fs::copy_options::recursive); };
    const QString from = QString::fromStdString(checkpoint::step_dir(ck.toStdString(), 2).string());
    QElapsedTimer t;
    t.start();
    const int points =
        kill_at_every_point(copy_base, train_args(ck) + QStringList{"--save-every", "2", "--keep", "2", "--resume-from", from}, ck, 4);
    if (points > 0) qInfo("replacing existing steps: %d kill points in %.1f s", points, t.elapsed() / 1000.0);
  }

  // What a writer killed mid-replacement leaves on a file system that cannot swap two directories:
  // the committed step moved aside. The next run puts it back, says so, and continues from it.
  void aRunRestoresADisplacedStep() {
    const QString ck = path("displaced");
    const testing::CliResult first = run_cli(train_args(ck, 4) + QStringList{"--save-every", "2"});
    QVERIFY2(first.exit_code == 0, qPrintable(describe(first)));
    const fs::path step4 = checkpoint::step_dir(ck.toStdString(), 4);
    fs::path aside = step4;
    aside += ".tmp-old-999999999";
    fs::rename(step4, aside);

    // A reader shows the older committed step and names the newer one lying aside.
    const testing::CliResult inspect = run_cli({"inspect", ck});
    QVERIFY2(inspect.exit_code == 0, qPrintable(describe(inspect)));
    QVERIFY2(inspect.err.contains(QString::fromStdString(aside.string())) && inspect.err.contains("puts it back"),
             qPrintable(describe(inspect)));

    const testing::CliResult r = run_cli(train_args(ck) + QStringList{"--continue", "--log", path("displaced.jsonl")});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("restored step 4"), qPrintable(describe(r)));
    const std::map<int64_t, double> got = losses(path("displaced.jsonl"));
    QCOMPARE(int(got.size()), 2);
    for (int64_t s : {5, 6}) QVERIFY2(got.count(s) && same_bits(got.at(s), reference_.at(s)), qPrintable(QString("step %1").arg(s)));
    QVERIFY(!fs::exists(aside));
  }
};

QTEST_GUILESS_MAIN(TestCheckpointKill)
#include "test_checkpoint_kill.moc"
