// The window at the sizes people use, 1024×768 to 3840×2160 at HiDPI scale 2 (a 1920×1080 logical
// window): what a person needs is on screen without scrolling the panel it sits in (Start and
// Stop, the Data section, the Problems list, at least five array rows), every one of them has a
// size, and a screenshot of each size is kept for review.
#include <QAbstractScrollArea>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QGroupBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/main_window.h"
#include "ui/mesh/issues_list.h"
#include "ui/mesh/mesh_editor.h"
#include "ui/mesh/mesh_rules_tab.h"
#include "ui/mesh/rules_editor.h"
#include "ui/mesh/spec_table.h"
#include "ui/sharding/sharding_tab.h"
#include "ui/training/line_chart.h"
#include "ui/training/training_tab.h"

using namespace shardlab::ui;

namespace {

// Why `w` cannot be seen as the window is, or "" when it can: shown, not empty, inside the window,
// and inside the visible part of every scroll area it sits in.
QString hidden(QWidget* w, QWidget* window) {
  if (!w) return "missing";
  if (!w->isVisible()) return "not shown";
  if (w->width() < 4 || w->height() < 4) return QString("%1x%2").arg(w->width()).arg(w->height());
  const QRect inWindow(w->mapTo(window, QPoint(0, 0)), w->size());
  if (!window->rect().contains(inWindow)) return QString("at %1,%2 %3x%4, outside the window")
                                                   .arg(inWindow.x()).arg(inWindow.y()).arg(inWindow.width()).arg(inWindow.height());
  for (QWidget* p = w->parentWidget(); p && p != window; p = p->parentWidget())
    if (auto* area = qobject_cast<QAbstractScrollArea*>(p); area && area->viewport()->isAncestorOf(w)) {
      const QRect inView(w->mapTo(area->viewport(), QPoint(0, 0)), w->size());
      if (!area->viewport()->rect().contains(inView))
        return QString("scrolled out of %1 (%2 of %3 px tall shown)")
            .arg(area->objectName().isEmpty() ? area->metaObject()->className() : area->objectName())
            .arg(area->viewport()->rect().intersected(inView).height())
            .arg(inView.height());
    }
  return {};
}

// The scroll area a tab's page sits in.
QScrollArea* scrollAreaOf(QWidget* page) {
  for (QWidget* p = page->parentWidget(); p; p = p->parentWidget())
    if (auto* area = qobject_cast<QScrollArea*>(p)) return area;
  return nullptr;
}

void openTab(MainWindow& w, QWidget* page) {
  w.showTab(page);
  QApplication::processEvents();
}

}  // namespace

class TestWindowSizes : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();  // the default layout, as a first start has it
    QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots");
  }

  void theControlsAreOnScreen_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("roomy");  // 1280×720 and above: no scrolling for the named controls
    QTest::newRow("1024x768") << QSize(1024, 768) << false;
    QTest::newRow("1280x720") << QSize(1280, 720) << true;
    QTest::newRow("1920x1080") << QSize(1920, 1080) << true;
    // 3840×2160 at scale 2 lays out as 1920×1080 logical pixels: CTest runs this row again as
    // test_window_sizes_hidpi with QT_SCALE_FACTOR=2.
  }

  void theControlsAreOnScreen() {
    QFETCH(QSize, size);
    QFETCH(bool, roomy);
    QSettings().clear();
    MainWindow w;
    QVERIFY(w.openFile(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json"));
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE(w.size(), size);
    QTest::qWait(100);
    // Under QT_SCALE_FACTOR=2 (the hidpi run) a 1920×1080 window is a 3840×2160 screen's.
    const qreal scale = w.devicePixelRatio();
    const QString tag = scale > 1 ? QString("%1x%2-scale%3").arg(size.width() * scale).arg(size.height() * scale).arg(scale)
                                  : QString("%1x%2").arg(size.width()).arg(size.height());

    QStringList problems;
    auto expect = [&](const QString& what, QWidget* widget, bool needed) {
      const QString why = hidden(widget, &w);
      if (!why.isEmpty() && needed) problems << what + ": " + why;
    };
    // Nothing selected: the project page, with its Data section.
    expect("Data section", w.findChild<QGroupBox*>("dataSection"), roomy);
    if (scale > 1) QCOMPARE(w.grab().size(), size * scale);
    expect("Data source", w.findChild<QWidget*>("dataType"), true);

    openTab(w, w.training());
    expect("Start", w.training()->findChild<QPushButton*>("start"), true);
    expect("Stop", w.training()->findChild<QPushButton*>("stop"), true);
    // The charts never scroll sideways: a narrow panel stacks them (and scrolls down) instead.
    QTest::qWait(50);
    if (QScrollArea* page = scrollAreaOf(w.training()); page->horizontalScrollBar()->maximum() > 0)
      problems << QString("Training: scrolls sideways by %1 px").arg(page->horizontalScrollBar()->maximum());
    auto* loss = w.training()->lossChart();
    auto* accuracy = w.training()->accuracyChart();
    if (accuracy->mapTo(&w, QPoint(accuracy->width(), 0)).x() > w.width())
      problems << QString("Training: the accuracy chart ends past the window's right edge");
    if (size.width() >= 1920 && accuracy->mapTo(&w, QPoint(0, 0)).x() <= loss->mapTo(&w, QPoint(0, 0)).x())
      problems << QString("Training: the accuracy chart is not beside the loss chart on a wide panel");
    QVERIFY(w.grab().save(QString(SHARDLAB_BINARY_DIR "/ui-screenshots/window-%1-training.png").arg(tag)));

    // The Sharding tab: the array tree keeps room for its names beside the drawing, and the page
    // does not scroll sideways.
    auto* sharding = w.findChild<ShardingTab*>();
    openTab(w, sharding);
    QTest::qWait(50);
    auto* tree = sharding->findChild<QTreeView*>("arrayTree");
    const QRect treeShown = tree->visibleRegion().boundingRect();  // the page may scroll down, not sideways
    if (treeShown.width() < 180 || treeShown.height() < 100)
      problems << QString("Array tree: %1x%2 px of it in view").arg(treeShown.width()).arg(treeShown.height());
    if (roomy && tree->columnWidth(0) > tree->viewport()->width() + 40)
      problems << QString("Array tree: names %1 px wide in %2 px").arg(tree->columnWidth(0)).arg(tree->viewport()->width());
    if (QScrollArea* page = scrollAreaOf(sharding); page->horizontalScrollBar()->maximum() > 0)
      problems << QString("Sharding: scrolls sideways by %1 px").arg(page->horizontalScrollBar()->maximum());
    QVERIFY(w.grab().save(QString(SHARDLAB_BINARY_DIR "/ui-screenshots/window-%1-sharding.png").arg(tag)));

    auto* mesh = w.findChild<MeshRulesTab*>();
    openTab(w, mesh);
    auto* issues = mesh->findChild<IssuesList*>("issues");
    expect("Problems", issues, roomy);
    // Problems wrap to their column at every size: a sentence read by scrolling sideways is not read.
    QTest::qWait(50);
    if (issues->horizontalScrollBar()->maximum() > 0)
      problems << QString("Problems: scrolls sideways by %1 px").arg(issues->horizontalScrollBar()->maximum());
    // A narrow panel stacks the mesh and rules over the arrays, and the memory over the problems:
    // the page scrolls down, never sideways, and the problems sit inside the window's width.
    if (QScrollArea* page = scrollAreaOf(mesh); page->horizontalScrollBar()->maximum() > 0)
      problems << QString("Mesh & Rules: scrolls sideways by %1 px").arg(page->horizontalScrollBar()->maximum());
    if (const QRect r(issues->mapTo(&w, QPoint(0, 0)), issues->size()); r.left() < 0 || r.right() >= w.width())
      problems << QString("Problems: %1 px to %2 px across a %3 px window").arg(r.left()).arg(r.right()).arg(w.width());
    QTableView* arrays = mesh->specTable()->view();
    expect("Arrays", arrays, roomy);
    const int rowHeight = arrays->rowHeight(0);
    const int rowsShown = rowHeight > 0 ? arrays->viewport()->height() / rowHeight : 0;
    if (roomy && rowsShown < 5) problems << QString("Arrays: %1 rows shown, 5 wanted").arg(rowsShown);
    if (roomy && arrays->columnWidth(0) < 120) problems << QString("Arrays: names %1 px wide").arg(arrays->columnWidth(0));
    QVERIFY(w.grab().save(QString(SHARDLAB_BINARY_DIR "/ui-screenshots/window-%1-mesh.png").arg(tag)));

    // A layout with problems (FSDP over data=3, which divides no kernel): their long sentences
    // wrap too.
    QTemporaryDir dir;
    QFile in(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject project = QJsonDocument::fromJson(in.readAll()).object();
    project["mesh"] = QJsonObject{{"axes", QJsonObject{{"data", 3}}}};
    project["logical_axis_rules"] = QJsonArray{QJsonArray{"batch", "data"}, QJsonArray{"embed", "data"}};
    QFile out(dir.filePath("bad.shardlab.json"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(project).toJson());
    out.close();
    QVERIFY(w.openFile(out.fileName()));
    openTab(w, mesh);
    QTest::qWait(50);
    QVERIFY2(issues->errorCount() > 0, "the layout should have problems");
    if (issues->horizontalScrollBar()->maximum() > 0)
      problems << QString("Problems (with errors): scrolls sideways by %1 px").arg(issues->horizontalScrollBar()->maximum());
    QVERIFY2(problems.isEmpty(), qPrintable(tag + ": " + problems.join("; ")));
  }

  // Made larger or smaller, the window keeps the panels' share of it (docks otherwise keep their
  // pixels, and a grown window gave all of its new room to the graph); made twice as wide as it
  // is tall, the panels move beside the graph, and back below it when it is not.
  void thePanelsReflowAsTheWindowChangesSize() {
    QSettings().clear();
    MainWindow w;
    QVERIFY(w.openFile(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json"));
    w.resize(1024, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTest::qWait(100);
    auto* panels = w.findChild<QDockWidget*>("tabsDock");
    QWidget* graph = w.centralWidget();
    const double share = double(panels->height()) / w.height();
    QVERIFY2(panels->geometry().top() >= graph->geometry().bottom(), "the panels start below the graph");

    w.resize(1920, 1080);
    QTRY_COMPARE(w.size(), QSize(1920, 1080));
    QTest::qWait(100);
    const double grown = double(panels->height()) / w.height();
    QVERIFY2(std::abs(grown - share) < 0.04, qPrintable(QString("the panels' share went from %1 to %2").arg(share).arg(grown)));
    QVERIFY(hidden(w.training()->findChild<QPushButton*>("start"), &w).isEmpty() || !w.training()->isVisible());

    w.resize(2560, 1080);
    QTRY_COMPARE(w.size(), QSize(2560, 1080));
    QTest::qWait(100);
    QVERIFY2(panels->geometry().left() >= graph->geometry().right(), "the panels should be right of the graph");
    QVERIFY2(panels->height() > w.height() * 3 / 4, qPrintable(QString("beside the graph the panels are %1 px tall").arg(panels->height())));
    QVERIFY2(graph->height() > w.height() * 3 / 4, qPrintable(QString("beside the panels the graph is %1 px tall").arg(graph->height())));
    QVERIFY2(panels->width() > 700, qPrintable(QString("the panels are %1 px wide").arg(panels->width())));
    openTab(w, w.training());
    QVERIFY(hidden(w.training()->findChild<QPushButton*>("start"), &w).isEmpty());
    QVERIFY(w.grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/window-2560x1080-training.png"));

    w.resize(1280, 720);
    QTRY_COMPARE(w.size(), QSize(1280, 720));
    QTest::qWait(100);
    QVERIFY2(panels->geometry().top() >= graph->geometry().bottom(), "the panels go back below the graph");
    QVERIFY2(panels->height() >= w.height() * 2 / 5 - 10, qPrintable(QString("below the graph the panels are %1 px tall").arg(panels->height())));
  }
};

QTEST_MAIN(TestWindowSizes)
#include "test_window_sizes.moc"
