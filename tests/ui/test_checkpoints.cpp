// The Checkpoints tab on real checkpoints written by a real training run: it lists each committed
// step with its metrics, follows new saves, offers resuming, exports parameters on a background
// thread to a file safetensors readers accept, and reports a failed export instead of crashing.
#include <QAbstractItemModelTester>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "engine/checkpoint/safetensors.h"
#include "tests/engine/test_support.h"
#include "tests/engine/two_process_checkpoint.h"
#include "ui/checkpoints/checkpoint_browser.h"
#include "ui/checkpoints/checkpoint_list_model.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

// Trains deep-mlp-small for `steps` steps on one thread, saving every step under `dir`.
void train_with_checkpoints(const QString& dir, int steps, int keep = 5) {
  project::Project p = project::load_project(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json");
  runtime::TrainOptions o;
  o.steps = steps;
  o.threads = 1;
  o.batch_size = 16;
  o.checkpoint_dir = dir.toStdString();
  o.save_every = 1;
  o.keep = keep;
  runtime::Trainer t(p, o);
  t.run();
}

}  // namespace

class TestCheckpoints : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void listsEveryCommittedStepWithItsMetrics() {
    QTemporaryDir dir;
    train_with_checkpoints(dir.path(), 3);
    // An interrupted save's leftover is not a checkpoint.
    QDir(dir.path()).mkpath("step_000009.tmp-123");
    CheckpointBrowser b;
    QAbstractItemModelTester tester(b.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    b.setRoot(dir.path());
    QCOMPARE(b.model()->rowCount(), 3);
    for (int r = 0; r < 3; ++r) {
      QCOMPARE(b.model()->index(r, CheckpointListModel::Step).data().toLongLong(), qlonglong(r + 1));
      bool finite = false;
      b.model()->index(r, CheckpointListModel::Loss).data().toString().toDouble(&finite);
      QVERIFY2(finite, "every checkpoint records its step's loss");
      QCOMPARE(b.model()->index(r, CheckpointListModel::Mesh).data().toString(), QString("(one device)"));
    }
    QVERIFY(b.selectedCheckpoint().isEmpty());
    b.selectStep(2);
    VERIFY_CONTAINS(b.selectedCheckpoint(), "step_000002");
  }

  // A checkpoint saved over processes (each process's blocks in a file of its own) says so when
  // selected.
  void aCheckpointSavedOverProcessesSaysSo() {
    QTemporaryDir dir;
    const Tensor w = testing::counting(6, 8), b = testing::counting(1, 8);
    testing::write_two_process_step(dir.path().toStdString(), w, Tensor({8}, b.data), 4);
    CheckpointBrowser browser;
    browser.resize(1024, 400);
    browser.show();
    browser.setRoot(dir.path());
    QCOMPARE(browser.model()->rowCount(), 1);
    auto* table = browser.findChild<QTableView*>();
    QVERIFY(table);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(browser.model()->index(0, 0)).center());
    auto* details = browser.findChild<QLabel*>("checkpointDetails");
    QVERIFY(details);
    VERIFY_CONTAINS(details->text(), "Step 4");
    VERIFY_CONTAINS(details->text(), "2 arrays");
    VERIFY_CONTAINS(details->text(), "Saved over processes: 2 files");
  }

  void followsNewSavesInTheDirectory() {
    QTemporaryDir dir;
    CheckpointBrowser b;
    b.setRoot(dir.path());
    QCOMPARE(b.model()->rowCount(), 0);
    train_with_checkpoints(dir.path(), 2);
    QTRY_COMPARE(b.model()->rowCount(), 2);
  }

  void resumeAsksForTheSelectedCheckpoint() {
    QTemporaryDir dir;
    train_with_checkpoints(dir.path(), 2);
    CheckpointBrowser b;
    b.setRoot(dir.path());
    QSignalSpy resume(&b, &CheckpointBrowser::resumeRequested);
    auto* button = b.findChild<QPushButton*>("resumeButton");
    QVERIFY(button);
    QVERIFY(!button->isEnabled());
    b.selectStep(1);
    QVERIFY(button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);
    QCOMPARE(resume.count(), 1);
    VERIFY_CONTAINS(resume.first().first().toString(), "step_000001");
  }

  void exportsParametersInTheBackground() {
    QTemporaryDir dir;
    train_with_checkpoints(dir.path(), 1);
    CheckpointBrowser b;
    b.setRoot(dir.path());
    b.selectStep(1);
    QSignalSpy done(&b, &CheckpointBrowser::exportFinished);
    const QString out = dir.filePath("params.safetensors");
    QVERIFY(b.startExport(b.selectedCheckpoint(), "safetensors", out));
    QVERIFY(done.wait(20000));
    QVERIFY2(done.first().at(0).toBool(), qPrintable(done.first().at(1).toString()));
    const checkpoint::SafetensorsFile f = checkpoint::read_safetensors(out.toStdString());
    QVERIFY(!f.tensors.empty());
    for (const auto& t : f.tensors) VERIFY_LACKS(QString::fromStdString(t.name), "params/");
  }

  void aFailedExportIsReported() {
    QTemporaryDir dir;
    train_with_checkpoints(dir.path(), 1);
    // Corrupt the tensors: the export must say which file is bad.
    const QString tensors = dir.filePath("step_000001/model.safetensors");
    std::ofstream(tensors.toStdString(), std::ios::trunc) << "garbage";
    CheckpointBrowser b;
    b.setRoot(dir.path());
    b.selectStep(1);
    QSignalSpy done(&b, &CheckpointBrowser::exportFinished);
    QVERIFY(b.startExport(b.selectedCheckpoint(), "safetensors", dir.filePath("out.safetensors")));
    QVERIFY(done.wait(20000));
    QVERIFY(!done.first().at(0).toBool());
    VERIFY_CONTAINS(done.first().at(1).toString(), "model.safetensors");
    QVERIFY(!QFileInfo::exists(dir.filePath("out.safetensors")));
  }
};

QTEST_MAIN(TestCheckpoints)
#include "test_checkpoints.moc"
