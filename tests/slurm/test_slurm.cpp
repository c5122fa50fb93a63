// Runs over processes that a real Slurm launched: a one-node Slurm (munged, slurmctld, slurmd from
// Debian's packages) is started for this test in a temporary folder by tests/slurm/slurm_up.sh and
// stopped at the end with nothing left running. Then `srun --mpi=pmix` (the PMI that Debian's Slurm
// and Open MPI share: PMIx 4) trains as one process does, the batch script the window's "Command
// Line for a Cluster…" writes runs under `sbatch`, and `scancel` ends a run within seconds leaving
// only committed, loadable checkpoints. Where Slurm is not installed or cannot start, every test
// skips and says why.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/mpi_runner.h"
#include "ui/training/process_command.h"

using shardlab::testing::kCli;
using shardlab::testing::logged_losses;
using shardlab::testing::run_cli;
namespace fs = std::filesystem;

namespace {

const QString kProject = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json");
const QString kScripts = QStringLiteral(SHARDLAB_SOURCE_DIR "/tests/slurm");

struct Run {
  int exit_code = -1;
  QString out, err;
};

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env, int timeout_ms = 120000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Run r;
  if (!p.waitForStarted(10000) || !p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = program + " did not finish: " + p.errorString();
    return r;
  }
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

// What the Training tab gives the cluster dialog: deep-mlp-small data parallel over 2 devices.
shardlab::ui::TrainCommand command(int64_t steps, const QString& checkpoints, int64_t save_every) {
  shardlab::ui::TrainCommand c;
  c.project = kProject;
  c.mesh = "data=2";
  c.rules = "batch=data";
  c.options.steps = steps;
  c.options.checkpoint_dir = checkpoints.toStdString();
  c.options.save_every = save_every;
  return c;
}

// The committed checkpoints' arrays of a step directory, loaded as resume loads them.
std::map<std::string, shardlab::Tensor> arrays_of(const QString& dir) {
  return shardlab::checkpoint::load(fs::path(dir.toStdString())).arrays;
}

}  // namespace

class TestSlurm : public QObject {
  Q_OBJECT

  QTemporaryDir cluster_;
  QProcessEnvironment env_ = QProcessEnvironment::systemEnvironment();
  bool up_ = false;

  // sbatch's job id from --parsable ("12" or "12;cluster").
  QString submit(const QString& script, const QString& dir) {
    QFile f(dir + "/train.sbatch");
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(script.toUtf8());
    f.close();
    const Run r = run("sbatch", {"--parsable", "--chdir", dir, "--output", dir + "/job.out", dir + "/train.sbatch"}, env_);
    if (r.exit_code != 0) qWarning("sbatch: %s", qPrintable(r.err));
    return r.out.trimmed().section(';', 0, 0);
  }
  bool queued(const QString& job) { return !run("squeue", {"-h", "-j", job}, env_).out.trimmed().isEmpty(); }
  // "COMPLETED", "CANCELLED", …, and the exit code ("0:0"), as the controller keeps them a while after the end.
  QString stateOf(const QString& job) {
    const QString s = run("scontrol", {"show", "job", job}, env_).out;
    const auto state = QRegularExpression("JobState=(\\S+)").match(s), code = QRegularExpression("ExitCode=(\\S+)").match(s);
    return state.captured(1) + " " + code.captured(1);
  }
  bool waitUntilGone(const QString& job, int ms) {
    QElapsedTimer t;
    t.start();
    while (queued(job)) {
      if (t.elapsed() > ms) return false;
      QThread::msleep(100);
    }
    return true;
  }

 private slots:
  void initTestCase() {
    for (const char* tool : {"slurmctld", "slurmd", "srun", "sbatch", "munged"})
      if (QStandardPaths::findExecutable(tool).isEmpty())
        QSKIP(qPrintable(QString("Slurm is not installed here (no %1; packaging/install-deps.sh installs slurmctld, slurmd, "
                                 "slurm-client and munge): the Slurm tests did not run")
                             .arg(tool)));
    QVERIFY(cluster_.isValid());
    const Run up = run(kScripts + "/slurm_up.sh", {cluster_.path()}, env_, 90000);
    if (up.exit_code != 0) {
      run(kScripts + "/slurm_down.sh", {cluster_.path()}, env_);
      QSKIP(qPrintable("a one-node Slurm could not start here, so the Slurm tests did not run: " + up.err.right(1500)));
    }
    up_ = true;
    const auto conf = QRegularExpression("export SLURM_CONF=(\\S+)").match(up.out);
    QVERIFY2(conf.hasMatch(), qPrintable(up.out + up.err));
    env_.insert("SLURM_CONF", conf.captured(1));
    // The batch script names shardlab-cli, as on a cluster where it is installed.
    env_.insert("PATH", QFileInfo(kCli).absolutePath() + ":" + env_.value("PATH"));
  }

  void cleanupTestCase() {
    if (!up_) return;
    const Run down = run(kScripts + "/slurm_down.sh", {cluster_.path()}, env_);
    QVERIFY2(down.exit_code == 0, qPrintable("processes of the test's Slurm are left running: " + down.err));
  }

  // srun --mpi=pmix starts two processes that join one run: the same losses as one process on the
  // same mesh, bit for bit.
  void srunTrainsAsOneProcessDoes() {
    QTemporaryDir dir;
    const QStringList args{"train", kProject, "--steps", "4", "--mesh", "data=2", "--rules", "batch=data", "--quiet"};
    const auto one = run_cli(args + QStringList{"--threads", "2", "--log", dir.filePath("one.jsonl")});
    QVERIFY2(one.exit_code == 0, qPrintable(one.err));
    const Run two = run("srun", QStringList{"-n", "2", "--mpi=pmix", kCli} + args + QStringList{"--log", dir.filePath("two.jsonl")}, env_);
    QVERIFY2(two.exit_code == 0, qPrintable(two.out + two.err));
    const QVector<double> want = logged_losses(dir.filePath("one.jsonl")), got = logged_losses(dir.filePath("two.jsonl"));
    QCOMPARE(want.size(), 4);
    QCOMPARE(got, want);
    QCOMPARE(shardlab::testing::start_record(dir.filePath("two.jsonl"))["processes"].toInt(), 2);
  }

  // The exact script the window writes, submitted with sbatch: it runs to completion, and its
  // checkpoints hold what a one-process run's hold.
  void theWindowsBatchScriptRunsToCompletion() {
    QTemporaryDir dir;
    const QString job = submit(shardlab::ui::sbatchScript(1, 2, command(4, dir.filePath("ck"), 2)), dir.path());
    QVERIFY(!job.isEmpty());
    QVERIFY2(waitUntilGone(job, 180000), "the batch job did not end within 3 minutes");
    QFile out(dir.filePath("job.out"));
    QVERIFY(out.open(QIODevice::ReadOnly));
    const QString printed = QString::fromUtf8(out.readAll());
    QVERIFY2(stateOf(job).startsWith("COMPLETED 0:0"), qPrintable(stateOf(job) + "\n" + printed));
    QVERIFY2(QDir(dir.filePath("ck")).entryList({"step_*"}, QDir::Dirs, QDir::Name) ==
                 QStringList({"step_000002", "step_000004"}),
             qPrintable(printed));

    const auto one = run_cli({"train", kProject, "--steps", "4", "--mesh", "data=2", "--rules", "batch=data", "--quiet",
                              "--threads", "2", "--checkpoint-dir", dir.filePath("one"), "--save-every", "2"});
    QVERIFY2(one.exit_code == 0, qPrintable(one.err));
    for (const char* step : {"step_000002", "step_000004"}) {
      const auto got = arrays_of(dir.filePath("ck/") + step), want = arrays_of(dir.filePath("one/") + step);
      QCOMPARE(got.size(), want.size());
      for (const auto& [name, t] : want) {
        QVERIFY2(got.count(name), name.c_str());
        QVERIFY2(got.at(name).data == t.data, qPrintable(QString("%1 of %2 differs from one process's").arg(name.c_str(), step)));
      }
    }
  }

  // scancel mid-run: Slurm signals every process at once; they end within seconds, and the
  // checkpoint folder holds only committed checkpoints, the newest one loadable and at a step the
  // run logged.
  void scancelEndsEveryProcessWithinSeconds() {
    QTemporaryDir dir;
    // The window's script, with a log to follow the run by.
    QString script = shardlab::ui::sbatchScript(1, 2, command(100000, dir.filePath("ck"), 5));
    script.replace(QRegularExpression("\n$"), " --log " + dir.filePath("log.jsonl") + "\n");
    const QString job = submit(script, dir.path());
    QVERIFY(!job.isEmpty());
    QElapsedTimer wait;
    wait.start();
    while (logged_losses(dir.filePath("log.jsonl")).size() < 12 && wait.elapsed() < 120000) QThread::msleep(100);
    QVERIFY2(logged_losses(dir.filePath("log.jsonl")).size() >= 12, qPrintable("the job logged no steps within 2 minutes: " + stateOf(job)));

    QElapsedTimer t;
    t.start();
    QCOMPARE(run("scancel", {job}, env_).exit_code, 0);
    // The promise: within seconds, as for mpirun (Slurm's KillWait here is 5 s; the rest is
    // slurmstepd's own clean-up after the processes are gone).
    QVERIFY2(waitUntilGone(job, 20000), "the cancelled job still runs after 20 s");
    const qint64 took = t.elapsed();
    QFile out(dir.filePath("job.out"));
    QVERIFY(out.open(QIODevice::ReadOnly));
    const QString printed = QString::fromUtf8(out.readAll());
    qInfo("scancel: the job ended in %lld ms; %lld process(es) said they were stopping", took,
          qint64(printed.count("the launcher is stopping the run")));
    QVERIFY2(took < 15000, qPrintable(QString("took %1 ms: %2").arg(took).arg(printed)));

    const auto listing = shardlab::checkpoint::committed(fs::path(dir.filePath("ck").toStdString()));
    QVERIFY2(!listing.empty(), qPrintable(printed));
    const int logged = logged_losses(dir.filePath("log.jsonl")).size();
    QVERIFY2(listing.back().first <= logged, qPrintable(QString("newest checkpoint %1, %2 steps logged").arg(listing.back().first).arg(logged)));
    QCOMPARE(shardlab::checkpoint::load(listing.back().second).step, listing.back().first);
  }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "test_slurm.moc"
