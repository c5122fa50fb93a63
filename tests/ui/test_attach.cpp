// File > Attach to Run, as a user follows a job a cluster runs: a real shardlab-cli started outside
// the window (as sbatch would) writes its JSONL log and checkpoints; the window, attached through the
// menu's file dialog, draws the run's steps, lists its checkpoints as they commit and sees it end;
// a job restarted from a checkpoint (its log written anew) is followed again from the top; Stop
// stops only the following; a run gone quiet is said to be, and a run's time is its log's; a folder
// without a log is refused, naming it.
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

#include "tests/engine/test_support.h"
#include "tests/ui/window_menus.h"
#include "ui/checkpoints/checkpoint_browser.h"
#include "ui/checkpoints/checkpoint_list_model.h"
#include "ui/main_window.h"
#include "ui/training/line_chart.h"
#include "ui/training/process_run.h"
#include "ui/training/training_tab.h"

using namespace shardlab::ui;

namespace {

// Seed 002's two matmuls on 64 synthetic rows: steps of milliseconds, so a job logs and saves fast.
const QString kProject = SHARDLAB_SOURCE_DIR "/projects/dot-relu-dot.shardlab.json";
const QString kCli = SHARDLAB_BINARY_DIR "/app/shardlab-cli";

// A training job started outside the window, as a cluster would start it.
void startJob(QProcess& job, const QString& log, const QString& ck, int steps, const QStringList& more = {}) {
  job.setProgram(kCli);
  job.setArguments(QStringList{"train", kProject, "--steps", QString::number(steps), "--threads", "1", "--quiet", "--log", log,
                               "--checkpoint-dir", ck, "--save-every", "10"} +
                   more);
  job.start();
}

int loggedSteps(const QString& log) {
  QFile f(log);
  return f.open(QIODevice::ReadOnly) ? int(f.readAll().count("\"event\":\"step\"")) : 0;
}

// File > Attach to Run…, its file dialog answered with `log`.
void attachThroughTheMenu(MainWindow& w, const QString& log) {
  shardlab::testing::answerNextFileDialog(log);
  QAction* attach = shardlab::testing::fileAction(w, "Attach to Run...");
  QVERIFY(attach);
  attach->trigger();
}

int losses(TrainingTab* tab) { return int(tab->lossChart()->pointCount(0)); }

}  // namespace

class TestAttach : public QObject {
  Q_OBJECT

 private slots:
  void followsARunStartedElsewhereToItsEnd() {
    QTemporaryDir dir;
    const QString log = dir.filePath("run.jsonl"), ck = dir.filePath("ck");
    QProcess job;
    startJob(job, log, ck, 60);
    QTRY_VERIFY_WITH_TIMEOUT(loggedSteps(log) >= 3, 60000);  // the job is running when the user attaches

    MainWindow w;
    w.resize(1280, 800);
    w.show();
    TrainingTab* tab = w.training();
    QSignalSpy finished(tab, &TrainingTab::runFinished);
    attachThroughTheMenu(w, log);
    QVERIFY(tab->isRunning());
    auto* stop = tab->findChild<QPushButton*>("stop");
    QVERIFY(stop && stop->isEnabled());
    // What the log already held is drawn at once, then each step as it comes.
    QTRY_VERIFY_WITH_TIMEOUT(losses(tab) >= 3, 5000);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 90000);
    QCOMPARE(finished.first().at(0).toBool(), false);  // the job's own end, not a stop
    QCOMPARE(losses(tab), 60);
    QCOMPARE(tab->findChild<QProgressBar*>("progress")->value(), 60);
    QVERIFY(!stop->isEnabled());
    // Its checkpoints reached the Checkpoints tab as they committed.
    QCOMPARE(QDir(w.checkpoints()->root()).canonicalPath(), QDir(ck).canonicalPath());
    QTRY_COMPARE(w.checkpoints()->model()->rowCount(), 3);  // steps 40, 50 and 60: the newest 3 of its 6 saves
    QTRY_COMPARE_WITH_TIMEOUT(job.state(), QProcess::NotRunning, 30000);
    QCOMPARE(job.exitCode(), 0);
  }

  // A job killed and started again from its newest checkpoint writes its log anew: the window
  // reads it again from the top, draws the restarted run and sees it end.
  void aRestartedJobIsFollowedFromItsNewLog() {
    QTemporaryDir dir;
    const QString log = dir.filePath("run.jsonl"), ck = dir.filePath("ck");
    QProcess first;
    startJob(first, log, ck, 100000);
    QTRY_VERIFY_WITH_TIMEOUT(QDir(ck).entryList({"step_*"}, QDir::Dirs).size() >= 2, 90000);

    MainWindow w;
    w.show();
    TrainingTab* tab = w.training();
    QSignalSpy finished(tab, &TrainingTab::runFinished);
    QVERIFY(w.attachToRun(dir.path()));  // a run's folder: its one log is followed
    QTRY_VERIFY_WITH_TIMEOUT(losses(tab) >= 20, 10000);
    ::kill(pid_t(first.processId()), SIGKILL);  // the node went away
    QTRY_COMPARE_WITH_TIMEOUT(first.state(), QProcess::NotRunning, 10000);
    QTest::qWait(300);
    QVERIFY(tab->isRunning());  // a killed job writes no end: the window still follows

    QProcess second;
    startJob(second, log, ck, 40, {"--resume"});
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 90000);
    QCOMPARE(finished.first().at(0).toBool(), false);
    QTRY_COMPARE_WITH_TIMEOUT(second.state(), QProcess::NotRunning, 30000);
    QCOMPARE(second.exitCode(), 0);
    // Only the restarted run is drawn: from its checkpoint's step to 40.
    QCOMPARE(losses(tab), loggedSteps(log));
    QVERIFY(losses(tab) < 40);
    QCOMPARE(tab->findChild<QProgressBar*>("progress")->value(), 40);
  }

  // Stop on an attached run ends the following, not the run: the job goes on writing its log.
  void stopStopsOnlyTheFollowing() {
    QTemporaryDir dir;
    const QString log = dir.filePath("run.jsonl");
    QProcess job;
    startJob(job, log, dir.filePath("ck"), 100000);
    QTRY_VERIFY_WITH_TIMEOUT(loggedSteps(log) >= 3, 60000);
    MainWindow w;
    w.show();
    TrainingTab* tab = w.training();
    QSignalSpy finished(tab, &TrainingTab::runFinished);
    attachThroughTheMenu(w, log);
    QTRY_VERIFY_WITH_TIMEOUT(losses(tab) >= 3, 5000);
    QTest::mouseClick(tab->findChild<QPushButton*>("stop"), Qt::LeftButton);
    QCOMPARE(finished.count(), 1);
    QVERIFY(!tab->isRunning());
    const int drawn = losses(tab), logged = loggedSteps(log);
    QTRY_VERIFY_WITH_TIMEOUT(loggedSteps(log) > logged + 3, 30000);
    QCOMPARE(job.state(), QProcess::Running);
    QCOMPARE(losses(tab), drawn);  // no longer read
    auto* status = tab->findChild<QLabel*>("status");
    QVERIFY(status);
    QVERIFY2(status->text().startsWith("Not following"), qPrintable(status->text()));
    job.kill();
    job.waitForFinished(10000);
  }

  // A job whose node died writes no "end": once its log has not grown for a while the window says
  // the run may have stopped, and takes it back when the log grows again. A run's time is what its
  // log's own clock says, not the time since the window attached.
  void aQuietRunIsSaidToBeQuietAndItsTimeIsTheLogs() {
    QTemporaryDir dir;
    const QString log = dir.filePath("run.jsonl");
    auto append = [&](const QByteArray& line) {
      QFile f(log);
      QVERIFY(f.open(QIODevice::Append));
      f.write(line + "\n");
    };
    append(R"({"event":"start","total_steps":10,"steps_per_epoch":10,"batch_size":64,"first_step":0,"time":1000.0})");
    for (int i = 1; i <= 3; ++i)
      append(QString(R"({"event":"step","step":%1,"epoch":0,"loss":1.5,"accuracy":0.5,"learning_rate":0.001,)"
                     R"("step_time_s":0.5,"examples_per_s":128,"time":%2})")
                 .arg(i)
                 .arg(1000 + 10 * i)
                 .toUtf8());
    MainWindow w;
    w.show();
    TrainingTab* tab = w.training();
    auto* run = tab->findChild<ProcessRun*>();
    QVERIFY(run);
    run->setQuietAfterMs(1500);
    QSignalSpy finished(tab, &TrainingTab::runFinished);
    QVERIFY(w.attachToRun(log));
    auto* status = tab->findChild<QLabel*>("status");
    QTRY_COMPARE_WITH_TIMEOUT(losses(tab), 3, 5000);
    QVERIFY2(!status->text().contains("No word"), qPrintable(status->text()));
    QTRY_VERIFY_WITH_TIMEOUT(status->text().contains("No word for"), 5000);
    QVERIFY2(status->text().contains("last: step 3 of 10") && status->text().contains("still following"),
             qPrintable(status->text()));
    VERIFY_CONTAINS(status->toolTip(), log + " has not grown for");
    QVERIFY(tab->isRunning());
    // At 1024x768 the whole sentence shows.
    w.resize(1024, 768);
    QApplication::processEvents();
    QTRY_VERIFY2(status->heightForWidth(status->width()) <= status->height(),
                 qPrintable(QString("the text needs %1 px of height, the label has %2 (width %3)")
                                .arg(status->heightForWidth(status->width()))
                                .arg(status->height())
                                .arg(status->width())));
    QVERIFY(status->heightForWidth(status->width()) > status->fontMetrics().height());  // it did wrap
    append(R"({"event":"step","step":4,"epoch":0,"loss":1.25,"accuracy":0.5,"learning_rate":0.001,"step_time_s":0.5,"examples_per_s":128,"time":1040.0})");
    QTRY_COMPARE_WITH_TIMEOUT(losses(tab), 4, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(!status->text().contains("No word"), 2000);
    append(R"({"event":"end","cancelled":false,"time":1083.0})");
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    QVERIFY2(status->text().startsWith("Done: 4 steps in 1:23"), qPrintable(status->text()));
  }

  // A job that has not started writes no log: after the silence the window says it waits for one,
  // not that a run of 0 steps went quiet.
  void aLogNotYetWrittenIsWaitedFor() {
    QTemporaryDir dir;
    const QString log = dir.filePath("queued.jsonl");
    MainWindow w;
    w.show();
    auto* run = w.training()->findChild<ProcessRun*>();
    QVERIFY(run);
    run->setQuietAfterMs(1000);
    QVERIFY(w.attachToRun(log));
    auto* status = w.training()->findChild<QLabel*>("status");
    QTRY_VERIFY_WITH_TIMEOUT(status->text().contains("Nothing in the log for"), 5000);
    VERIFY_CONTAINS(status->text(), "may be queued");
    VERIFY_LACKS(status->text(), "step 0 of 0");
    QVERIFY(w.training()->isRunning());
    w.training()->stop();
  }

  void aFolderWithoutALogIsRefusedNamingIt() {
    QTemporaryDir dir;
    MainWindow w;
    w.show();
    QVERIFY(!w.attachToRun(dir.path()));
    QVERIFY(!w.training()->isRunning());
    auto* error = w.training()->findChild<QLabel*>("error");
    QVERIFY(error);
    QVERIFY2(error->text().contains(dir.path()) && error->text().contains("holds no .jsonl log"), qPrintable(error->text()));
  }
};

QTEST_MAIN(TestAttach)
#include "test_attach.moc"
