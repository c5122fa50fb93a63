// The main window as a user meets it: every example opens, the title carries the file and the
// modified mark, save and reopen give the same project, recent files, drag-and-drop opening, the
// unsaved-changes prompt, clipboard commands, themes, a malformed file that leaves the open document
// alone, a data source that does not fit the model shown before Start, and a rendering of every tab
// kept as a review artifact.
#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QToolBar>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QUrl>
#include <QtTest>
#include <fstream>

#include "tests/engine/test_support.h"
#include "engine/api/build_info.h"
#include "tests/ui/window_menus.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/help/shortcuts_dialog.h"
#include "ui/help/user_guide.h"
#include "ui/main_window.h"
#include "ui/training/training_tab.h"
#include "ui/mesh/issues_list.h"

using namespace shardlab;
using namespace shardlab::ui;
using shardlab::testing::fileAction;

namespace {

QString example(const QString& name) { return QString(SHARDLAB_SOURCE_DIR "/projects/") + name + ".shardlab.json"; }

// Answers the next modal message box with `button` once it shows.
void answerNextMessageBox(QMessageBox::StandardButton button, QString* text = nullptr) {
  QTimer::singleShot(0, [=] {
    for (int i = 0; i < 200; ++i) {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
        if (text) *text = box->text();
        box->button(button)->click();
        return;
      }
      QTest::qWait(10);
    }
  });
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots");
  }

  void everyExampleOpens_data() {
    QTest::addColumn<QString>("name");
    for (const QFileInfo& f : QDir(SHARDLAB_SOURCE_DIR "/projects").entryInfoList({"*.shardlab.json"}))
      QTest::newRow(qPrintable(f.fileName())) << f.fileName().remove(".shardlab.json");
  }
  void everyExampleOpens() {
    QFETCH(QString, name);
    MainWindow w;
    QVERIFY(w.openFile(example(name)));
    QVERIFY(w.document()->design().ok());
    VERIFY_CONTAINS(w.windowTitle(), name + ".shardlab.json");
    QVERIFY(!w.isWindowModified());
    QCOMPARE(w.recentFiles().first(), QFileInfo(example(name)).absoluteFilePath());
  }

  // File > Import Hugging Face Model…: the model folder and the project file picked in Qt's own
  // dialogs, the import on a worker thread, then the imported project open (a Llama: its blocks,
  // their grouped-query attention) and the status bar naming the checkpoint Start continues from.
  void importHuggingFaceModelOpensItsProject() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTemporaryDir dir;
    const QString project = dir.filePath("imported.shardlab.json");
    QSignalSpy imported(&w, &MainWindow::modelImported);
    shardlab::testing::answerFileDialogs({SHARDLAB_SOURCE_DIR "/tests/reference/hf/llama-tiny", project});
    QAction* import = shardlab::testing::fileAction(w, "Import Hugging Face Model...");
    QVERIFY(import);
    import->trigger();
    QVERIFY(imported.wait(60000));
    QCOMPARE(QFileInfo(w.document()->path()).absoluteFilePath(), QFileInfo(project).absoluteFilePath());
    const graph::Node* blocks = w.document()->project().graph.find("blocks");
    QVERIFY(blocks && blocks->body && blocks->body->find("attn"));
    QCOMPARE(blocks->body->find("attn")->params["num_kv_heads"].get<int>(), 2);
    QVERIFY(w.document()->design().ok());
    VERIFY_CONTAINS(w.statusBar()->currentMessage(), "imported.init/step_000000");
    QVERIFY(QFileInfo::exists(dir.filePath("imported.init/step_000000")));
  }

  // While a slow check runs on its worker, the status bar says so and every view draws the edited
  // project with the previous check (a node's new width it does not know yet, a node it still has
  // that is gone), without failing; the check then lands and the label goes. The width is typed
  // into the Inspector; the node goes by Edit > Delete.
  void everyViewDrawsAnEditWhileItsCheckRuns() {
    MainWindow w;
    w.resize(1024, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFile(example("fashion-mlp")));
    ProjectDocument* doc = w.document();
    doc->setInlineCheckBudgetMs(0);
    QLabel* label = w.findChild<QLabel*>("checkingLabel");
    QVERIFY(label);
    QVERIFY(!label->isVisible());
    doc->setSelection({"dense1"});
    QLineEdit* features = w.findChild<QLineEdit*>("field:features");
    QVERIFY(features && features->isVisible());
    QTest::mouseClick(features, Qt::LeftButton);
    QTest::keyClick(features, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(features, "300");
    QCOMPARE(doc->project().graph.find("dense1")->params["features"], graph::Json(300));
    QVERIFY(doc->isChecking());
    QVERIFY(label->isVisible());
    // Every tab drawn with the stale check.
    for (QTabWidget* tabs : w.findChildren<QTabWidget*>())
      for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        QCoreApplication::processEvents();
      }
    QTRY_VERIFY_WITH_TIMEOUT(!doc->isChecking(), 30000);
    QVERIFY(!label->isVisible());
    auto width = [&](const char* name) {
      for (const graph::NodeReport& n : doc->design().graph.nodes)
        if (n.name == name) return n.output.shape.back();
      return int64_t(-1);
    };
    QCOMPARE(width("dense1"), int64_t(300));
    // Edit > Delete on the selected node (the window's own command; its Delete key needs an active
    // window, which a bare X server does not give).
    QAction* remove = nullptr;
    for (QAction* menu : w.menuBar()->actions())
      if (menu->text().remove('&') == "Edit")
        for (QAction* a : menu->menu()->actions())
          if (a->text().remove('&') == "Delete") remove = a;
    QVERIFY(remove && remove->isEnabled());
    remove->trigger();
    QVERIFY(!doc->project().graph.find("dense1"));
    QVERIFY(doc->isChecking());
    doc->setSelection({"dense2"});
    QCoreApplication::processEvents();
    QTRY_VERIFY_WITH_TIMEOUT(!doc->isChecking(), 30000);
    QVERIFY(!label->isVisible());
    // The check of the newest project: dense1 is gone from it, and dense2 lost its input.
    const auto& nodes = doc->design().graph.nodes;
    QVERIFY(std::none_of(nodes.begin(), nodes.end(), [&](const graph::NodeReport& n) { return n.name == "dense1"; }));
    QVERIFY(!doc->design().ok());
    // Undo the delete: that project was checked before, so its check is back at once, 300 wide.
    doc->undoStack()->undo();
    QVERIFY(!doc->isChecking());
    QCOMPARE(width("dense1"), int64_t(300));
  }

  void defaultProjectIsFashionMlpUntitled() {
    MainWindow w;
    QVERIFY(w.openDefaultProject());
    QCOMPARE(QString::fromStdString(w.document()->project().name), QString("fashion-mlp"));
    VERIFY_CONTAINS(w.windowTitle(), "untitled");
  }

  // File > New (Ctrl+N) and Close Project both leave an empty, untitled project: no nodes, nothing
  // to undo, not modified, and a design check that says what is missing rather than crashing.
  void newAndCloseGiveAnEmptyProject() {
    MainWindow w;
    for (const QString& command : {QString("New"), QString("Close Project")}) {
      w.openFile(example("fashion-mlp"));
      QVERIFY(!w.document()->project().graph.nodes.empty());
      QAction* a = fileAction(w, command);
      QVERIFY2(a, qPrintable(command));
      a->trigger();
      QVERIFY2(w.document()->project().graph.nodes.empty(), qPrintable(command));
      QVERIFY(w.document()->path().isEmpty());
      QVERIFY(!w.isWindowModified());
      QVERIFY(!w.document()->undoStack()->canUndo());
      VERIFY_CONTAINS(w.windowTitle(), "untitled");
      QStringList errors;
      for (const std::string& e : w.document()->design().errors) errors << QString::fromStdString(e);
      VERIFY_CONTAINS(errors.join('\n'), "needs exactly one Input node, found 0");
      VERIFY_CONTAINS(errors.join('\n'), "loss.output: not set yet");
    }
    QCOMPARE(fileAction(w, "New")->shortcut(), QKeySequence(QKeySequence::New));
    // Every tab draws the empty project.
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (int i = 0; i < w.tabs()->count(); ++i) {
      w.tabs()->setCurrentIndex(i);
      QVERIFY(!w.grab().isNull());
    }
  }

  // The graph is the window's central area, the layer palette and inspector beside it and the
  // tabs below: at 1920x1080 the graph gets at least half the height, whichever tab is shown.
  void theGraphIsTheCentralArea() {
    MainWindow w;
    QVERIFY(w.openFile(example("fashion-mlp")));
    w.resize(1920, 1080);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.centralWidget(), static_cast<QWidget*>(w.canvas()));
    auto* palette = w.findChild<QDockWidget*>("paletteDock");
    auto* inspector = w.findChild<QDockWidget*>("inspectorDock");
    auto* tabs = w.findChild<QDockWidget*>("tabsDock");
    QVERIFY(palette && inspector && tabs);
    QCOMPARE(w.dockWidgetArea(palette), Qt::LeftDockWidgetArea);
    QCOMPARE(w.dockWidgetArea(inspector), Qt::RightDockWidgetArea);
    QCOMPARE(w.dockWidgetArea(tabs), Qt::BottomDockWidgetArea);
    QCOMPARE(tabs->widget(), static_cast<QWidget*>(w.tabs()));
    for (int i = 0; i < w.tabs()->count(); ++i) {
      w.tabs()->setCurrentIndex(i);
      QApplication::processEvents();
      const QString tab = w.tabs()->tabText(i);
      QVERIFY2(w.canvas()->height() >= w.height() / 2,
               qPrintable(QString("%1: graph %2 px of a %3 px window").arg(tab).arg(w.canvas()->height()).arg(w.height())));
      QVERIFY2(w.canvas()->width() >= w.width() / 2, qPrintable(tab));
      QVERIFY2(w.tabs()->height() >= 250, qPrintable(QString("%1: tabs %2 px high").arg(tab).arg(w.tabs()->height())));
    }
    // Beside and below, not over: the docks do not overlap the graph.
    const QRect graph(w.canvas()->mapTo(&w, QPoint(0, 0)), w.canvas()->size());
    QVERIFY(QRect(palette->mapTo(&w, QPoint(0, 0)), palette->size()).right() < graph.left());
    QVERIFY(QRect(inspector->mapTo(&w, QPoint(0, 0)), inspector->size()).left() > graph.right());
    QVERIFY(QRect(tabs->mapTo(&w, QPoint(0, 0)), tabs->size()).top() > graph.bottom());
    QVERIFY(w.saveScreenshot(SHARDLAB_BINARY_DIR "/ui-screenshots/main_window_1920x1080.png"));
  }

  // A layout saved by an older version (the graph in a dock above the tabs) is not restored into
  // this arrangement; the window's own saved layout is.
  void anOlderSavedLayoutDoesNotSqueezeTheGraph() {
    {
      QMainWindow old;
      old.setCentralWidget(new QTabWidget(&old));
      for (const char* name : {"paletteDock", "canvasDock", "inspectorDock"}) {
        auto* d = new QDockWidget(name, &old);
        d->setObjectName(name);
        d->setWidget(new QWidget(d));
        old.addDockWidget(QString(name) == "canvasDock" ? Qt::TopDockWidgetArea : Qt::LeftDockWidgetArea, d);
      }
      old.resize(1920, 1080);
      QSettings().setValue("windowState", old.saveState());
    }
    int tabsHeight = 0;
    {
      MainWindow w;
      w.resize(1920, 1080);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY(w.canvas()->height() >= w.height() / 2);
      auto* tabs = w.findChild<QDockWidget*>("tabsDock");
      QCOMPARE(w.dockWidgetArea(tabs), Qt::BottomDockWidgetArea);
      QVERIFY(tabs->isVisible());
      w.resizeDocks({tabs}, {300}, Qt::Vertical);
      QApplication::processEvents();
      tabsHeight = tabs->height();
      QVERIFY(w.close());  // saves the layout
    }
    MainWindow again;
    again.resize(1920, 1080);
    again.show();
    QVERIFY(QTest::qWaitForWindowExposed(&again));
    QVERIFY(std::abs(again.findChild<QDockWidget*>("tabsDock")->height() - tabsHeight) <= 2);
    QSettings().remove("windowState");
  }

  void titleShowsTheModifiedMarkUntilSaved() {
    QTemporaryDir dir;
    MainWindow w;
    w.openFile(example("fashion-mlp"));
    w.document()->edit("Rename", [](project::Project& p) { p.name = "renamed"; });
    QVERIFY(w.isWindowModified());
    const QString out = dir.filePath("renamed.shardlab.json");
    QVERIFY(w.saveAs(out));
    QVERIFY(!w.isWindowModified());
    VERIFY_CONTAINS(w.windowTitle(), "renamed.shardlab.json");
    // Reopen: the same project.
    MainWindow again;
    QVERIFY(again.openFile(out));
    QCOMPARE(project::to_json_string(again.document()->project()), project::to_json_string(w.document()->project()));
  }

  void aBrokenFileIsReportedAndTheProjectStays() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("broken.shardlab.json");
    std::ofstream(bad.toStdString()) << "not json";
    MainWindow w;
    w.openFile(example("fashion-mlp"));
    QString shown;
    answerNextMessageBox(QMessageBox::Ok, &shown);
    QVERIFY(!w.openFile(bad));
    VERIFY_CONTAINS(shown, "broken.shardlab.json: malformed JSON");
    VERIFY_CONTAINS(w.windowTitle(), "fashion-mlp.shardlab.json");
    auto* log = w.findChild<QPlainTextEdit*>("log");
    QVERIFY(log);
    VERIFY_CONTAINS(log->toPlainText(), "broken.shardlab.json");
  }

  // A file that is not a project (malformed JSON, nesting deep enough to overflow a recursive
  // parser, fields of the wrong type) is reported, and the open document, unsaved edit included,
  // stays exactly as it was.
  void aMalformedFileLeavesTheOpenDocumentUntouched_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("bad JSON") << QByteArray(R"({"format": "shardlab.project", "version": 1, "graph": {"nodes": [}})")
                              << "malformed JSON";
    QTest::newRow("deep nesting") << QByteArray(R"({"format": "shardlab.project", "version": 1, "name": )") +
                                         QByteArray(100000, '[') + QByteArray(100000, ']') + "}"
                                  << "JSON nested deeper than 256 levels";
    QTest::newRow("wrong field types")
        << QByteArray(R"({"format": "shardlab.project", "version": 1, "name": "x", "graph": {"nodes": "dense", "edges": 3}})")
        << "graph.nodes";
    QTest::newRow("a string where a number goes")
        << QByteArray(R"({"format": "shardlab.project", "version": "one"})") << "version";
  }
  void aMalformedFileLeavesTheOpenDocumentUntouched() {
    QFETCH(QByteArray, text);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const QString bad = dir.filePath("malformed.shardlab.json");
    std::ofstream(bad.toStdString(), std::ios::binary) << text.toStdString();
    MainWindow w;
    QVERIFY(w.openFile(example("dot-relu-dot")));
    ProjectDocument* doc = w.document();
    doc->edit("Rename", [](project::Project& p) { p.name = "edited"; });
    const std::string before = project::to_json_string(doc->project());
    const QString path = doc->path(), title = w.windowTitle();
    const int undo = doc->undoStack()->count();
    QString shown;
    answerNextMessageBox(QMessageBox::Ok, &shown);
    QVERIFY(!w.openFile(bad));
    VERIFY_CONTAINS(shown, "malformed.shardlab.json");
    VERIFY_CONTAINS(shown, reason);
    QCOMPARE(project::to_json_string(doc->project()), before);
    QCOMPARE(doc->path(), path);
    QCOMPARE(w.windowTitle(), title);
    QCOMPARE(doc->undoStack()->count(), undo);
    QVERIFY(doc->isModified());
    QVERIFY(doc->design().ok());
    auto* log = w.findChild<QPlainTextEdit*>("log");
    QVERIFY(log);
    VERIFY_CONTAINS(log->toPlainText(), "malformed.shardlab.json");
  }

  // An Input of (784) fed Fashion-MNIST's (28, 28) images: a design-check error, in the Mesh & Rules
  // tab's issues and the Log, before anyone presses Start (it used to say "0 errors" and fail then).
  void aDataSourceThatDoesNotFitTheModelIsADesignError() {
    if (!QFileInfo::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      QSKIP("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
    QTemporaryDir dir;
    const QString path = dir.filePath("flat.shardlab.json");
    std::ofstream(path.toStdString()) << R"({
      "format": "shardlab.project", "version": 1, "name": "flat",
      "graph": {
        "nodes": [
          {"name": "pixels", "type": "Input", "params": {"shape": [784], "axes": ["embed"]}},
          {"name": "logits", "type": "Dense", "params": {"features": 10}}
        ],
        "edges": [{"from": "pixels.out", "to": "logits.in"}]
      },
      "loss": {"type": "softmax_cross_entropy", "output": "logits"},
      "optimizer": {"type": "adam", "learning_rate": 0.001},
      "data": {"type": "fashion_mnist"},
      "training": {"batch_size": 128, "epochs": 1}
    })";
    MainWindow w;
    QVERIFY(w.openFile(path));
    const QString want = "data (train split): examples have shape (28, 28) but the Input node takes (784,)";
    QVERIFY(!w.document()->design().ok());
    QStringList errors;
    for (const std::string& e : w.document()->design().errors) errors << QString::fromStdString(e);
    VERIFY_CONTAINS(errors.join('\n'), want);
    auto* issues = w.findChild<IssuesList*>("issues");
    QVERIFY(issues);
    QVERIFY(issues->errorCount() >= 1);
    QStringList shown;
    for (int i = 0; i < issues->count(); ++i) shown << issues->item(i)->text();
    VERIFY_CONTAINS(shown.join('\n'), want);
    auto* log = w.findChild<QPlainTextEdit*>("log");
    QVERIFY(log);
    VERIFY_CONTAINS(log->toPlainText(), want);
    // Fixing the Input clears it.
    w.document()->edit("Input shape", [](project::Project& p) {
      p.graph.find("pixels")->params["shape"] = nlohmann::ordered_json::array({28, 28});
      p.graph.find("pixels")->params["axes"] = nlohmann::ordered_json::array({"height", "width"});
    });
    errors.clear();
    for (const std::string& e : w.document()->design().errors) errors << QString::fromStdString(e);
    VERIFY_LACKS(errors.join('\n'), "examples have shape");
  }

  void closingWithUnsavedChangesAsks() {
    MainWindow w;
    w.openFile(example("fashion-mlp"));
    w.show();
    w.document()->edit("Rename", [](project::Project& p) { p.name = "changed"; });
    QString asked;
    answerNextMessageBox(QMessageBox::Cancel, &asked);
    QVERIFY(!w.close());  // cancelled: the window stays
    VERIFY_CONTAINS(asked, "unsaved changes");
    QVERIFY(w.isVisible());
    answerNextMessageBox(QMessageBox::Discard);
    QVERIFY(w.close());
  }

  void droppingAFileOpensIt() {
    MainWindow w;
    w.openDefaultProject();
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(example("dot-relu-dot"))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QCOMPARE(QString::fromStdString(w.document()->project().name), QString("dot-relu-dot"));
  }

  void copyPasteDuplicateAndDeleteGoThroughTheUndoStack() {
    MainWindow w;
    w.openFile(example("fashion-mlp"));
    ProjectDocument* doc = w.document();
    doc->setSelection({"dense1", "relu"});
    w.copySelection();
    w.paste();
    QVERIFY(doc->project().graph.find("dense3"));
    QVERIFY(doc->project().graph.find("relu2"));
    QCOMPARE(doc->selection(), (QStringList{"dense3", "relu2"}));
    w.duplicateSelection();
    QVERIFY(doc->project().graph.find("dense4"));
    w.deleteSelection();
    QVERIFY(!doc->project().graph.find("dense4"));
    QCOMPARE(doc->undoStack()->count(), 3);
    while (doc->undoStack()->canUndo()) doc->undoStack()->undo();
    QVERIFY(!doc->project().graph.find("dense3"));
    QVERIFY(!w.isWindowModified());
  }

  void menusHoldTheExpectedCommands() {
    MainWindow w;
    QStringList texts;
    for (QAction* menu : w.menuBar()->actions())
      for (QAction* a : menu->menu()->actions()) texts << a->text().remove('&');
    for (const char* want : {"Open...", "Save", "Save As...", "Close Project", "Cut", "Copy", "Paste", "Duplicate", "Delete",
                             "Select All", "Zoom In", "Zoom Out", "Zoom to Fit", "Arrange Graph", "Start Training",
                             "Stop Training"})
      QVERIFY2(texts.contains(want), want);
  }

  // Two recent projects of one name are told apart by their folders in Open Recent.
  void recentFilesOfOneNameShowTheirFolders() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("a") && QDir(dir.path()).mkpath("b"));
    const QString first = dir.filePath("a/fashion-mlp.shardlab.json"), second = dir.filePath("b/fashion-mlp.shardlab.json");
    QVERIFY(QFile::copy(example("fashion-mlp"), first) && QFile::copy(example("fashion-mlp"), second));
    MainWindow w;
    QVERIFY(w.openFile(first));
    QVERIFY(w.openFile(second));
    QMenu* recent = nullptr;
    for (QMenu* m : w.findChildren<QMenu*>())
      if (m->title().remove('&') == "Open Recent") recent = m;
    QVERIFY(recent);
    QStringList texts;
    for (QAction* a : recent->actions()) texts << a->text();
    QVERIFY2(texts.size() >= 2, qPrintable(texts.join(" | ")));
    QVERIFY2(texts[0] != texts[1], qPrintable(texts.join(" | ")));
    VERIFY_CONTAINS(texts[0], QDir::toNativeSeparators(dir.filePath("b")));
    VERIFY_CONTAINS(texts[1], QDir::toNativeSeparators(dir.filePath("a")));
  }

  // The keys a person reaches for: Ctrl+= zooms in (as Ctrl++ does), Ctrl+Return starts training
  // from anywhere in the window and Esc stops it.
  void theKeyboardZoomsStartsAndStops() {
    MainWindow w;
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFile(example("dot-relu-dot")));
    const double before = w.canvas()->zoom();
    w.canvas()->setFocus();
    QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
    QVERIFY2(w.canvas()->zoom() > before, qPrintable(QString("zoom %1 -> %2").arg(before).arg(w.canvas()->zoom())));
    // Ctrl+- zooms back out, Ctrl+0 fits the graph again.
    const double in = w.canvas()->zoom();
    QTest::keyClick(&w, Qt::Key_Minus, Qt::ControlModifier);
    QTest::keyClick(&w, Qt::Key_Minus, Qt::ControlModifier);
    QVERIFY2(w.canvas()->zoom() < in, qPrintable(QString("zoom %1 -> %2").arg(in).arg(w.canvas()->zoom())));
    QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
    QVERIFY2(std::abs(w.canvas()->zoom() - before) < 1e-6, qPrintable(QString("fitted %1, then %2").arg(before).arg(w.canvas()->zoom())));
    QVERIFY(!w.training()->isRunning());
    QTest::keyClick(&w, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(w.training()->isRunning(), 10000);
    QTest::keyClick(&w, Qt::Key_Escape);
    QTRY_VERIFY_WITH_TIMEOUT(!w.training()->isRunning(), 60000);
  }

  // Help > About shows the version, what the build has and the GEMM kernel this CPU runs.
  void aboutShowsBuildOptionsAndTheCpuCodePath() {
    MainWindow w;
    QAction* about = nullptr;
    for (QAction* menu : w.menuBar()->actions())
      for (QAction* a : menu->menu()->actions())
        if (a->text().remove('&') == "About Shardlab") about = a;
    QVERIFY(about);
    QString text;
    answerNextMessageBox(QMessageBox::Ok, &text);
    about->trigger();
    const api::BuildInfo info = api::build_info();
    QVERIFY2(text.contains("built with: CUDA " + QString(info.cuda ? "yes" : "no")), qPrintable(text));
    QVERIFY2(text.contains("ONNX " + QString(info.onnx ? "yes" : "no")), qPrintable(text));
    QVERIFY2(text.contains(QString::fromStdString(info.gemm_kernel) + " GEMM kernel"), qPrintable(text));
    QVERIFY2(!info.gemm_kernel.empty(), "no GEMM kernel named");
  }

  QAction* helpAction(MainWindow& w, const QString& text) {
    for (QAction* menu : w.menuBar()->actions())
      if (menu->text().remove('&') == "Help")
        for (QAction* a : menu->menu()->actions())
          if (a->text().remove('&') == text) return a;
    return nullptr;
  }

  // Help > User Guide shows the README's two usage sections, from the README compiled in.
  void userGuideShowsTheReadmesUsageSections() {
    MainWindow w;
    QAction* guide = helpAction(w, "User Guide");
    QVERIFY(guide);
    QCOMPARE(guide->shortcut(), QKeySequence(QKeySequence::HelpContents));
    guide->trigger();
    QVERIFY(w.userGuide());
    QVERIFY(w.userGuide()->isVisible());
    auto* browser = w.userGuide()->findChild<QTextBrowser*>("userGuide");
    QVERIFY(browser);
    const QString text = browser->toPlainText();
    for (const char* want : {"Using the desktop application", "Using the command line", "shardlab-cli check", "--checkpoint-dir"})
      VERIFY_CONTAINS(text, want);
    VERIFY_LACKS(text, "Tests and benchmarks");  // only the usage sections
    // The same words as the README in the source tree, so the compiled-in copy is this README.
    QFile readme(SHARDLAB_SOURCE_DIR "/README.md");
    QVERIFY(readme.open(QIODevice::ReadOnly));
    QCOMPARE(userGuideMarkdown(), extractSections(QString::fromUtf8(readme.readAll()), userGuideSections()));
  }

  // Sections end at the next heading of their level; a '#' in a code block is no heading.
  void userGuideSectionsEndAtTheNextHeading() {
    const QString readme = "# T\nintro\n## A\na text\n```sh\n# comment\n```\n### A1\nsub\n## B\nb text\n## C\nc text\n";
    QCOMPARE(extractSections(readme, {"A"}), QString("## A\na text\n```sh\n# comment\n```\n### A1\nsub"));
    QCOMPARE(extractSections(readme, {"C", "B"}), QString("## C\nc text\n\n## B\nb text"));
    QCOMPARE(extractSections(readme, {"missing"}), QString());
  }

  // Help > Keyboard Shortcuts lists the window's own actions' shortcuts, read when it opens.
  void shortcutsTableIsTheWindowsActions() {
    MainWindow w;
    QAction* open = helpAction(w, "Keyboard Shortcuts");
    QVERIFY(open);
    open->trigger();
    ShortcutsDialog* dialog = w.shortcutsDialog();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    auto* table = dialog->findChild<QTableWidget*>("shortcutsTable");
    QVERIFY(table);
    auto keysOf = [table](const QString& command) {
      for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 1)->text() == command) return table->item(r, 2)->text();
      return QString("<no row for %1>").arg(command);
    };
    QCOMPARE(keysOf("New"), QKeySequence(QKeySequence::New).toString(QKeySequence::NativeText));
    QCOMPARE(keysOf("New"), QString("Ctrl+N"));
    VERIFY_CONTAINS(keysOf("Undo"), "Ctrl+Z");
    VERIFY_CONTAINS(keysOf("Copy"), "Ctrl+C");
    QCOMPARE(keysOf("User Guide"), QKeySequence(QKeySequence::HelpContents).toString(QKeySequence::NativeText));
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->item(r, 1)->text() == "Copy") QCOMPARE(table->item(r, 3)->text(), QString("in the graph"));
    // Every row is an action with that shortcut, and every action with a shortcut has its row.
    int withShortcut = 0;
    for (QMenu* menu : w.menuBar()->findChildren<QMenu*>())
      for (QAction* a : menu->actions()) withShortcut += !a->menu() && !a->shortcut().isEmpty();
    QVERIFY(withShortcut >= 15);
    QCOMPARE(table->rowCount(), withShortcut);
    // A changed shortcut shows the next time the table opens: it is generated, not written down.
    QAction* save = fileAction(w, "Save");
    QVERIFY(save);
    save->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F12));
    open->trigger();
    QCOMPARE(keysOf("Save"), QString("Ctrl+F12"));
  }

  void themesSwitchThePalette() {
    MainWindow w;
    w.setTheme("Dark");
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 100);
    w.setTheme("Light");
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 150);
  }

  // Someone else changes the open project's file: a bar offers to reload it; the window's own
  // saves are not reported; "Keep Mine" keeps the open project; a deleted file is said so.
  void aFileChangedOnDiskIsOfferedForReload() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString path = tmp.filePath("mine.shardlab.json");
    QVERIFY(QFile::copy(example("fashion-mlp"), path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    MainWindow w;
    QVERIFY(w.openFile(path));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* bar = w.findChild<QToolBar*>("reloadBar");
    auto* text = w.findChild<QLabel*>("reloadText");
    QVERIFY(bar && text);
    QVERIFY(bar->isHidden());
    auto button = [&](const char* name) {
      QAction* a = bar->findChild<QAction*>(name);
      return a ? qobject_cast<QAbstractButton*>(bar->widgetForAction(a)) : nullptr;
    };

    // The window's own save is not news.
    QVERIFY(w.save());
    QTest::qWait(500);
    QVERIFY(bar->isHidden());

    // An editor that writes a new file and renames it over the old one.
    auto writeElsewhere = [&](const std::string& name) {
      project::Project p = project::load_project(path.toStdString());
      p.name = name;
      const QString next = tmp.filePath("next.json");
      std::ofstream(next.toStdString()) << project::to_json_string(p);
      QVERIFY(QFile::remove(path));
      QVERIFY(QFile::rename(next, path));
    };
    writeElsewhere("edited-elsewhere");
    QTRY_VERIFY_WITH_TIMEOUT(!bar->isHidden(), 5000);
    QCOMPARE(text->text(), QString("mine.shardlab.json changed on disk."));
    QVERIFY(button("reloadProject") && button("reloadProject")->isVisible());
    QTest::mouseClick(button("reloadProject"), Qt::LeftButton);
    QCOMPARE(w.document()->project().name, std::string("edited-elsewhere"));
    QVERIFY(!w.document()->isModified());
    QVERIFY(bar->isHidden());

    // With unsaved changes the bar says what reloading would cost; Keep Mine keeps them and the
    // same change is not offered again.
    QVERIFY(w.document()->edit("Rename", [](project::Project& p) { p.name = "mine"; }));
    writeElsewhere("edited-again");
    QTRY_VERIFY_WITH_TIMEOUT(!bar->isHidden(), 5000);
    VERIFY_CONTAINS(text->text(), "Reloading discards your unsaved changes");
    QTest::mouseClick(button("keepProject"), Qt::LeftButton);
    QVERIFY(bar->isHidden());
    QCOMPARE(w.document()->project().name, std::string("mine"));
    QTest::qWait(500);
    QVERIFY(bar->isHidden());

    // Gone: said so, with nothing to reload.
    QVERIFY(QFile::remove(path));
    QTRY_VERIFY_WITH_TIMEOUT(!bar->isHidden(), 5000);
    VERIFY_CONTAINS(text->text(), "deleted or moved");
    QVERIFY(!button("reloadProject")->isEnabled());
    // Saving writes it again and puts the bar away.
    QVERIFY(w.save());
    QVERIFY(bar->isHidden());
    QCOMPARE(project::load_project(path.toStdString()).name, std::string("mine"));
  }

  void everyTabRendersToAnImage() {
    MainWindow w;
    w.openFile(example("dot-relu-dot"));
    w.resize(1500, 950);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Each file is the whole window with that tab's page in it: the part of the image where the
    // page sits is the page as it draws itself, and it differs from every other tab's.
    QList<QImage> pages;
    for (int i = 0; i < w.tabs()->count(); ++i) {
      w.tabs()->setCurrentIndex(i);
      const QString name = w.tabs()->tabText(i).remove('&').replace(' ', '_').toLower();
      const QString file = SHARDLAB_BINARY_DIR "/ui-screenshots/main_window_" + name + ".png";
      const qreal dpr = w.devicePixelRatio();
      QWidget* page = w.currentTab();
      QImage shown, drawn;
      int differ = 0;
      // A page may still be settling (a deferred layout or redraw) when the window is grabbed: the
      // file is taken again until it agrees with the page, three times at most.
      for (int attempt = 0; attempt < 3; ++attempt) {
        QVERIFY(w.saveScreenshot(file));
        const QImage image = QImage(file).convertToFormat(QImage::Format_RGB32);
        QCOMPARE(image.size(), w.size() * dpr);
        const QRect visible = page->visibleRegion().boundingRect();  // a page taller than its panel scrolls
        QVERIFY2(visible.width() > 200 && visible.height() > 100, qPrintable(name));
        drawn = page->grab(visible).toImage().convertToFormat(QImage::Format_RGB32);
        shown = image.copy(QRect(page->mapTo(&w, visible.topLeft()) * dpr, drawn.size()));
        QCOMPARE(shown.size(), drawn.size());
        differ = 0;
        for (int y = 0; y < drawn.height(); ++y)
          for (int x = 0; x < drawn.width(); ++x) differ += shown.pixel(x, y) != drawn.pixel(x, y);
        if (differ <= drawn.width() * drawn.height() / 100) break;
      }
      QVERIFY2(differ <= drawn.width() * drawn.height() / 100,
               qPrintable(QString("%1: %2 of %3 pixels are not the page's").arg(name).arg(differ).arg(drawn.width() * drawn.height())));
      for (const QImage& other : pages) QVERIFY2(other != shown, qPrintable(name + " looks like another tab"));
      pages << shown;
    }
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
