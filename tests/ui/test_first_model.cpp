// The path the product exists for, as a new user takes it: File > New, five layers dragged from
// the palette and wired port to port, their sizes typed into the Inspector, the loss and the
// Fashion-MNIST folder chosen in the project page, a two-device mesh and a rule added in Mesh &
// Rules, 50 steps trained from the Training tab, and the checkpoint exported from the Checkpoints
// tab. Only mouse and key events on the real widgets; the document is read, never written.
#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/engine/test_support.h"
#include "tests/ui/window_menus.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/port_item.h"
#include "ui/checkpoints/checkpoint_browser.h"
#include "ui/document/project_document.h"
#include "ui/main_window.h"
#include "ui/mesh/mesh_axes_model.h"
#include "ui/mesh/mesh_editor.h"
#include "ui/mesh/mesh_rules_tab.h"
#include "ui/mesh/rules_editor.h"
#include "ui/mesh/rules_model.h"
#include "ui/mesh/rules_view.h"
#include "ui/palette/layer_model.h"
#include "ui/palette/layer_palette.h"
#include "ui/training/line_chart.h"
#include "ui/training/training_tab.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

void settle() {
  QApplication::processEvents();
  QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
}

template <class T>
T* child(QWidget* w, const QString& name) {
  settle();
  return w->findChild<T*>(name);
}

// Press, move in steps (as a hand does), release.
void drag(QWidget* w, QPoint from, QPoint to) {
  QTest::mousePress(w, Qt::LeftButton, {}, from);
  for (int i = 1; i <= 6; ++i) QTest::mouseMove(w, from + (to - from) * i / 6);
  QTest::mouseRelease(w, Qt::LeftButton, {}, to);
}

// What a drag from the palette delivers to the canvas (QDrag::exec blocks on the offscreen
// platform, so the events are sent as the window system would).
bool dropOn(QWidget* viewport, QPoint at, const QMimeData* mime) {
  QDragEnterEvent enter(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &enter);
  QDragMoveEvent move(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &move);
  QDropEvent drop(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &drop);
  return drop.isAccepted();
}

// Opens a combo box's list and clicks the item `text`.
void pick(QComboBox* combo, const QString& text) {
  QVERIFY(combo);
  const int at = combo->findText(text);
  QVERIFY2(at >= 0, qPrintable(combo->objectName() + " has no '" + text + "'"));
  combo->showPopup();
  QAbstractItemView* list = combo->view();
  QTRY_VERIFY(list->isVisible());
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(list->model()->index(at, 0)).center());
  QTRY_VERIFY(!list->isVisible());
  QCOMPARE(combo->currentText(), text);
}

// Click into a line edit, replace its text, press Enter.
void typeInto(QLineEdit* e, const QString& text) {
  QVERIFY(e);
  QTest::mouseClick(e, Qt::LeftButton);
  QTest::keyClick(e, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(e, text);
  QTest::keyClick(e, Qt::Key_Return);
}

}  // namespace

class TestFirstModel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots");
    if (!QFileInfo::exists(QString::fromUtf8(data::kFashionMnistDefaultDir) + "/train-images-idx3-ubyte.gz"))
      QSKIP("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist, which the README's set-up installs)");
  }

  void fromFileNewToATrainedModel() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    MainWindow w;
    w.resize(1920, 1080);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ProjectDocument* doc = w.document();

    // File > New.
    QTest::keyClick(&w, Qt::Key_N, Qt::ControlModifier);
    QVERIFY(doc->project().graph.nodes.empty());
    QCOMPARE(doc->path(), QString());

    // Five layers from the palette, dropped left to right.
    GraphView* canvas = w.canvas();
    QWidget* viewport = canvas->viewport();
    auto* palette = w.findChild<LayerPalette*>();
    QVERIFY(palette);
    const QStringList types = {"Input", "Flatten", "Dense", "ReLU", "Dense"};
    const QStringList names = {"input", "flatten", "dense", "relu", "dense2"};
    for (int i = 0; i < types.size(); ++i) {
      const QModelIndex row = palette->proxy()->mapFromSource(palette->model()->indexOf(types[i]));
      std::unique_ptr<QMimeData> mime(palette->proxy()->mimeData({row}));
      QVERIFY(mime);
      const QPoint at(60 + i * 230, viewport->height() / 3);
      QVERIFY2(dropOn(viewport, at, mime.get()), qPrintable(types[i]));
      settle();
      QVERIFY2(canvas->graphScene()->node(names[i]), qPrintable(names[i]));
    }
    QCOMPARE(int(doc->project().graph.nodes.size()), 5);

    // Wired output to input, port to port.
    auto point = [&](const QGraphicsItem* item) { return canvas->mapFromScene(item->sceneBoundingRect().center()); };
    for (int i = 0; i + 1 < names.size(); ++i) {
      NodeItem* from = canvas->graphScene()->node(names[i]);
      NodeItem* to = canvas->graphScene()->node(names[i + 1]);
      drag(viewport, point(from->outputPort()), point(to->inputPort("in")));
      settle();
    }
    QCOMPARE(int(doc->project().graph.edges.size()), 4);

    // Sizes typed into the Inspector, each node selected by a click on its title.
    auto select = [&](const QString& name) {
      NodeItem* n = canvas->graphScene()->node(name);
      QTest::mouseClick(viewport, Qt::LeftButton, {},
                        canvas->mapFromScene(n->mapToScene(QPointF(n->size().width() / 2, n->headerRect().height() / 2))));
      settle();
      QCOMPARE(doc->selection(), QStringList{name});
    };
    select("input");
    typeInto(child<QLineEdit>(&w, "field:shape"), "28, 28");
    select("dense");
    typeInto(child<QLineEdit>(&w, "field:features"), "128");
    select("dense2");
    typeInto(child<QLineEdit>(&w, "field:features"), "10");
    QCOMPARE(doc->design().graph.find("dense2")->output.shape, (Shape{32, 10}));

    // Nothing selected: the project page. Softmax cross-entropy on dense2, Fashion-MNIST.
    QTest::mouseClick(viewport, Qt::LeftButton, {}, QPoint(viewport->width() - 40, viewport->height() - 40));
    settle();
    QVERIFY(doc->selection().isEmpty());
    pick(child<QComboBox>(&w, "lossType"), "softmax_cross_entropy");
    pick(child<QComboBox>(&w, "lossOutput"), "dense2");
    pick(child<QComboBox>(&w, "dataType"), "Fashion-MNIST folder");
    // The folder chosen through the section's folder dialog (Qt's own, answered through its API).
    const QString fashion = QString::fromUtf8(data::kFashionMnistDefaultDir);
    QWidget* browse = child<QWidget>(&w, "dataDirBrowse");  // (child() runs the event loop: before the answer is armed)
    shardlab::testing::answerNextFileDialog(fashion);
    QTest::mouseClick(browse, Qt::LeftButton);
    QTRY_COMPARE(doc->project().data_json.value("dir", std::string()), fashion.toStdString());
    VERIFY_CONTAINS(child<QLabel>(&w, "dataFound")->text(), "60,000 training examples of (28, 28) with class labels 0-9");
    QVERIFY2(doc->design().ok(), doc->design().errors.empty() ? "" : doc->design().errors.front().c_str());

    // Mesh & Rules: a data axis of two devices, and batch split over it.
    QTabWidget* tabs = w.tabs();
    auto* meshRules = w.findChild<MeshRulesTab*>();
    QVERIFY(meshRules);
    auto openTab = [&](const QString& title) {
      int index = -1;
      for (int i = 0; i < tabs->count(); ++i)
        if (tabs->tabText(i).remove('&') == title) index = i;
      QVERIFY2(index >= 0, qPrintable(title));
      QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(index).center());
      QCOMPARE(tabs->currentIndex(), index);
      settle();
    };
    openTab("Mesh  Rules");
    MeshEditor* mesh = meshRules->meshEditor();
    if (mesh->model()->rowCount() == 0) QTest::mouseClick(child<QPushButton>(mesh, "addAxis"), Qt::LeftButton);
    QCOMPARE(mesh->model()->index(0, MeshAxesModel::NameColumn).data().toString(), QString("data"));
    auto* size = qobject_cast<QSpinBox*>(mesh->axesView()->indexWidget(mesh->model()->index(0, MeshAxesModel::SizeColumn)));
    QVERIFY(size);
    QTest::mouseClick(size, Qt::LeftButton);
    QTest::keyClick(size, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(size, "2");
    QTest::keyClick(size, Qt::Key_Return);
    QTRY_COMPARE(sharding::project_mesh(doc->project()).str(), std::string("data=2"));

    RulesEditor* rules = meshRules->rulesEditor();
    QTest::mouseClick(child<QPushButton>(rules, "addRule"), Qt::LeftButton);
    const int row = rules->model()->rowCount() - 1;
    QCOMPARE(rules->model()->index(row, RulesModel::LogicalColumn).data().toString(), QString("batch"));
    const QModelIndex meshCell = rules->model()->index(row, RulesModel::MeshColumn);
    rules->view()->scrollTo(meshCell);
    QTest::mouseClick(rules->view()->viewport(), Qt::LeftButton, {}, rules->view()->visualRect(meshCell).center());
    QCOMPARE(rules->view()->currentIndex(), meshCell);
    QTest::mouseDClick(rules->view()->viewport(), Qt::LeftButton, {}, rules->view()->visualRect(meshCell).center());
    auto* combo = rules->view()->findChild<QComboBox*>("meshAxesPicker");
    QVERIFY2(combo, "the rule's mesh cell opened no list");
    pick(combo, "data");
    QTRY_COMPARE(sharding::rules_str(sharding::project_rules(doc->project())), std::string("batch=data"));
    QVERIFY2(doc->design().ok(), doc->design().errors.empty() ? "" : doc->design().errors.front().c_str());

    // Training: 50 steps, checkpoints into a folder, started with Ctrl+Return.
    openTab("Training");
    TrainingTab* training = w.training();
    auto* steps = child<QSpinBox>(training, "steps");
    QVERIFY(steps);
    QTest::mouseClick(steps, Qt::LeftButton);
    QTest::keyClick(steps, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(steps, "50");
    QTest::keyClick(steps, Qt::Key_Return);
    QTRY_COMPARE(doc->project().training.steps, int64_t(50));
    const QString ckpt = tmp.filePath("ckpt");
    typeInto(child<QLineEdit>(training, "checkpointDir"), ckpt);
    QSignalSpy finished(training, &TrainingTab::runFinished);
    QSignalSpy failed(training, &TrainingTab::runFailed);
    QSignalSpy reported(training, &TrainingTab::stepReported);
    // The window is the active one again once the lists it opened have closed (the offscreen
    // platform does not hand activation back by itself), as it is on a desktop.
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(&w, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(training->isRunning() || finished.count() + failed.count() > 0, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 180000);
    QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.first().at(0).toString()));
    QCOMPARE(finished.first().at(0).toBool(), false);  // not cancelled
    QCOMPARE(reported.count(), 50);
    QCOMPARE(training->lossChart()->pointCount(training->lossChart()->seriesIndex("train")), 50);
    // The mean of the first five batches' losses against the last five's (one batch is noisy).
    double first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += reported.at(i).at(1).toDouble() / 5, last += reported.at(45 + i).at(1).toDouble() / 5;
    QVERIFY2(last < 0.6 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    QVERIFY(QFileInfo::exists(ckpt + "/step_000050/COMMITTED"));
    QVERIFY(w.grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/first_model_trained.png"));

    // Checkpoints: the run's last step, exported through the Export button's file dialog.
    openTab("Checkpoints");
    CheckpointBrowser* browser = w.checkpoints();
    QTRY_VERIFY(!browser->selectedCheckpoint().isEmpty() || browser->root() == ckpt);
    if (browser->root() != ckpt) typeInto(child<QLineEdit>(browser, "checkpointRoot"), ckpt);
    // A click on step 50's row in the list.
    auto* list = browser->findChild<QTableView*>();
    QVERIFY(list);
    QModelIndex step50;
    for (int r = 0; r < list->model()->rowCount(); ++r)
      if (list->model()->index(r, 0).data().toLongLong() == 50) step50 = list->model()->index(r, 0);
    QVERIFY2(step50.isValid(), "step 50 is not listed");
    list->scrollTo(step50);
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(step50).center());
    QTRY_VERIFY(browser->selectedCheckpoint().endsWith("step_000050"));
    const QString out = tmp.filePath("model.safetensors");
    auto* exportButton = child<QPushButton>(browser, "exportButton");
    QVERIFY(exportButton && exportButton->isEnabled());
    shardlab::testing::answerNextFileDialog(out);
    QSignalSpy exported(browser, &CheckpointBrowser::exportFinished);
    QTest::mouseClick(exportButton, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 30000);
    QVERIFY2(exported.first().at(0).toBool(), qPrintable(exported.first().at(1).toString()));
    const checkpoint::SafetensorsFile f = checkpoint::read_safetensors(out.toStdString());
    QStringList tensors;
    for (const auto& t : f.tensors) tensors << QString::fromStdString(t.name);
    tensors.sort();
    QCOMPARE(tensors, (QStringList{"dense/bias", "dense/kernel", "dense2/bias", "dense2/kernel"}));
  }
};

QTEST_MAIN(TestFirstModel)
#include "test_first_model.moc"
