// Runs over several processes, as a user starts them: real `mpirun` launching shardlab-cli (and the
// collectives check) as K processes on this machine. Each run is compared with one process on the
// same global mesh: the same losses, the same checkpoints, and a clear end when a process dies.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <algorithm>
#include <csignal>
#include <cmath>

#include "tests/engine/cli_runner.h"
#include "tests/engine/mpi_runner.h"

using shardlab::testing::kCli;
using shardlab::testing::Launch;
using shardlab::testing::launcher_flags;
using shardlab::testing::run_cli;
using shardlab::testing::start_record;

namespace {

const QString kProjects = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects");
const QString kProject = kProjects + "/fashion-mlp.shardlab.json";

Launch mpirun(int processes, const QString& program, const QStringList& args, int timeout_ms = 180000) {
  return shardlab::testing::run_mpirun(SHARDLAB_MPIEXEC, processes, program, args, timeout_ms);
}

QVector<double> losses(const QString& log) { return shardlab::testing::logged_losses(log); }

QByteArray read_file(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void compare_losses(const QVector<double>& got, const QVector<double>& want) {
  QVERIFY2(!want.isEmpty(), "the one-process run logged no loss");
  QCOMPARE(got.size(), want.size());
  for (int i = 0; i < want.size(); ++i)
    QVERIFY2(got[i] == want[i],  // bit for bit: the same sums in the same order (README)
             qPrintable(QString("loss %1: %2 over processes, %3 in one").arg(i).arg(got[i], 0, 'g', 17).arg(want[i], 0, 'g', 17)));
}

// The pids of mpirun's children (the run's processes), in start order.
QList<qint64> children_of(qint64 parent) {
  QList<qint64> pids;
  for (const QString& e : QDir("/proc").entryList(QDir::Dirs)) {
    bool ok = false;
    const qint64 pid = e.toLongLong(&ok);
    if (!ok) continue;
    QFile stat("/proc/" + e + "/stat");
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QString s = QString::fromUtf8(stat.readAll());
    const QStringList f = s.mid(s.lastIndexOf(')') + 2).split(' ');
    if (f.size() > 1 && f[1].toLongLong() == parent) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

// A 2-process run of many steps saving every 10, started and followed until it has logged 20.
void startLongRun(QProcess& p, const QString& ck, const QString& log) {
  p.setProgram(SHARDLAB_MPIEXEC);
  p.setArguments(launcher_flags(2) + QStringList{kCli, "train", kProject, "--steps", "100000", "--mesh", "data=2", "--rules",
                                                 "batch=data", "--quiet", "--checkpoint-dir", ck, "--save-every", "10", "--log", log});
  p.start();
  QVERIFY(p.waitForStarted(10000));
  QElapsedTimer wait;
  wait.start();
  while (losses(log).size() < 20 && wait.elapsed() < 60000) QThread::msleep(50);
  QVERIFY2(losses(log).size() >= 20, "the run logged no steps within a minute");
}

}  // namespace

class TestMpiRuns : public QObject {
  Q_OBJECT

 private slots:
  void collectivesOverProcessesEqualOneProcess_data() {
    QTest::addColumn<int>("processes");
    QTest::newRow("2 processes") << 2;
    QTest::newRow("3 processes") << 3;
  }
  void collectivesOverProcessesEqualOneProcess() {
    QFETCH(int, processes);
    const Launch r = mpirun(processes, SHARDLAB_COLLECTIVES_CHECK, {});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("ok: 36 collective cases bitwise equal"), qPrintable(r.out));
    QVERIFY2(r.out.contains(QString("ok: buffered messages between every pair of %1 devices, taken out of order").arg(2 * processes)),
             qPrintable(r.out));
  }

  // The transport the suite asked for is the one the processes use: shared memory by default,
  // TCP alone when SHARDLAB_MPI_TRANSPORT=tcp (CTest's test_mpi_runs_tcp), as between two hosts.
  void theProcessesTalkOverTheTransportAskedFor() {
    QProcess p;
    p.setProgram(SHARDLAB_MPIEXEC);
    p.setArguments(launcher_flags(2) + QStringList{"--mca", "btl_base_verbose", "30", SHARDLAB_COLLECTIVES_CHECK});
    p.start();
    QVERIFY(p.waitForFinished(120000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0 && out.contains("bitwise equal"), qPrintable(out.right(3000)));
    const int tcp = out.count("select: init of component tcp returned success");
    const int shared = out.count("select: init of component vader returned success");
    if (shardlab::testing::over_tcp()) {
      QCOMPARE(tcp, 2);
      QCOMPARE(shared, 0);
    } else {
      QCOMPARE(shared, 2);
    }
  }

  void lossesEqualOneProcessOnTheSameMesh_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<int>("microbatches");
    // Processes x devices each: 2x1 and 4x1 data parallel; 2x2 and 4x2 2-D; FSDP over 4x1 and 2x2;
    // and microbatches, whose rows each process loads its part of.
    QTest::newRow("2x1 data") << 2 << "data=2" << "batch=data" << 1;
    QTest::newRow("4x1 data") << 4 << "data=4" << "batch=data" << 1;
    QTest::newRow("2x2 2-D") << 2 << "data=2,model=2" << "batch=data,mlp=model" << 1;
    QTest::newRow("4x2 2-D") << 4 << "data=4,model=2" << "batch=data,mlp=model" << 1;
    QTest::newRow("4x1 fsdp") << 4 << "data=4" << "batch=data,embed=data" << 1;
    QTest::newRow("2x2 fsdp") << 2 << "data=4" << "batch=data,embed=data" << 1;
    QTest::newRow("2x1 data, 4 microbatches") << 2 << "data=2" << "batch=data" << 4;
  }
  void lossesEqualOneProcessOnTheSameMesh() {
    QFETCH(int, processes);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(int, microbatches);
    QTemporaryDir dir;
    const QStringList args{"train", kProject, "--steps", "5", "--mesh", mesh, "--rules", rules, "--quiet",
                           "--accumulate", QString::number(microbatches)};
    const auto one = run_cli(args + QStringList{"--threads", "2", "--log", dir.filePath("one.jsonl")});
    QVERIFY2(one.exit_code == 0, qPrintable(one.err));
    const Launch many = mpirun(processes, kCli, args + QStringList{"--log", dir.filePath("many.jsonl")});
    QVERIFY2(many.exit_code == 0, qPrintable(many.out + many.err));
    compare_losses(losses(dir.filePath("many.jsonl")), losses(dir.filePath("one.jsonl")));
    // Process 0 alone wrote the log and printed the result.
    const QJsonObject start = start_record(dir.filePath("many.jsonl"));
    QCOMPARE(start["processes"].toInt(), processes);
    QCOMPARE(start["mesh"].toString(), mesh);
    QCOMPARE(many.out.count("eval after step 5"), 1);
  }

  // Pipeline stages over processes: activations and gradients cross between stages as MPI
  // messages (MpiMailbox), the loss comes from the last stage's process, each parameter outside the
  // Repeat is saved by the process of the stage that updates it. tests/data/pipeline.shardlab.json
  // has an embedding on the first stage and a head on the last around 8 residual blocks.
  void pipelineStagesOverProcessesEqualOneProcess_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("schedule");
    QTest::newRow("2 stages on 2 processes, gpipe") << 2 << "stage=2" << "layer=stage" << "gpipe";
    QTest::newRow("4 stages on 4 processes, 1f1b") << 4 << "stage=4" << "layer=stage" << "1f1b";
    QTest::newRow("4 stages on 4 processes, gpipe") << 4 << "stage=4" << "layer=stage" << "gpipe";
    QTest::newRow("2 stages x data 2 on 2 processes, 1f1b") << 2 << "stage=2,data=2" << "layer=stage,batch=data" << "1f1b";
    QTest::newRow("2 stages x data 2 on 4 processes, 1f1b") << 4 << "stage=2,data=2" << "layer=stage,batch=data" << "1f1b";
  }
  void pipelineStagesOverProcessesEqualOneProcess() {
    QFETCH(int, processes);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(QString, schedule);
    QTemporaryDir dir;
    const QString project = SHARDLAB_SOURCE_DIR "/tests/data/pipeline.shardlab.json";
    const QStringList args{"train", project, "--steps", "4", "--mesh", mesh, "--rules", rules, "--quiet",
                           "--microbatches", "4", "--pipeline-schedule", schedule};
    const QString one_ck = dir.filePath("one"), many_ck = dir.filePath("many");
    const auto one = run_cli(args + QStringList{"--threads", "2", "--log", dir.filePath("one.jsonl"), "--checkpoint-dir", one_ck});
    QVERIFY2(one.exit_code == 0, qPrintable(one.err));
    const Launch many = mpirun(processes, kCli, args + QStringList{"--log", dir.filePath("many.jsonl"), "--checkpoint-dir", many_ck});
    QVERIFY2(many.exit_code == 0, qPrintable(many.out + many.err));
    const QVector<double> want = losses(dir.filePath("one.jsonl"));
    QCOMPARE(want.size(), 4);
    compare_losses(losses(dir.filePath("many.jsonl")), want);
    QCOMPARE(start_record(dir.filePath("many.jsonl"))["processes"].toInt(), processes);
    // The parameters after the last step, assembled from each process's blocks, are the one
    // process's bit for bit: the embedding from the first stage's process, the head from the last's.
    for (const QString& ck : {one_ck, many_ck}) {
      const auto exported = run_cli({"export", ck, "--out", ck + "/params.safetensors"});
      QVERIFY2(exported.exit_code == 0, qPrintable(exported.err));
    }
    const QByteArray a = read_file(one_ck + "/params.safetensors"), b = read_file(many_ck + "/params.safetensors");
    QVERIFY(!a.isEmpty());
    QVERIFY2(a == b, "the parameters saved over processes differ from the one-process run's");
  }

  void checkpointOfFourProcessesResumesOnFourTwoAndOne() {
    QTemporaryDir dir;
    const QStringList common{"train", kProject, "--mesh", "data=4", "--rules", "batch=data,embed=data", "--quiet"};
    const auto whole = run_cli(common + QStringList{"--steps", "8", "--threads", "2", "--log", dir.filePath("whole.jsonl")});
    QVERIFY2(whole.exit_code == 0, qPrintable(whole.err));
    const QVector<double> want = losses(dir.filePath("whole.jsonl"));
    QCOMPARE(want.size(), 9);  // 8 steps and the final evaluation
    const QString first = dir.filePath("four");
    const Launch saved = mpirun(4, kCli, common + QStringList{"--steps", "5", "--checkpoint-dir", first});
    QVERIFY2(saved.exit_code == 0, qPrintable(saved.out + saved.err));
    QVERIFY(QDir(first + "/step_000005").exists());
    // Each process wrote the blocks its devices hold, into a file of its own; process 0 the index
    // that names them. Under FSDP each file holds about a quarter of the state: no process
    // gathered an array whole.
    const QStringList files = QDir(first + "/step_000005").entryList(QDir::Files, QDir::Name);
    QVERIFY2(files.contains("model.safetensors.index.json"), qPrintable(files.join(' ')));
    qint64 total = 0, largest = 0;
    for (int i = 1; i <= 4; ++i) {
      const QString f = QString("model-%1-of-00004.safetensors").arg(i, 5, 10, QChar('0'));
      QVERIFY2(files.contains(f), qPrintable(files.join(' ')));
      const qint64 size = QFileInfo(first + "/step_000005/" + f).size();
      total += size;
      largest = std::max(largest, size);
    }
    QVERIFY2(largest < total / 3, qPrintable(QString("the largest process file is %1 of %2 bytes").arg(largest).arg(total)));
    const QJsonObject meta = QJsonDocument::fromJson(read_file(first + "/step_000005/checkpoint.json")).object();
    QCOMPARE(meta["version"].toInt(), 2);
    QCOMPARE(meta["blocks"].toObject()["params/dense1/kernel"].toArray(), (QJsonArray{784, 256}));
    // inspect lists whole arrays, each with its blocks: dense1's kernel split over the 4 devices,
    // one per process, its bias whole, written once.
    const auto listed = run_cli({"inspect", first});
    QVERIFY2(listed.exit_code == 0, qPrintable(listed.err));
    QVERIFY2(listed.out.contains("saved over processes: 4 files"), qPrintable(listed.out));
    const QStringList lines = listed.out.split('\n');
    auto line_of = [&](const QString& array) {
      for (const QString& l : lines)
        if (l.startsWith(array + " ")) return l;
      return QString();
    };
    QVERIFY2(line_of("params/dense1/kernel").endsWith("4 blocks in 4 files"), qPrintable(listed.out));
    QVERIFY2(line_of("params/dense1/bias").endsWith("1 block in 1 file"), qPrintable(listed.out));
    // export still writes whole arrays: it equals a one-process run's at step 5.
    const QString alone = dir.filePath("alone");
    const auto one = run_cli(common + QStringList{"--steps", "5", "--threads", "2", "--checkpoint-dir", alone});
    QVERIFY2(one.exit_code == 0, qPrintable(one.err));
    for (const QString& ck : {first, alone}) {
      const auto exported = run_cli({"export", ck, "--out", ck + "/params.safetensors"});
      QVERIFY2(exported.exit_code == 0, qPrintable(exported.err));
    }
    QVERIFY2(read_file(first + "/params.safetensors") == read_file(alone + "/params.safetensors"),
             "the export of the 4-process checkpoint differs from the one-process run's");
    // An ONNX export reads only the parameters' blocks; where this build has ONNX, it writes the graph.
    const auto onnx = run_cli({"export", first, "--format", "onnx", "--out", dir.filePath("four.onnx")});
    if (onnx.exit_code == 0) QVERIFY(QFileInfo(dir.filePath("four.onnx")).size() > read_file(first + "/params.safetensors").size() / 2);
    else QVERIFY2(onnx.err.contains("ONNX"), qPrintable(onnx.err));
    // The same checkpoint continued by 4, 2 and 1 processes gives the uninterrupted run's steps 6-8.
    for (int k : {4, 2, 1}) {
      const QString copy = dir.filePath(QString("on%1").arg(k));
      QVERIFY(QDir().mkpath(copy));
      QVERIFY(QProcess::execute("cp", {"-r", first + "/.", copy}) == 0);
      const QStringList more = common + QStringList{"--steps", "8", "--resume", "--checkpoint-dir", copy, "--log", copy + "/log.jsonl"};
      if (k == 1) {
        const auto r = run_cli(more + QStringList{"--threads", "2"});
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      } else {
        const Launch r = mpirun(k, kCli, more);
        QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
      }
      compare_losses(losses(copy + "/log.jsonl"), want.mid(5));
      QVERIFY(QDir(copy + "/step_000008").exists());
    }
  }

  void aCheckpointResumesOnAnotherProcessCountMeshAndRules() {
    // Saved by 2 processes under FSDP, resumed by 4 under Megatron-style rules on a 2x2 mesh: each
    // of the 4 reads only the blocks its devices need, and the run equals one process resuming
    // the same checkpoint on the same mesh (which assembles whole arrays) bit for bit.
    QTemporaryDir dir;
    const QString saved_dir = dir.filePath("two");
    const Launch saved = mpirun(2, kCli, {"train", kProject, "--mesh", "data=2", "--rules", "batch=data,embed=data", "--quiet",
                                          "--steps", "3", "--checkpoint-dir", saved_dir});
    QVERIFY2(saved.exit_code == 0, qPrintable(saved.out + saved.err));
    const QStringList more{"train", kProject, "--mesh", "data=2,model=2", "--rules", "batch=data,mlp=model", "--quiet", "--steps", "5",
                           "--resume"};
    QVector<double> got[2];
    for (int k : {1, 4}) {
      const QString copy = dir.filePath(QString("on%1").arg(k));
      QVERIFY(QDir().mkpath(copy));
      QVERIFY(QProcess::execute("cp", {"-r", saved_dir + "/.", copy}) == 0);
      const QStringList args = more + QStringList{"--checkpoint-dir", copy, "--log", copy + "/log.jsonl"};
      if (k == 1) {
        const auto r = run_cli(args + QStringList{"--threads", "2"});
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      } else {
        const Launch r = mpirun(k, kCli, args);
        QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
      }
      got[k == 1 ? 0 : 1] = losses(copy + "/log.jsonl");
    }
    QCOMPARE(got[0].size(), 3);  // steps 4 and 5 and the evaluation
    compare_losses(got[1], got[0]);
  }

  void aKilledProcessEndsEveryOtherWithinSeconds() {
    QTemporaryDir dir;
    const QString ck = dir.filePath("ck");
    QProcess p;
    p.setProgram(SHARDLAB_MPIEXEC);
    p.setArguments(launcher_flags(3) + QStringList{kCli, "train", kProject, "--steps", "100000", "--mesh", "data=3", "--rules",
                                                   "batch=data", "--batch-size", "129", "--quiet", "--checkpoint-dir", ck,
                                                   "--save-every", "20"});
    p.start();
    QVERIFY(p.waitForStarted(10000));
    // Wait for a committed checkpoint, so that the run is mid-training.
    QElapsedTimer wait;
    wait.start();
    while (!QDir(ck + "/step_000040").exists() && wait.elapsed() < 60000) QThread::msleep(50);
    QVERIFY2(QDir(ck + "/step_000040").exists(), "no checkpoint within a minute");
    const QList<qint64> ranks = children_of(p.processId());
    QCOMPARE(ranks.size(), 3);
    QElapsedTimer t;
    t.start();
    ::kill(pid_t(ranks[1]), SIGKILL);
    QVERIFY2(p.waitForFinished(30000), "the run did not end within 30 s of a process's death");
    const qint64 ended_ms = t.elapsed();
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(ended_ms < 10000, qPrintable(QString("the run took %1 ms to end").arg(ended_ms)));
    QVERIFY(p.exitCode() != 0);
    // The launcher names the dead process; the survivors say why they stop.
    QVERIFY2(err.contains("exited on signal 9"), qPrintable(err));
    QVERIFY2(err.contains("the launcher is stopping the run"), qPrintable(err));
    // The newest committed checkpoint loads, and the run continues from it for one more step.
    const QStringList steps = QDir(ck).entryList({"step_*"}, QDir::Dirs, QDir::Name);
    QVERIFY(!steps.isEmpty());
    const int newest = steps.last().mid(5).toInt();
    QVERIFY(newest >= 40);
    const auto resumed = run_cli({"train", kProject, "--mesh", "data=3", "--rules", "batch=data", "--batch-size", "129",
                                  "--quiet", "--threads", "2", "--checkpoint-dir", ck, "--resume", "--steps",
                                  QString::number(newest + 1)});
    QVERIFY2(resumed.exit_code == 0, qPrintable(resumed.err));
    QVERIFY(QDir(ck + QString("/step_%1").arg(newest + 1, 6, 10, QChar('0'))).exists());
  }

  // A stop asked of the run's processes (SIGTERM: the window's Stop, or kill): they agree on a
  // step, stop after it, save it and end, and mpirun with them.
  void terminatingTheProcessesStopsEveryOneAfterTheSameStep() {
    QTemporaryDir dir;
    const QString ck = dir.filePath("ck"), log = dir.filePath("log.jsonl");
    QProcess p;
    startLongRun(p, ck, log);
    QElapsedTimer t;
    t.start();
    for (qint64 pid : children_of(p.processId())) ::kill(pid_t(pid), SIGTERM);
    const bool ended = p.waitForFinished(45000);
    const qint64 took = t.elapsed();
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(ended, qPrintable("the run did not end within 45 s: " + err));
    // The promise (README): a stop asked of the processes ends the run within seconds, after one
    // more step (milliseconds) and a save; 10 s leaves room for a loaded machine.
    QVERIFY2(took < 10000, qPrintable(QString("took %1 ms: %2").arg(took).arg(err)));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString("exit %1: %2").arg(p.exitCode()).arg(err)));
    QVERIFY2(err.count("the launcher is stopping the run") == 2, qPrintable(err));
    // The last checkpoint is the step the log ends at: every process stopped after that step.
    const int logged = losses(log).size();
    const QStringList steps = QDir(ck).entryList({"step_*"}, QDir::Dirs, QDir::Name);
    QVERIFY2(!steps.isEmpty(), qPrintable(err));
    QCOMPARE(steps.last().mid(5).toInt(), logged);
    // The log says so, for a window that follows it.
    QFile f(log);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> records = f.readAll().trimmed().split('\n');
    QVERIFY(records.size() >= 2);
    const QJsonObject saved = QJsonDocument::fromJson(records[records.size() - 2]).object();
    QCOMPARE(saved["event"].toString(), QString("saved"));
    QCOMPARE(saved["step"].toInt(), logged);
    const QJsonObject end = QJsonDocument::fromJson(records.last()).object();
    QCOMPARE(end["event"].toString(), QString("end"));
    QCOMPARE(end["cancelled"].toBool(), true);
  }

  // The same promise where the stop lands inside the agreement itself (process 1's vote already
  // counted as "go on"): every process still stops after the same step. Before the fix, process 1
  // left the loop alone and both waited on each other until the run was killed.
  void aStopLandingInsideTheAgreementStopsEveryProcessAtTheSameStep() {
    const Launch r = mpirun(2, SHARDLAB_STOP_AGREEMENT_CHECK, {kProject, "3"}, 60000);
    QVERIFY2(r.exit_code == 0, qPrintable(QString("exit %1: %2%3").arg(r.exit_code).arg(r.out, r.err)));
    QVERIFY2(r.out.contains("process 0 stopped after step 3") && r.out.contains("process 1 stopped after step 3"),
             qPrintable(r.out + r.err));
  }

  // Ctrl-C in a terminal reaches mpirun alone (its processes have process groups of their own): Open
  // MPI passes SIGTERM on a second later and kills them a second after that. Every process is told,
  // the run ends within seconds, and the directory holds only committed, loadable checkpoints.
  void interruptingMpirunEndsEveryProcessWithinSeconds() {
    QTemporaryDir dir;
    const QString ck = dir.filePath("ck"), log = dir.filePath("log.jsonl");
    QProcess p;
    startLongRun(p, ck, log);
    QElapsedTimer t;
    t.start();
    ::kill(pid_t(p.processId()), SIGINT);
    QVERIFY2(p.waitForFinished(30000), "the run did not end within 30 s of Ctrl-C");
    // The promise (README): Ctrl-C ends every process within seconds; Open MPI's own timers take
    // about 2 s of that, so 10 s leaves room for a loaded machine.
    QVERIFY2(t.elapsed() < 10000, qPrintable(QString("took %1 ms").arg(t.elapsed())));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.count("the launcher is stopping the run") == 2, qPrintable(err));
    const auto listed = run_cli({"inspect", ck});
    QVERIFY2(listed.exit_code == 0, qPrintable(listed.err));
  }

  void aProcessDyingInASaveLeavesThePreviousCheckpoint() {
    QTemporaryDir dir;
    const QString ck = dir.filePath("ck");
    // Parameters split over the processes (FSDP), so that every process writes blocks of its own.
    const QStringList common{"train", kProject, "--mesh", "data=4", "--rules", "batch=data,embed=data", "--quiet",
                             "--checkpoint-dir", ck};
    const Launch first = mpirun(4, kCli, common + QStringList{"--steps", "3"});
    QVERIFY2(first.exit_code == 0, qPrintable(first.out + first.err));
    // Process 2 dies at its first file-system call in the directory: writing its part of step 5.
    const QString only_rank_2 = QString("if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then export LD_PRELOAD=%1 "
                                        "SHARDLAB_FAULT_DIR=%2 SHARDLAB_FAULT_AT=1; fi; exec \"$0\" \"$@\"")
                                    .arg(SHARDLAB_FAULT_SHIM, ck);
    const Launch killed = mpirun(4, "sh", QStringList{"-c", only_rank_2, kCli} + common +
                                              QStringList{"--steps", "8", "--save-every", "5", "--resume"});
    QVERIFY(killed.exit_code != 0);
    QVERIFY2(!QDir(ck + "/step_000005").exists(), "a checkpoint missing process 2's part was committed");
    // The previous checkpoint is still the newest, and the run continues from it.
    const Launch again = mpirun(4, kCli, common + QStringList{"--steps", "4", "--resume", "--log", dir.filePath("again.jsonl")});
    QVERIFY2(again.exit_code == 0, qPrintable(again.out + again.err));
    const QVector<double> resumed = losses(dir.filePath("again.jsonl"));
    QCOMPARE(resumed.size(), 2);  // step 4 and the evaluation
  }

  void oneProcessErrorEndsTheRunNamingIt() {
    // Only process 0 opens the log, so only it fails; the others must not wait for it forever.
    const Launch r = mpirun(3, kCli, {"train", kProject, "--steps", "5", "--mesh", "data=3", "--rules", "batch=data",
                                      "--batch-size", "129", "--log", "/nonexistent-dir/x/log.jsonl"},
                            60000);
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.ms < 30000, qPrintable(QString("took %1 ms").arg(r.ms)));
    QVERIFY2(r.err.contains("(process 0 of 3)") && r.err.contains("/nonexistent-dir/x/log.jsonl"), qPrintable(r.err));
  }

  void theTraceHasATrackPerGlobalDevice() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("trace.json");
    const Launch r = mpirun(2, kCli, {"train", kProject, "--steps", "3", "--mesh", "data=4", "--rules", "batch=data", "--quiet",
                                      "--trace", trace});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray events = QJsonDocument::fromJson(f.readAll()).object()["traceEvents"].toArray();
    QSet<QString> tracks;
    QMap<int, int> spans_by_process;
    for (const QJsonValue& v : events) {
      const QJsonObject e = v.toObject();
      if (e["name"] == "thread_name") tracks.insert(QString("%1:%2").arg(e["pid"].toInt()).arg(e["args"].toObject()["name"].toString()));
      if (e["ph"] == "X") ++spans_by_process[e["pid"].toInt()];
    }
    // Process r holds devices 2r and 2r+1: each has its compute track in r's trace process.
    for (const QString& t : {"0:CPU 0 compute", "0:CPU 1 compute", "1:CPU 2 compute", "1:CPU 3 compute"})
      QVERIFY2(tracks.contains(t), qPrintable(QStringList(tracks.values()).join(", ")));
    QVERIFY(spans_by_process[0] > 0 && spans_by_process[1] > 0);
  }

  void aMeshThatDoesNotDivideAmongProcessesIsRefused() {
    const Launch r = mpirun(3, kCli, {"train", kProject, "--steps", "2", "--mesh", "data=4", "--rules", "batch=data"}, 60000);
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.err.contains("has 4 devices, which do not divide among 3 processes"), qPrintable(r.err));
  }

  void otherCommandsRunOnceUnderTheLauncher() {
    const Launch r = mpirun(2, kCli, {"check", kProject}, 60000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out.count("fashion-mlp"), run_cli({"check", kProject}).out.count("fashion-mlp"));
  }
};

QTEST_GUILESS_MAIN(TestMpiRuns)
#include "test_mpi_runs.moc"
