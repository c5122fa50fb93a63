// The Training tab running the project over several local processes, as a user does it: the
// command line it builds (and the cluster dialog writes out), a real `mpirun` launch of
// shardlab-cli whose JSONL log feeds the tab's charts and progress, Stop ending every process, and
// the refusals that come before anything starts.
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <csignal>
#include <set>

#include "engine/profiler/trace_file.h"
#include "tests/engine/test_support.h"
#include "ui/document/project_document.h"
#include "ui/training/cluster_command_dialog.h"
#include "ui/training/hyperparameter_form.h"
#include "ui/training/line_chart.h"
#include "ui/training/process_command.h"
#include "ui/training/process_run.h"
#include "ui/training/training_tab.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

const QString kFashionMlp = SHARDLAB_SOURCE_DIR "/projects/fashion-mlp.shardlab.json";
const QString kCli = SHARDLAB_BINARY_DIR "/app/shardlab-cli";

QPushButton* button(TrainingTab& tab, const char* name) { return tab.findChild<QPushButton*>(name); }

void typeInto(QWidget* field, const QString& text) {
  field->setFocus();
  QTest::keyClick(field, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(field, text);
  QTest::keyClick(field, Qt::Key_Enter);
}

// fashion-mlp copied into `dir` with the mesh and rules given (and any other top-level fields).
QString fashionCopy(const QTemporaryDir& dir, const QString& mesh, const QJsonObject& extra = {}) {
  QFile in(kFashionMlp);
  if (!in.open(QIODevice::ReadOnly)) return {};
  QJsonObject p = QJsonDocument::fromJson(in.readAll()).object();
  QJsonObject axes;
  for (const QString& axis : mesh.split(',')) axes[axis.section('=', 0, 0)] = axis.section('=', 1).toInt();
  p["mesh"] = QJsonObject{{"axes", axes}};
  p["logical_axis_rules"] = QJsonArray{QJsonArray{"batch", "data"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) p[it.key()] = it.value();
  const QString path = dir.filePath("fashion-mlp.shardlab.json");
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate)) return {};
  out.write(QJsonDocument(p).toJson());
  return path;
}

// The step and eval records of a JSONL log, in order.
QList<QJsonObject> records(const QString& path, const QString& event) {
  QList<QJsonObject> out;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.value("event").toString() == event) out << o;
  }
  return out;
}

// The pids whose parent is `pid` (mpirun's children: the run's processes).
QList<qint64> childrenOf(qint64 pid) {
  QList<qint64> out;
  const QStringList entries = QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  for (const QString& e : entries) {
    bool ok = false;
    const qint64 child = e.toLongLong(&ok);
    if (!ok) continue;
    QFile stat("/proc/" + e + "/stat");
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QString text = QString::fromLatin1(stat.readAll());
    // "pid (comm) state ppid ...": the command may hold spaces, so read after its ')'.
    const QStringList rest = text.mid(text.lastIndexOf(')') + 2).split(' ');
    if (rest.size() > 1 && rest[1].toLongLong() == pid) out << child;
  }
  return out;
}

// Gone, or a zombie no longer running anything.
bool processEnded(qint64 pid) {
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return true;
  const QString text = QString::fromLatin1(stat.readAll());
  return text.mid(text.lastIndexOf(')') + 2).startsWith('Z');
}

}  // namespace

class TestProcessRun : public QObject {
  Q_OBJECT

 private:
  QString mpirun_;
  bool cliHasMpi_ = false;

  // A tab whose runs over processes start this build's shardlab-cli.
  void prepare(TrainingTab& tab) {
    tab.setCliProgram(kCli);
    tab.setMpirunProgram(mpirun_);
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    mpirun_ = QStandardPaths::findExecutable("mpirun");
    // A build without MPI has a shardlab-cli that refuses to run as one of several processes.
    QProcess version;
    version.start(kCli, {"--version"});
    cliHasMpi_ = version.waitForFinished(30000) && QString::fromUtf8(version.readAllStandardOutput()).contains("MPI yes");
  }

  void commandLineHasExactlyTheRunsArguments() {
    TrainCommand c;
    c.project = "/data/fashion-mlp.shardlab.json";
    c.mesh = "data=4";
    c.rules = "batch=data";
    c.options.steps = 50;
    c.options.batch_size = 128;
    c.options.accumulate = 2;
    c.options.pipeline_schedule = "gpipe";
    c.options.seed = 7;
    c.options.learning_rate = 0.003;
    c.options.checkpoint_dir = "/runs/ckpt";
    c.options.save_every = 10;
    c.options.keep = 2;
    c.options.start_over = true;
    const QStringList train{"train",   "/data/fashion-mlp.shardlab.json",
                            "--mesh",  "data=4",
                            "--rules", "batch=data",
                            "--steps", "50",
                            "--batch-size", "128",
                            "--accumulate", "2",
                            "--pipeline-schedule", "gpipe",
                            "--seed", "7",
                            "--lr", "0.003",
                            "--checkpoint-dir", "/runs/ckpt",
                            "--save-every", "10",
                            "--keep", "2",
                            "--start-over"};
    QCOMPARE(trainArguments(c), train);
    QCOMPARE(localMpirunArguments(4, "/opt/bin/shardlab-cli", c, "/tmp/run.jsonl"),
             QStringList({"--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", "4", "/opt/bin/shardlab-cli"}) +
                 train + QStringList({"--log", "/tmp/run.jsonl"}));
    QCOMPARE(hostfileCommandLine(8, c), "mpirun -np 8 --hostfile hosts shardlab-cli " + train.join(' '));

    const QStringList script = sbatchScript(2, 4, c).split('\n');
    QCOMPARE(script.first(), "#!/bin/bash");
    QVERIFY(script.contains("#SBATCH --nodes=2"));
    QVERIFY(script.contains("#SBATCH --ntasks-per-node=4"));
    QVERIFY(script.contains("#SBATCH --job-name=fashion-mlp"));
    QVERIFY(script.contains("srun --mpi=pmix shardlab-cli " + train.join(' ')));

    // Epochs instead of steps, threads when set, nothing of checkpoints without a folder; a path
    // the shell would split is quoted.
    TrainCommand e;
    e.project = "/home/me/my 'best' run.shardlab.json";
    e.mesh = "data=2,model=2";
    e.options.epochs = 3;
    e.options.threads = 4;
    e.options.learning_rate = 1e-4;
    QCOMPARE(trainArguments(e), QStringList({"train", e.project, "--mesh", "data=2,model=2", "--epochs", "3", "--lr",
                                             "0.0001", "--threads", "4"}));
    QCOMPARE(hostfileCommandLine(2, e), QString("mpirun -np 2 --hostfile hosts shardlab-cli train "
                                                "'/home/me/my '\\''best'\\'' run.shardlab.json' --mesh data=2,model=2 "
                                                "--epochs 3 --lr 0.0001 --threads 4"));
    // A rate far from 1 keeps its exponent, and every digit.
    e.options.learning_rate = 2.5e-9;
    QVERIFY(trainArguments(e).contains("2.5e-09"));
    e.options.learning_rate = 0.1 + 0.2;
    QVERIFY(trainArguments(e).contains("0.30000000000000004"));
  }

  // On a mesh of one device the dialog opens on one node, with no problem to fix before anything
  // has been typed.
  void clusterDialogOpensOnCountsThatFit() {
    QTemporaryDir dir;
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    doc.open(fashionCopy(dir, "data=1"));
    QTest::mouseClick(button(tab, "clusterCommand"), Qt::LeftButton);
    auto* dialog = tab.findChild<ClusterCommandDialog*>();
    QVERIFY(dialog);
    QCOMPARE(dialog->nodesBox()->value(), 1);
    QVERIFY(dialog->findChild<QLabel*>("clusterProblem")->isHidden());
  }

  void clusterDialogWritesTheTabsRun() {
    QTemporaryDir dir;
    const QString path = fashionCopy(dir, "data=4");
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    doc.open(path);
    typeInto(tab.form()->stepsBox(), "30");
    typeInto(tab.form()->seedBox(), "5");
    QTest::mouseClick(button(tab, "clusterCommand"), Qt::LeftButton);
    auto* dialog = tab.findChild<ClusterCommandDialog*>();
    QVERIFY(dialog);
    // It opens on counts that fit the mesh of 4: two nodes, no problem shown.
    QCOMPARE(dialog->nodesBox()->value(), 2);
    // The steps typed are in the document, not yet in the file, but the command line carries them.
    QVERIFY(dialog->findChild<QLabel*>("clusterNote")->text().isEmpty());
    dialog->nodesBox()->setValue(2);
    dialog->tasksPerNodeBox()->setValue(2);
    const QString args = QString("shardlab-cli train %1 --mesh data=4 --rules batch=data --steps 30 --batch-size 128 "
                                 "--accumulate 1 --pipeline-schedule 1f1b --seed 5 --lr 0.001")
                             .arg(QFileInfo(path).absoluteFilePath());
    QCOMPARE(dialog->mpirunText(), "mpirun -np 4 --hostfile hosts " + args);
    VERIFY_CONTAINS(dialog->sbatchText(), "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n");
    VERIFY_CONTAINS(dialog->sbatchText(), "\nsrun --mpi=pmix " + args + "\n");
    QVERIFY(dialog->problemText().isEmpty());
    // Copy puts exactly the text on the clipboard.
    QTest::mouseClick(dialog->findChild<QPushButton*>("copySbatch"), Qt::LeftButton);
    QCOMPARE(QGuiApplication::clipboard()->text(), dialog->sbatchText());
    // 3 processes cannot share 4 devices: said with both numbers.
    dialog->nodesBox()->setValue(3);
    dialog->tasksPerNodeBox()->setValue(1);
    VERIFY_CONTAINS(dialog->problemText(), "4 device(s)");
    VERIFY_CONTAINS(dialog->problemText(), "3 processes");
    VERIFY_CONTAINS(dialog->mpirunText(), "mpirun -np 3 ");
  }

  void processesNeedMpirun() {
    ProjectDocument doc;
    TrainingTab tab(&doc);
    tab.setMpirunProgram(QString());
    QSpinBox* box = tab.form()->processesBox();
    QVERIFY(!box->isEnabled());
    QCOMPARE(box->value(), 1);
    VERIFY_CONTAINS(box->toolTip(), "openmpi-bin");
    // The tab disables and re-enables the form around runs; the field stays off.
    tab.form()->setEnabled(false);
    tab.form()->setEnabled(true);
    QVERIFY(!box->isEnabled());
  }

  void meshNotDividingByProcessesIsRefused() {
    QTemporaryDir dir;
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    // Refused before mpirun would run, so any name will do where the machine has none.
    if (mpirun_.isEmpty()) tab.setMpirunProgram("mpirun");
    // A batch that 3 devices split evenly, so the design check has nothing against the mesh.
    doc.open(fashionCopy(dir, "data=3", QJsonObject{{"training", QJsonObject{{"batch_size", 96}, {"steps", 5}}}}));
    tab.form()->processesBox()->setValue(2);
    QSignalSpy failed(&tab, &TrainingTab::runFailed);
    QSignalSpy started(&tab, &TrainingTab::runStarted);
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QCOMPARE(failed.count(), 1);
    QCOMPARE(started.count(), 0);
    QVERIFY(!tab.isRunning());
    VERIFY_CONTAINS(tab.errorText(), "3 device(s)");
    VERIFY_CONTAINS(tab.errorText(), "2 processes");
    QVERIFY(tab.processLogFile().isEmpty());  // nothing was launched
  }

  void unsavedProjectIsRefused() {
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    if (mpirun_.isEmpty()) tab.setMpirunProgram("mpirun");
    doc.openTemplate(kFashionMlp);  // no file of its own
    tab.form()->processesBox()->setValue(2);
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QVERIFY(!tab.isRunning());
    VERIFY_CONTAINS(tab.errorText(), "save the project to a file first");
    QTest::mouseClick(button(tab, "clusterCommand"), Qt::LeftButton);
    QVERIFY(!tab.findChild<ClusterCommandDialog*>());
    VERIFY_CONTAINS(tab.errorText(), "save the project to a file first");

    // Saved, then the mesh changed in the window: the file would train another model.
    QTemporaryDir dir;
    doc.open(fashionCopy(dir, "data=2"));
    QVERIFY(doc.edit("Change mesh", [](project::Project& p) { p.mesh = graph::Json{{"axes", {{"data", 4}}}}; }));
    tab.form()->processesBox()->setValue(2);
    QSignalSpy started(&tab, &TrainingTab::runStarted);
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QCOMPARE(started.count(), 0);
    VERIFY_CONTAINS(tab.errorText(), "unsaved changes");
    QTest::mouseClick(button(tab, "clusterCommand"), Qt::LeftButton);
    auto* dialog = tab.findChild<ClusterCommandDialog*>();
    QVERIFY(dialog);
    VERIFY_CONTAINS(dialog->findChild<QLabel*>("clusterNote")->text(), "unsaved changes");
  }

  void processRunDrawsEveryStep() {
    if (mpirun_.isEmpty()) QSKIP("mpirun not found (install openmpi-bin): no run over processes to test");
    QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + " is not built"));
    if (!cliHasMpi_) QSKIP("this build's shardlab-cli has no MPI (configured without libopenmpi-dev): no run over processes to test");
    QTemporaryDir dir;
    const QString path = fashionCopy(dir, "data=2");
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    doc.open(path);
    typeInto(tab.form()->stepsBox(), "5");
    tab.form()->pipelineScheduleBox()->setCurrentIndex(tab.form()->pipelineScheduleBox()->findData("gpipe"));
    tab.form()->processesBox()->setValue(2);
    QSignalSpy started(&tab, &TrainingTab::runStarted);
    QSignalSpy steps(&tab, &TrainingTab::stepReported);
    QSignalSpy evals(&tab, &TrainingTab::evalReported);
    QSignalSpy finished(&tab, &TrainingTab::runFinished);
    QSignalSpy failed(&tab, &TrainingTab::runFailed);
    QSignalSpy traced(&tab, &TrainingTab::traceFileWritten);

    // The five steps typed and the schedule chosen are not saved: the command line carries them.
    QVERIFY(doc.isModified());
    QCOMPARE(doc.project().training.pipeline_schedule, std::string("gpipe"));
    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QCOMPARE(started.count(), 1);
    QVERIFY(tab.isRunning());
    QVERIFY(tab.processRun()->isRunning());
    QVERIFY(!button(tab, "pause")->isEnabled());  // processes are stopped, not paused
    QVERIFY(button(tab, "stop")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 180000);
    QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.at(0).at(0).toString()));
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    qInfo("5 steps of fashion-mlp on 2 processes took %.1f s including start-up", clock.elapsed() / 1000.0);

    // Every step of the log, with its loss, reached the tab; so did the evaluation.
    const QList<QJsonObject> logged = records(tab.processLogFile(), "step");
    QCOMPARE(logged.size(), 5);
    const QList<QJsonObject> start = records(tab.processLogFile(), "start");
    QCOMPARE(start.size(), 1);
    QCOMPARE(start[0]["processes"].toInt(), 2);
    QCOMPARE(start[0]["devices"].toInt(), 2);
    QCOMPARE(steps.count(), 5);
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(steps.at(i).at(0).toLongLong(), qint64(i + 1));
      QCOMPARE(steps.at(i).at(1).toDouble(), logged[i]["loss"].toDouble());
      QVERIFY(std::isfinite(steps.at(i).at(1).toDouble()));
    }
    QCOMPARE(evals.count(), records(tab.processLogFile(), "eval").size());
    LineChart* loss = tab.lossChart();
    QCOMPARE(loss->pointCount(loss->seriesIndex("train")), 5);
    QCOMPARE(loss->lastPoint(loss->seriesIndex("train"))->y(), logged[4]["loss"].toDouble());
    QCOMPARE(tab.throughputChart()->pointCount(0), 5);
    QCOMPARE(tab.progressBar()->maximum(), 5);
    QCOMPARE(tab.progressBar()->value(), 5);
    VERIFY_CONTAINS(tab.findChild<QLabel*>("status")->text(), "Done: 5 steps");
    VERIFY_CONTAINS(tab.runLog()->toPlainText(), "over 2 processes");
    // Everything an in-process run reports reaches the tab through the log: the collectives, the
    // bytes they move, the memory plan's parts and the example counts.
    const QString shown = tab.runLog()->toPlainText();
    VERIFY_CONTAINS(shown, QString("(1 device(s) each): %1 collectives per step").arg(start[0]["collectives"].toInt()));
    QVERIFY(start[0]["collectives"].toInt() > 0);
    VERIFY_CONTAINS(shown, "Memory plan per device: parameters ");
    VERIFY_CONTAINS(shown, QString("; %1 train / ").arg(start[0]["train_examples"].toInt()));
    QVERIFY(start[0]["train_examples"].toInt() > 0);
    VERIFY_CONTAINS(tab.runLog()->toPlainText(), "--steps 5 --batch-size 128 --accumulate 1 --pipeline-schedule gpipe ");
    QVERIFY(!tab.isRunning());
    QVERIFY(button(tab, "start")->isEnabled());
    // Both processes' spans, merged into one trace the Trace tab opens: each device has its track.
    QCOMPARE(traced.count(), 1);
    const profiler::TraceContents trace = profiler::read_chrome_trace(traced.at(0).at(0).toString().toStdString());
    std::set<int> devices;
    for (const profiler::Span& sp : trace.spans) devices.insert(sp.device);
    QVERIFY2(devices.count(0) && devices.count(1), "the trace lacks a device's spans");
  }

  void stopEndsEveryProcessWithinSeconds() {
    if (mpirun_.isEmpty()) QSKIP("mpirun not found (install openmpi-bin): no run over processes to test");
    QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + " is not built"));
    if (!cliHasMpi_) QSKIP("this build's shardlab-cli has no MPI (configured without libopenmpi-dev): no run over processes to test");
    QTemporaryDir dir;
    const QString path = fashionCopy(dir, "data=2", QJsonObject{{"training", QJsonObject{{"batch_size", 128}, {"steps", 100000}}}});
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    doc.open(path);
    tab.form()->processesBox()->setValue(2);
    QSignalSpy steps(&tab, &TrainingTab::stepReported);
    QSignalSpy finished(&tab, &TrainingTab::runFinished);
    QSignalSpy failed(&tab, &TrainingTab::runFailed);
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QVERIFY(tab.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 2 || !failed.isEmpty(), 180000);
    QVERIFY(failed.isEmpty());
    const qint64 mpirun = tab.processRun()->processId();
    const QList<qint64> workers = childrenOf(mpirun);
    QCOMPARE(workers.size(), 2);

    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(button(tab, "stop"), Qt::LeftButton);
    QVERIFY(!button(tab, "stop")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 30000);
    const double took = clock.elapsed() / 1000.0;
    qInfo("Stop ended the 2 processes in %.1f s", took);
    // The promise (README, several processes): Stop ends every process within seconds. They stop
    // after a fashion-mlp step (milliseconds) and save; mpirun kills what is left a second after
    // SIGTERM. 10 s is that with room for a loaded machine.
    QVERIFY2(took < 10, qPrintable(QString("Stop took %1 s").arg(took)));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.at(0).at(0).toBool(), true);  // cancelled
    for (qint64 pid : workers) QVERIFY2(processEnded(pid), qPrintable(QString("process %1 still runs").arg(pid)));
    QVERIFY(processEnded(mpirun));
    // The steps drawn are the steps logged, every one, and the run stopped well short of its end.
    const QList<QJsonObject> logged = records(tab.processLogFile(), "step");
    QCOMPARE(steps.count(), logged.size());
    QCOMPARE(steps.last().at(0).toLongLong(), qint64(logged.last()["step"].toInt()));
    QVERIFY(logged.size() < 100000);
    VERIFY_CONTAINS(tab.findChild<QLabel*>("status")->text(), "Cancelled");
  }

  void failingProcessesShowTheirLastLines() {
    if (mpirun_.isEmpty()) QSKIP("mpirun not found (install openmpi-bin): no run over processes to test");
    QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + " is not built"));
    if (!cliHasMpi_) QSKIP("this build's shardlab-cli has no MPI (configured without libopenmpi-dev): no run over processes to test");
    QTemporaryDir dir;
    // A step folder whose save never committed: every process refuses to resume from it, and says why.
    const QString step = dir.filePath("ckpt/step_000003");
    QVERIFY(QDir().mkpath(step));
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    doc.open(fashionCopy(dir, "data=2"));
    typeInto(tab.form()->stepsBox(), "5");
    tab.form()->processesBox()->setValue(2);
    QSignalSpy finished(&tab, &TrainingTab::runFinished);
    QSignalSpy failed(&tab, &TrainingTab::runFailed);
    tab.resumeFrom(step);
    QVERIFY2(tab.isRunning(), qPrintable(tab.errorText()));
    VERIFY_CONTAINS(tab.runLog()->toPlainText(), "--resume-from " + step);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 120000);
    QCOMPARE(failed.count(), 1);
    VERIFY_CONTAINS(tab.errorText(), "exited with code");
    VERIFY_CONTAINS(tab.errorText(), "step_000003: not a committed checkpoint");
    QVERIFY(!tab.isRunning());
    QVERIFY(button(tab, "start")->isEnabled());
  }

  void launcherThatCannotStartSaysSo() {
    QTemporaryDir dir;
    ProjectDocument doc;
    TrainingTab tab(&doc);
    prepare(tab);
    tab.setMpirunProgram(dir.filePath("no-such-mpirun"));
    doc.open(fashionCopy(dir, "data=2"));
    tab.form()->processesBox()->setValue(2);
    QSignalSpy failed(&tab, &TrainingTab::runFailed);
    QTest::mouseClick(button(tab, "start"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
    VERIFY_CONTAINS(tab.errorText(), "Could not start");
    VERIFY_CONTAINS(tab.errorText(), "no-such-mpirun");
    QVERIFY(!tab.isRunning());
  }
};

QTEST_MAIN(TestProcessRun)
#include "test_process_run.moc"
