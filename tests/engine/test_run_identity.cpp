// A checkpoint directory belongs to one run: a fresh run into another run's directory is refused
// unless told to continue it or to start over (the old steps are moved, never deleted), a resume
// checks the model, two writers are stopped by the lock, and an unreadable newest step is reported
// instead of being skipped for an older one.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/run_identity.h"
#include "engine/runtime/trainer.h"
#include "engine/util/error.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using shardlab::testing::error_of;

namespace {

using Cli = shardlab::testing::CliResult;
inline Cli cli(const QStringList& args) { return shardlab::testing::run_cli(args); }

using shardlab::testing::kCli;

Json small_json(int features = 8) {
  Json j = Json::parse(R"({
    "format": "shardlab.project", "version": 1, "name": "small",
    "graph": {"nodes": [{"name": "x", "type": "Input", "params": {"shape": [16]}},
                        {"name": "dense", "type": "Dense", "params": {"features": 10}}],
              "edges": [{"from": "x.out", "to": "dense.in"}]},
    "loss": {"type": "mean_squared_error", "output": "dense"},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 2, "eval": false, "seed": 1}
  })");
  j["graph"]["nodes"][1]["params"]["features"] = features;
  j["data"]["target_shape"] = Json::array({features});
  return j;
}

project::Project small(int features = 8, const std::string& name = "small") {
  Json j = small_json(features);
  j["name"] = name;
  return project::parse_project(j.dump(), name + ".shardlab.json");
}

runtime::TrainOptions into(const QTemporaryDir& dir, int64_t steps = 2) {
  runtime::TrainOptions o;
  o.steps = steps;
  o.threads = 1;
  o.save_every = 1;
  o.keep = 5;
  o.checkpoint_dir = dir.path().toStdString();
  return o;
}

// Runs a trainer and returns its error, or "" when it finished.
QString train(const project::Project& p, const runtime::TrainOptions& o, runtime::TrainerListener* l = nullptr) {
  return error_of([&] {
    runtime::Trainer t(p, o);
    if (l) t.add_listener(l);
    t.run();
  });
}

struct Recorder : runtime::TrainerListener {
  std::vector<int64_t> steps;
  std::vector<std::string> warnings;
  void on_step(const runtime::StepEvent& e) override { steps.push_back(e.step); }
  void on_warning(const std::string& m) override { warnings.push_back(m); }
};

std::vector<std::string> step_names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (checkpoint::step_of(e.path()) >= 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

QString run_id(const QTemporaryDir& dir) { return QString::fromStdString(checkpoint::read_identity(dir.path().toStdString())->run_id); }


}  // namespace

class TestRunIdentity : public QObject {
  Q_OBJECT
 private slots:
  void firstRunRecordsItsIdentity() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir)), QString());
    const auto id = checkpoint::read_identity(dir.path().toStdString());
    QVERIFY(id.has_value());
    QCOMPARE(id->run_id.size(), size_t(16));
    QCOMPARE(id->project, std::string("small"));
    QCOMPARE(id->seed, uint64_t(1));
    QCOMPARE(id->model_hash, checkpoint::identity_of(small()).model_hash);
    QVERIFY(id->model_hash != checkpoint::identity_of(small(9)).model_hash);
  }

  void freshRunIntoAnotherRunsDirectoryIsRefused() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir)), QString());
    const QString id = run_id(dir);
    const QString err = train(small(), into(dir, 1));
    VERIFY_CONTAINS(err, dir.path());
    VERIFY_CONTAINS(err, "run " + id);
    VERIFY_CONTAINS(err, "newest step 2");
    VERIFY_CONTAINS(err, "--start-over");
    // Nothing written, nothing pruned: the other run's steps are as they were.
    QCOMPARE(step_names(dir.path().toStdString()), (std::vector<std::string>{"step_000001", "step_000002"}));
    QCOMPARE(run_id(dir), id);
  }

  void startOverMovesTheOldStepsAside() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir)), QString());
    const QString old = run_id(dir);
    runtime::TrainOptions o = into(dir, 1);
    o.start_over = true;
    Recorder r;
    QCOMPARE(train(small(), o, &r), QString());
    const fs::path aside = fs::path(dir.path().toStdString()) / ("old-run-" + old.toStdString());
    QCOMPARE(step_names(aside), (std::vector<std::string>{"step_000001", "step_000002"}));
    QVERIFY(fs::exists(aside / checkpoint::kRunFile));
    QCOMPARE(step_names(dir.path().toStdString()), (std::vector<std::string>{"step_000001"}));
    QVERIFY(run_id(dir) != old);
    QCOMPARE(r.steps, (std::vector<int64_t>{1}));
    QVERIFY(!r.warnings.empty());
    VERIFY_CONTAINS(QString::fromStdString(r.warnings.back()), "old-run-" + old);
  }

  void continueResumesTheRunInTheDirectory() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir)), QString());
    const QString id = run_id(dir);
    runtime::TrainOptions o = into(dir, 4);
    o.continue_run = true;
    Recorder r;
    QCOMPARE(train(small(), o, &r), QString());
    QCOMPARE(r.steps, (std::vector<int64_t>{3, 4}));
    QCOMPARE(run_id(dir), id);  // the same run goes on
    QVERIFY(r.warnings.empty());
  }

  void continueIntoAnEmptyDirectoryStartsARun() {
    QTemporaryDir dir;
    runtime::TrainOptions o = into(dir, 1);
    o.continue_run = true;
    QCOMPARE(train(small(), o), QString());
    QVERIFY(checkpoint::read_identity(dir.path().toStdString()).has_value());
  }

  void resumeWithAnotherModelIsRefusedNamingBoth() {
    QTemporaryDir dir;
    QCOMPARE(train(small(8, "first"), into(dir)), QString());
    runtime::TrainOptions o = into(dir, 4);
    o.resume = true;
    const QString err = train(small(9, "second"), o);
    VERIFY_CONTAINS(err, dir.path());
    VERIFY_CONTAINS(err, "'first'");
    VERIFY_CONTAINS(err, "'second'");
    VERIFY_CONTAINS(err, "model differs");
  }

  void resumeWithAnotherSeedOrLearningRateWarns() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir)), QString());
    Json j = small_json();
    j["optimizer"]["learning_rate"] = 0.5;
    const project::Project changed = project::parse_project(j.dump(), "small.shardlab.json");
    runtime::TrainOptions o = into(dir, 4);
    o.resume = true;
    o.seed = 7;
    Recorder r;
    QCOMPARE(train(changed, o, &r), QString());
    QCOMPARE(r.warnings.size(), size_t(2));
    VERIFY_CONTAINS(QString::fromStdString(r.warnings[0]), "seed 7");
    VERIFY_CONTAINS(QString::fromStdString(r.warnings[1]), "0.5");
  }

  // The lock is on the lock file's inode: a file renamed over .lock lets another run take a lock,
  // but the holder finds, before it deletes anything, that it no longer holds this directory's.
  void aLockFileReplacedUnderTheHolderIsNoticed() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    checkpoint::DirectoryLock first(root);
    first.check_held();
    std::ofstream(root / "imposter") << "1\n";
    fs::rename(root / "imposter", root / checkpoint::kLockFile);
    VERIFY_CONTAINS(testing::error_of([&] { first.check_held(); }), "was replaced or removed");
    checkpoint::DirectoryLock second(root);  // locks the new file
    second.check_held();
    fs::remove(root / checkpoint::kLockFile);
    VERIFY_CONTAINS(testing::error_of([&] { second.check_held(); }), "stopped before removing anything");
  }

  void aSecondWriterIsRefusedWhileTheLockIsHeld() {
    QTemporaryDir dir;
    QString err;
    {
      checkpoint::DirectoryLock held(dir.path().toStdString());  // as another run would
      err = train(small(), into(dir));
      VERIFY_CONTAINS(err, dir.path());
      VERIFY_CONTAINS(err, "pid " + QString::number(::getpid()));
      QVERIFY(!fs::exists(fs::path(dir.path().toStdString()) / "step_000001"));
      // Another process: the CLI, one error line, exit 1.
      const Cli r = cli({"train", QString(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json"), "--steps", "1",
                         "--checkpoint-dir", dir.path()});
      QCOMPARE(r.exit_code, 1);
      VERIFY_CONTAINS(r.err, "pid " + QString::number(::getpid()));
      QCOMPARE(r.err.trimmed().count('\n'), 0);
    }
    QCOMPARE(train(small(), into(dir)), QString());  // released with its holder
  }

  void aKilledWritersLockIsReleased() {
    QTemporaryDir dir;
    Json j = small_json();
    j["training"]["steps"] = 1000000;
    const QString project = dir.filePath("p.shardlab.json");
    std::ofstream(project.toStdString()) << j.dump();
    const QString root = dir.filePath("ckpt");
    QProcess p;
    p.start(kCli, {"train", project, "--checkpoint-dir", root, "--quiet", "--threads", "1"});
    QVERIFY(p.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(fs::exists(fs::path(root.toStdString()) / checkpoint::kLockFile), 30000);
    QTest::qWait(300);
    runtime::TrainOptions o;
    o.steps = 1;
    o.checkpoint_dir = root.toStdString();
    o.continue_run = true;
    VERIFY_CONTAINS(train(small(), o), "pid " + QString::number(p.processId()));
    p.kill();
    p.waitForFinished();
    QCOMPARE(train(small(), o), QString());
  }

  // run.json is read as every loader reads: a FIFO in its place is refused, not waited on, and a
  // run_id that is no id (it names old-run-<id>/) is refused, quoted cut short.
  void aHostileRunFileIsRefusedNamingIt() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    QCOMPARE(::mkfifo((root / checkpoint::kRunFile).c_str(), 0600), 0);
    QString msg = error_of([&] { checkpoint::read_identity(root); });
    VERIFY_CONTAINS(msg, QString::fromStdString((root / checkpoint::kRunFile).string()) + ": is a FIFO");
    VERIFY_CONTAINS(msg, "move it aside");

    QTemporaryDir dir2;
    const fs::path root2 = dir2.path().toStdString();
    QCOMPARE(train(small(), into(dir2)), QString());
    Json id = Json::parse(std::ifstream(root2 / checkpoint::kRunFile));
    id["run_id"] = std::string(100000, 'r');
    std::ofstream(root2 / checkpoint::kRunFile) << id.dump();
    msg = train(small(), into(dir2));
    VERIFY_CONTAINS(msg, QString::fromStdString((root2 / checkpoint::kRunFile).string()) + ": run_id: 'rrr");
    VERIFY_CONTAINS(msg, "... (100000 bytes)' is not a run id");
    QVERIFY2(msg.size() < 1000, qPrintable(msg.left(1200)));
  }

  void unreadableNewestStepIsListedAndRefusedByResume() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir, 3)), QString());
    const fs::path newest = fs::path(dir.path().toStdString()) / "step_000003";
    std::ofstream(newest / checkpoint::kMetaFile, std::ios::trunc) << "{ not json";
    const auto listed = checkpoint::list(dir.path().toStdString());
    QCOMPARE(listed.size(), size_t(3));
    QVERIFY(listed[1].error.empty());
    VERIFY_CONTAINS(QString::fromStdString(listed[2].error), "checkpoint.json");

    runtime::TrainOptions o = into(dir, 5);
    o.resume = true;
    const QString err = train(small(), o);
    VERIFY_CONTAINS(err, QString::fromStdString(newest.string()));
    VERIFY_CONTAINS(err, "cannot be read");
    VERIFY_CONTAINS(err, "resume_from");
    VERIFY_CONTAINS(err, "step_000002");
    // The older step named there continues the run.
    o.resume = false;
    o.resume_from = (fs::path(dir.path().toStdString()) / "step_000002").string();
    Recorder r;
    QCOMPARE(train(small(), o, &r), QString());
    QCOMPARE(r.steps.front(), int64_t(3));
  }

  void aStepWithoutTensorsIsUnreadable() {
    QTemporaryDir dir;
    QCOMPARE(train(small(), into(dir, 2)), QString());
    const fs::path newest = fs::path(dir.path().toStdString()) / "step_000002";
    fs::remove(newest / checkpoint::kTensorsFile);
    runtime::TrainOptions o = into(dir, 4);
    o.resume = true;
    const QString err = train(small(), o);
    VERIFY_CONTAINS(err, QString::fromStdString(newest.string()));
    VERIFY_CONTAINS(err, "model.safetensors");
  }

  // checkpoint.json's project is what ran: every override (the CLI's flags, the Training tab's
  // form) is in it, and it loads back as a project that trains the same way.
  void checkpointRecordsTheSettingsThatRan() {
    QTemporaryDir dir;
    runtime::TrainOptions o = into(dir, 3);
    o.batch_size = 4;
    o.seed = 9;
    o.learning_rate = 0.05;
    o.mesh = "data=2";
    o.rules = "batch=data";
    QCOMPARE(train(small(), o), QString());
    const Json meta = checkpoint::load(checkpoint::latest(dir.path().toStdString())->string()).meta;
    const project::Project ran = project::parse_project(meta.at("project").dump(), "ran.shardlab.json");
    QCOMPARE(ran.training.batch_size, int64_t(4));
    QCOMPARE(ran.training.seed, uint64_t(9));
    QCOMPARE(ran.training.steps, int64_t(3));
    QCOMPARE(ran.optimizer.learning_rate.value, 0.05);
    QCOMPARE(meta.at("project").at("mesh").dump(), std::string(R"({"axes":{"data":2}})"));
    QCOMPARE(meta.at("project").at("logical_axis_rules").dump(), std::string(R"([["batch","data"]])"));
    // The run's identity records the optimizer it ran with too.
    QCOMPARE(checkpoint::read_identity(dir.path().toStdString())->optimizer.at("learning_rate").get<double>(), 0.05);

    // A warmup-cosine schedule keeps its shape; the override is its peak.
    QTemporaryDir dir2;
    Json j = small_json();
    j["optimizer"]["learning_rate"] = Json::parse(R"({"schedule": "warmup_cosine_decay", "peak_value": 0.1, "warmup_steps": 1, "decay_steps": 4})");
    runtime::TrainOptions o2 = into(dir2, 2);
    o2.learning_rate = 0.02;
    QCOMPARE(train(project::parse_project(j.dump(), "cosine.shardlab.json"), o2), QString());
    const Json meta2 = checkpoint::load(checkpoint::latest(dir2.path().toStdString())->string()).meta;
    const Json& lr = meta2.at("project").at("optimizer").at("learning_rate");
    QCOMPARE(lr.at("peak_value").get<double>(), 0.02);
    QCOMPARE(lr.at("decay_steps").get<int>(), 4);

    // The CLI's --lr lands in the same place.
    const QString file = dir2.filePath("p.shardlab.json");
    std::ofstream(file.toStdString()) << small_json().dump();
    const QString root = dir2.filePath("cli");
    const Cli r = cli({"train", file, "--checkpoint-dir", root, "--quiet", "--lr", "0.125", "--steps", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const Json meta3 = checkpoint::load(checkpoint::latest(root.toStdString())->string()).meta;
    QCOMPARE(meta3.at("project").at("optimizer").at("learning_rate").get<double>(), 0.125);
    QCOMPARE(meta3.at("project").at("training").at("steps").get<int>(), 1);
  }

  void cliRefusesThenContinuesOrStartsOver() {
    QTemporaryDir dir;
    const QString project = dir.filePath("p.shardlab.json");
    std::ofstream(project.toStdString()) << small_json().dump();
    const QString root = dir.filePath("ckpt");
    QCOMPARE(cli({"train", project, "--checkpoint-dir", root, "--quiet"}).exit_code, 0);
    Cli r = cli({"train", project, "--checkpoint-dir", root, "--quiet"});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, root);
    VERIFY_CONTAINS(r.err, "newest step 2");
    QCOMPARE(r.err.trimmed().count('\n'), 0);
    r = cli({"train", project, "--checkpoint-dir", root, "--quiet", "--continue", "--steps", "3"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(checkpoint::latest(root.toStdString())->filename() == "step_000003");
    r = cli({"train", project, "--checkpoint-dir", root, "--quiet", "--start-over", "--steps", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    VERIFY_CONTAINS(r.err, "warning: ");
    VERIFY_CONTAINS(r.err, "old-run-");
    QVERIFY(checkpoint::latest(root.toStdString())->filename() == "step_000001");
    r = cli({"train", project, "--checkpoint-dir", root, "--continue", "--start-over"});
    QVERIFY(r.exit_code != 0 && r.exit_code < 128);
  }
};

QTEST_GUILESS_MAIN(TestRunIdentity)
#include "test_run_identity.moc"
