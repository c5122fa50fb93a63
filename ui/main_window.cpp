#include "ui/main_window.h"

#include <algorithm>
#include <cstdio>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QThread>
#include <QToolBar>
#include <QUndoStack>

#include "engine/api/build_info.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/checkpoints/checkpoint_list_model.h"
#include "ui/checkpoints/checkpoint_browser.h"
#include "ui/document/disk_watch.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/help/shortcuts_dialog.h"
#include "ui/help/user_guide.h"
#include "ui/inspector/inspector.h"
#include "ui/log/log_tab.h"
#include "ui/mesh/mesh_rules_tab.h"
#include "ui/palette/layer_palette.h"
#include "ui/sharding/sharding_tab.h"
#include "ui/trace/trace_tab.h"
#include "ui/training/training_tab.h"

namespace shardlab::ui {

namespace {

constexpr int kMaxRecent = 8;
// saveState()'s version: raised whenever the docks are rearranged, so an older saved layout is
// ignored rather than restored into the new arrangement. 1: the graph is the central area.
constexpr int kLayoutVersion = 1;
const char* kClipboardMime = "application/x-shardlab-nodes";

QPalette darkPalette() {
  QPalette p;
  const QColor window(45, 45, 48), base(30, 30, 32), text(220, 220, 220), accent(42, 130, 218);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, accent);
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(140, 140, 140));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(120, 120, 120));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(120, 120, 120));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(120, 120, 120));
  return p;
}

}  // namespace

QString MainWindow::examplesDir() {
  // Beside an installed binary first, then the source tree this build came from.
  const QString installed = QCoreApplication::applicationDirPath() + "/../share/shardlab/projects";
  if (QDir(installed).exists()) return QDir(installed).canonicalPath();
  return QStringLiteral(SHARDLAB_PROJECTS_DIR);
}

QString MainWindow::aboutText() {
  return tr("<b>Shardlab %1</b><p>Build a network, decide how every array is split over a mesh of "
            "devices, train it and see where every shard lives.</p><pre>%2</pre>")
      .arg(QCoreApplication::applicationVersion(), QString::fromStdString(api::build_info_text()).toHtmlEscaped());
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName("mainWindow");
  doc_ = new ProjectDocument(this);
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  buildDocks();
  buildActions();
  buildReloadBar();
  connectTabs();
  connect(doc_, &ProjectDocument::pathChanged, this, &MainWindow::updateTitle);
  connect(doc_, &ProjectDocument::modifiedChanged, this, &MainWindow::updateTitle);
  connect(doc_, &ProjectDocument::editRefused, this, [this](const QString& why) { statusBar()->showMessage(why, 6000); });
  connect(doc_, &ProjectDocument::arrayRequested, this, [this] { showTab(sharding_); });
  statusBar()->showMessage(tr("Ready"));
  // A check of a large model runs on a worker: say so while the views show the previous one.
  auto* checking = new QLabel(tr("Checking the design…"), this);
  checking->setObjectName("checkingLabel");
  checking->hide();
  statusBar()->addPermanentWidget(checking);
  connect(doc_, &ProjectDocument::checkingChanged, checking, &QLabel::setVisible);
  QSettings s;
  setTheme(s.value("theme", "Light").toString());
  resize(1400, 900);
  restoreGeometry(s.value("geometry").toByteArray());
  // A layout saved by a version with another arrangement (the graph in a dock, the tabs in the
  // middle) carries an older number and is refused: the default layout stands.
  defaultLayoutPending_ = !restoreState(s.value("windowState").toByteArray(), kLayoutVersion);
  updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildDocks() {
  // The graph is what a user builds: it is the central area and takes whatever space the docks leave.
  canvas_ = new GraphView(doc_, this);
  canvas_->setAccessibleName(tr("Graph"));  // the Keyboard Shortcuts table says "in the graph"
  setCentralWidget(canvas_);

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("tabs");
  tabs_->setDocumentMode(true);
  meshRules_ = new MeshRulesTab(doc_, this);
  sharding_ = new ShardingTab(doc_, this);
  training_ = new TrainingTab(doc_, this);
  trace_ = new TraceTab(doc_, this);
  checkpoints_ = new CheckpointBrowser(this);
  log_ = new LogTab(doc_, this);
  // Each page scrolls when the dock is shorter than the page needs, so no page's minimum height
  // squeezes the graph (a tab widget is as tall as its tallest page), and none is cut off.
  auto addPage = [this](QWidget* page, const QString& title) {
    auto* scroll = new QScrollArea(tabs_);
    scroll->setObjectName(page->objectName().isEmpty() ? QString() : page->objectName() + "Scroll");
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(page);
    tabs_->addTab(scroll, title);
  };
  addPage(meshRules_, tr("Mesh && Rules"));
  addPage(sharding_, tr("Sharding"));
  addPage(training_, tr("Training"));
  addPage(trace_, tr("Trace"));
  addPage(checkpoints_, tr("Checkpoints"));
  addPage(log_, tr("Log"));

  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);  // saveState() keys docks by object name
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  palette_ = new LayerPalette(doc_, this);
  inspector_ = new Inspector(doc_, this);
  // Side docks run the full height; the graph takes the top of the middle, the tabs the bottom.
  setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  paletteDock_ = dock(tr("Layers"), "paletteDock", palette_, Qt::LeftDockWidgetArea);
  inspectorDock_ = dock(tr("Inspector"), "inspectorDock", inspector_, Qt::RightDockWidgetArea);
  tabsDock_ = dock(tr("Panels"), "tabsDock", tabs_, Qt::BottomDockWidgetArea);
}

void MainWindow::buildReloadBar() {
  reloadBar_ = new QToolBar(tr("File Changed on Disk"), this);
  reloadBar_->setObjectName("reloadBar");
  reloadBar_->setMovable(false);
  reloadBar_->setFloatable(false);
  reloadText_ = new QLabel(reloadBar_);
  reloadText_->setObjectName("reloadText");
  reloadText_->setContentsMargins(8, 0, 8, 0);
  reloadText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  reloadBar_->addWidget(reloadText_);
  reloadAction_ = reloadBar_->addAction(tr("&Reload"), this, &MainWindow::reloadFromDisk);
  reloadAction_->setObjectName("reloadProject");
  QAction* keep = reloadBar_->addAction(tr("&Keep Mine"), this, [this] {
    diskWatch_->acknowledge();
    reloadBar_->hide();
  });
  keep->setObjectName("keepProject");
  keep->setToolTip(tr("Keep the project as it is open here; saving writes it over the file"));
  addToolBar(Qt::TopToolBarArea, reloadBar_);
  reloadBar_->hide();
  diskWatch_ = new DiskWatch(doc_, this);
  connect(diskWatch_, &DiskWatch::changedOnDisk, this, &MainWindow::offerReload);
  // Another project, or this one saved: whatever the bar said is past.
  connect(doc_, &ProjectDocument::opened, reloadBar_, &QWidget::hide);
  connect(doc_, &ProjectDocument::saved, reloadBar_, &QWidget::hide);
}

void MainWindow::offerReload(const QString& path, bool removed) {
  const QString name = QFileInfo(path).fileName();
  if (removed) {
    reloadText_->setText(tr("%1 was deleted or moved on disk; Save writes it again.").arg(name));
  } else {
    reloadText_->setText(doc_->isModified() ? tr("%1 changed on disk. Reloading discards your unsaved changes.").arg(name)
                                            : tr("%1 changed on disk.").arg(name));
  }
  reloadAction_->setEnabled(!removed);
  reloadBar_->show();
  doc_->message("warning", reloadText_->text());
}

void MainWindow::reloadFromDisk() {
  const QString path = doc_->path();
  try {
    doc_->open(path);  // hides the bar (opened), or throws and leaves the project as it was
  } catch (const std::exception& e) {
    reloadText_->setText(tr("%1 cannot be reloaded: %2").arg(QFileInfo(path).fileName(), QString::fromStdString(e.what())));
    doc_->message("error", reloadText_->text());
    return;
  }
  canvas_->zoomToFit();
  statusBar()->showMessage(tr("Reloaded %1").arg(path), 4000);
}

namespace {

// A window at least twice as wide as it is tall (an ultrawide screen) has width to spare and
// little height: the panels go beside the graph instead of below it.
bool panelsBesideGraph(QSize window) { return window.width() >= 2 * window.height(); }

}  // namespace

void MainWindow::applyDefaultLayout() {
  // The graph gets most of the window; the tabs about two fifths of its height below it (a page
  // taller than that scrolls), the side docks their natural widths.
  // Below 1600 px wide the side docks give up some width, and below 900 px tall the tabs take
  // half the height: Start, the array list and the problems stay in view without scrolling.
  // On a wide window the tabs take two fifths of its width, between the graph and the Inspector.
  const bool narrow = width() < 1600, short_ = height() < 900, beside = panelsBesideGraph(size());
  if (beside && dockWidgetArea(tabsDock_) != Qt::RightDockWidgetArea) {
    addDockWidget(Qt::RightDockWidgetArea, tabsDock_);
    splitDockWidget(tabsDock_, inspectorDock_, Qt::Horizontal);
  } else if (!beside && dockWidgetArea(tabsDock_) != Qt::BottomDockWidgetArea) {
    addDockWidget(Qt::BottomDockWidgetArea, tabsDock_);
  }
  resizeDocks({paletteDock_, inspectorDock_}, {narrow ? 170 : 220, narrow ? 300 : 340}, Qt::Horizontal);
  if (beside) resizeDocks({tabsDock_}, {width() * 2 / 5}, Qt::Horizontal);
  else resizeDocks({tabsDock_}, {short_ ? height() / 2 : height() * 2 / 5}, Qt::Vertical);
}

void MainWindow::resizeEvent(QResizeEvent* e) {
  QMainWindow::resizeEvent(e);
  // Docks keep their pixel sizes as a window changes size, so a window made larger gave all of
  // it to the graph: the panels keep their share of the window instead (the share the user
  // dragged them to, if they did). Across the wide-window line the panels move beside or below
  // the graph. A panel dock the user floated or moved elsewhere is left where it is.
  const QSize was = e->oldSize(), now = e->size();
  if (defaultLayoutPending_ || !isVisible() || !was.isValid() || was.isEmpty() || tabsDock_->isFloating() || !tabsDock_->isVisible())
    return;
  const Qt::DockWidgetArea area = dockWidgetArea(tabsDock_);
  if (area != Qt::BottomDockWidgetArea && area != Qt::RightDockWidgetArea) return;
  if (panelsBesideGraph(now) != panelsBesideGraph(was)) {
    applyDefaultLayout();
    return;
  }
  if (area == Qt::BottomDockWidgetArea)
    resizeDocks({tabsDock_}, {int(qint64(tabsDock_->height()) * now.height() / was.height())}, Qt::Vertical);
  else
    resizeDocks({tabsDock_}, {int(qint64(tabsDock_->width()) * now.width() / was.width())}, Qt::Horizontal);
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  // Sized once the window has its real size: docks keep their sizes as a window grows, so sizing
  // them at construction would leave a maximised window's tabs as short as a small one's.
  if (defaultLayoutPending_) {
    defaultLayoutPending_ = false;
    applyDefaultLayout();
  }
}


void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* blank = file->addAction(tr("&New"), this, [this] {
    if (maybeSave()) doc_->newBlank();
  });
  blank->setShortcut(QKeySequence::New);
  QMenu* newMenu = file->addMenu(tr("&New from Example"));
  for (const QFileInfo& f : QDir(examplesDir()).entryInfoList({"*.shardlab.json"}, QDir::Files, QDir::Name)) {
    QAction* a = newMenu->addAction(f.fileName().remove(".shardlab.json"));
    connect(a, &QAction::triggered, this, [this, path = f.absoluteFilePath()] {
      if (!maybeSave()) return;
      try {
        doc_->openTemplate(path);
      } catch (const std::exception& e) {
        showError(tr("New Project"), QString::fromStdString(e.what()));
      }
    });
  }
  QAction* open = file->addAction(tr("&Open..."), this, [this] {
    if (!maybeSave()) return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Project"), QFileInfo(doc_->path()).path(),
                                                      tr("Shardlab projects (*.shardlab.json);;JSON (*.json)"));
    if (!path.isEmpty()) openFile(path);
  });
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  updateRecentMenu();
  file->addSeparator();
  file->addAction(tr("&Save"), this, [this] { save(); })->setShortcut(QKeySequence::Save);
  file->addAction(tr("Save &As..."), this, [this] { saveAs(); })->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* saveCkpt = file->addAction(tr("Save &Checkpoint Now"), training_, &TrainingTab::saveCheckpointNow);
  saveCkpt->setEnabled(false);
  connect(training_, &TrainingTab::runStarted, saveCkpt, [saveCkpt] { saveCkpt->setEnabled(true); });
  connect(training_, &TrainingTab::runFinished, saveCkpt, [saveCkpt] { saveCkpt->setEnabled(false); });
  connect(training_, &TrainingTab::runFailed, saveCkpt, [saveCkpt] { saveCkpt->setEnabled(false); });
  file->addAction(tr("&Resume From Checkpoint..."), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Resume From Checkpoint (a step_NNNNNN directory)"),
                                                          checkpoints_->root());
    if (!dir.isEmpty()) training_->resumeFrom(dir);
  });
  file->addAction(tr("&Export Checkpoint..."), this, [this] {
    showTab(checkpoints_);
    if (checkpoints_->root().isEmpty()) {
      const QString dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint Directory"));
      if (dir.isEmpty()) return;
      checkpoints_->setRoot(dir);
    }
    statusBar()->showMessage(tr("Pick a step in the Checkpoints tab, then Export…"), 6000);
  });
  file->addAction(tr("Attach to R&un..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Attach to Run (the JSONL log it writes, --log)"), {},
                                                      tr("Training logs (*.jsonl);;All files (*)"));
    if (!path.isEmpty()) attachToRun(path);
  });
  file->addAction(tr("&Import Hugging Face Model..."), this, [this] { importModel(); });
  file->addAction(tr("Open &Trace..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Trace"), {}, tr("Chrome trace JSON (*.json)"));
    if (!path.isEmpty() && trace_->openTraceFile(path)) showTab(trace_);
  });
  file->addSeparator();
  // Closing leaves an empty project, never silently another one.
  QAction* close = file->addAction(tr("&Close Project"), this, [this] {
    if (maybeSave()) doc_->newBlank();
  });
  close->setShortcut(QKeySequence::Close);
  file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = doc_->undoStack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  undo->setProperty("shortcutName", tr("Undo"));  // its text names the edit ("Undo Rename dense1")
  QAction* redo = doc_->undoStack()->createRedoAction(this, tr("&Redo"));
  redo->setShortcut(QKeySequence::Redo);
  redo->setProperty("shortcutName", tr("Redo"));
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  // The canvas's shortcuts only: in a text field Ctrl+C must copy text.
  auto canvasAction = [this, edit](const QString& text, QKeySequence key, void (MainWindow::*slot)()) {
    QAction* a = edit->addAction(text, this, slot);
    a->setShortcut(key);
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    canvas_->addAction(a);
    return a;
  };
  canvasAction(tr("Cu&t"), QKeySequence::Cut, &MainWindow::cutSelection);
  canvasAction(tr("&Copy"), QKeySequence::Copy, &MainWindow::copySelection);
  canvasAction(tr("&Paste"), QKeySequence::Paste, &MainWindow::paste);
  canvasAction(tr("&Duplicate"), QKeySequence(Qt::CTRL | Qt::Key_D), &MainWindow::duplicateSelection);
  canvasAction(tr("De&lete"), QKeySequence::Delete, &MainWindow::deleteSelection);
  edit->addSeparator();
  QAction* all = edit->addAction(tr("Select &All"), canvas_, &GraphView::selectAll);
  all->setShortcut(QKeySequence::SelectAll);
  all->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  canvas_->addAction(all);
  // Find Node: a search field over the canvas; block nodes are found by path ("blocks/W1").
  edit->addAction(tr("&Find Node..."), canvas_, &GraphView::findNode)->setShortcut(QKeySequence::Find);

  viewMenu_ = menuBar()->addMenu(tr("&View"));
  // Ctrl+= as well as Ctrl++: on most keyboards '+' is the shifted '='.
  viewMenu_->addAction(tr("Zoom &In"), canvas_, &GraphView::zoomIn)
      ->setShortcuts({QKeySequence(QKeySequence::ZoomIn), QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  viewMenu_->addAction(tr("Zoom &Out"), canvas_, &GraphView::zoomOut)->setShortcut(QKeySequence::ZoomOut);
  viewMenu_->addAction(tr("Zoom to &Fit"), canvas_, &GraphView::zoomToFit)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  viewMenu_->addAction(tr("&Arrange Graph"), canvas_, &GraphView::autoLayout)->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
  viewMenu_->addAction(tr("Align &Left"), canvas_, &GraphView::alignLeft);
  viewMenu_->addAction(tr("Align &Top"), canvas_, &GraphView::alignTop);
  viewMenu_->addSeparator();
  QMenu* theme = viewMenu_->addMenu(tr("&Theme"));
  theme->addAction(tr("&Light"), this, [this] { setTheme("Light"); });
  theme->addAction(tr("&Dark"), this, [this] { setTheme("Dark"); });
  viewMenu_->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) viewMenu_->addAction(d->toggleViewAction());

  // Start and stop from anywhere in the window, as a person at the keyboard expects.
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Start Training"), training_, &TrainingTab::start)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  run->addAction(tr("S&top Training"), training_, &TrainingTab::stop)->setShortcut(QKeySequence(Qt::Key_Escape));
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&User Guide"), this, &MainWindow::showUserGuide)->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
  help->addSeparator();
  help->addAction(tr("&About Shardlab"), this, [this] {
    QMessageBox::about(this, tr("About Shardlab"), aboutText());
  });
}

void MainWindow::showTab(QWidget* page) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (auto* scroll = qobject_cast<QScrollArea*>(tabs_->widget(i)); scroll && scroll->widget() == page) {
      tabs_->setCurrentIndex(i);
      tabsDock_->show();
      tabsDock_->raise();
      return;
    }
}

QWidget* MainWindow::currentTab() const {
  auto* scroll = qobject_cast<QScrollArea*>(tabs_->currentWidget());
  return scroll ? scroll->widget() : tabs_->currentWidget();
}

void MainWindow::showUserGuide() {
  if (!userGuide_) userGuide_ = new UserGuideDialog(this);
  userGuide_->show();
  userGuide_->raise();
  userGuide_->activateWindow();
}

void MainWindow::showShortcuts() {
  if (!shortcuts_) shortcuts_ = new ShortcutsDialog(this);
  shortcuts_->load(menuBar());  // read afresh: the table is the actions' shortcuts as they are now
  shortcuts_->show();
  shortcuts_->raise();
  shortcuts_->activateWindow();
}

void MainWindow::connectTabs() {
  // A run's trace goes to the Trace tab live; its checkpoints to the Checkpoints tab.
  connect(training_, &TrainingTab::traceStarted, trace_,
          [this](std::shared_ptr<profiler::Trace> trace, const QString& label, double peak) { trace_->followRun(trace, label, peak); });
  connect(training_, &TrainingTab::runFinished, trace_, [this] { trace_->runFinished(); });
  connect(training_, &TrainingTab::runFailed, trace_, [this] { trace_->runFinished(); });
  // A run over processes has no live trace: its merged trace file opens when it ends.
  connect(training_, &TrainingTab::traceFileWritten, trace_, [this](const QString& path) { trace_->openTraceFile(path); });
  // A clicked span's layer comes into view on the canvas (its collapsed Repeat, marked, when hidden).
  connect(trace_, &TraceTab::spanActivated, canvas_, [this](const QString& node) { canvas_->graphScene()->revealNode(node); });
  connect(training_, &TrainingTab::checkpointDirChanged, checkpoints_, [this](const QString& dir) {
    if (dir != checkpoints_->root()) checkpoints_->setRoot(dir);
  });
  connect(training_, &TrainingTab::checkpointSaved, checkpoints_, [this](qint64 step, const QString& dir) {
    if (QFileInfo(dir).absolutePath() != QFileInfo(checkpoints_->root()).absoluteFilePath()) checkpoints_->setRoot(QFileInfo(dir).absolutePath());
    checkpoints_->model()->refresh();
    checkpoints_->selectStep(step);
    statusBar()->showMessage(tr("Checkpoint of step %1 saved in %2").arg(step).arg(dir), 6000);
  });
  connect(checkpoints_, &CheckpointBrowser::resumeRequested, this, [this](const QString& dir) {
    showTab(training_);
    training_->resumeFrom(dir);
  });
  connect(checkpoints_, &CheckpointBrowser::exportFinished, this, [this](bool ok, const QString& message) {
    if (ok) {
      doc_->message("info", message);
      statusBar()->showMessage(message, 6000);
    } else {
      showError(tr("Export Checkpoint"), message);
    }
  });
}

void MainWindow::updateTitle() {
  // Qt's [*] placeholder shows the modified mark the platform's way.
  setWindowTitle(doc_->displayName() + "[*] — Shardlab");
  setWindowModified(doc_->isModified());
}

bool MainWindow::openFile(const QString& path) {
  try {
    doc_->open(path);
  } catch (const std::exception& e) {
    showError(tr("Open Project"), QString::fromStdString(e.what()));
    return false;
  }
  addRecent(doc_->path());
  canvas_->zoomToFit();
  return true;
}

void MainWindow::importModel() {
  if (!maybeSave()) return;
  const QString folder = QFileDialog::getExistingDirectory(
      this, tr("Import Hugging Face Model (a folder with config.json and safetensors weights)"));
  if (folder.isEmpty()) return;
  const QString suggested = QFileInfo(folder).dir().filePath(QFileInfo(folder).fileName() + ".shardlab.json");
  const QString project = QFileDialog::getSaveFileName(this, tr("Save the Imported Project As"), suggested,
                                                       tr("Shardlab projects (*.shardlab.json)"));
  if (project.isEmpty()) return;
  // Reading and converting the weights and writing the checkpoint take a while for a real model:
  // never on the UI thread.
  statusBar()->showMessage(tr("Importing %1…").arg(QFileInfo(folder).fileName()));
  struct Result {
    api::ImportedProject imported;
    QString error;
  };
  auto result = std::make_shared<Result>();
  QThread* worker = QThread::create([result, f = folder.toStdString(), p = project.toStdString()] {
    try {
      result->imported = api::import_hf_model(f, p);
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  connect(worker, &QThread::finished, this, [this, result] {
    statusBar()->clearMessage();
    if (!result->error.isEmpty()) return showError(tr("Import Hugging Face Model"), result->error);
    if (!openFile(QString::fromStdString(result->imported.project_file))) return;
    QString message = tr("Imported: its weights are the checkpoint %1; Start continues from them.")
                          .arg(QString::fromStdString(result->imported.checkpoint));
    for (const std::string& n : result->imported.notes) message += " " + QString::fromStdString(n) + ".";
    statusBar()->showMessage(message, 15000);
    emit modelImported(QString::fromStdString(result->imported.project_file));
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  worker->start();
}

bool MainWindow::openDefaultProject() {
  const QString path = examplesDir() + "/fashion-mlp.shardlab.json";
  try {
    doc_->openTemplate(path);
  } catch (const std::exception& e) {
    showError(tr("New Project"), QString::fromStdString(e.what()));
    return false;
  }
  canvas_->zoomToFit();
  return true;
}

bool MainWindow::save() { return doc_->path().isEmpty() ? saveAs() : saveAs(doc_->path()); }

bool MainWindow::saveAs(const QString& given) {
  QString path = given;
  if (path.isEmpty()) {
    path = QFileDialog::getSaveFileName(this, tr("Save Project"), QDir::homePath() + "/" + QString::fromStdString(doc_->project().name) + ".shardlab.json",
                                        tr("Shardlab projects (*.shardlab.json)"));
    if (path.isEmpty()) return false;
    if (!path.endsWith(".json")) path += ".shardlab.json";
  }
  try {
    doc_->saveAs(path);
  } catch (const std::exception& e) {
    showError(tr("Save Project"), QString::fromStdString(e.what()));
    return false;
  }
  addRecent(doc_->path());
  statusBar()->showMessage(tr("Saved %1").arg(doc_->path()), 4000);
  return true;
}

bool MainWindow::maybeSave() {
  if (!doc_->isModified()) return true;
  const auto answer = QMessageBox::warning(this, tr("Unsaved Changes"),
                                           tr("%1 has unsaved changes. Save them?").arg(doc_->displayName()),
                                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (!maybeSave()) {
    e->ignore();
    return;
  }
  QSettings s;
  s.setValue("geometry", saveGeometry());
  s.setValue("windowState", saveState(kLayoutVersion));
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (urls.isEmpty() || !urls.first().isLocalFile()) return;
  if (!maybeSave()) return;
  openFile(urls.first().toLocalFile());
  e->acceptProposedAction();
}

QStringList MainWindow::recentFiles() const { return QSettings().value("recentFiles").toStringList(); }

void MainWindow::addRecent(const QString& path) {
  QStringList list = recentFiles();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  QSettings().setValue("recentFiles", list);
  updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList files = recentFiles();
  for (const QString& path : files) {
    // The name, and its folder where another recent file has the same name (two fashion-mlp
    // copies looked alike); the whole path in the tooltip.
    const QString name = QFileInfo(path).fileName();
    const bool twin = std::count_if(files.begin(), files.end(), [&](const QString& f) { return QFileInfo(f).fileName() == name; }) > 1;
    QAction* a = recentMenu_->addAction(twin ? tr("%1 — %2").arg(name, QDir::toNativeSeparators(QFileInfo(path).absolutePath())) : name);
    a->setToolTip(QDir::toNativeSeparators(path));
    connect(a, &QAction::triggered, this, [this, path] {
      if (maybeSave()) openFile(path);
    });
  }
  recentMenu_->setEnabled(!recentMenu_->actions().isEmpty());
}

void MainWindow::setTheme(const QString& name) {
  theme_ = name == "Dark" ? "Dark" : "Light";
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  QApplication::setPalette(theme_ == "Dark" ? darkPalette() : QApplication::style()->standardPalette());
  QSettings().setValue("theme", theme_);
}

bool MainWindow::attachToRun(const QString& path) {
  showTab(training_);
  return training_->attachToRun(path);
}

bool MainWindow::saveScreenshot(const QString& file) {
  // Let the docks settle into the window's size (layout requests come one after another).
  QElapsedTimer clock;
  clock.start();
  while (clock.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 50);
  try {
    util::output_path(file.toStdString(), "screenshot");  // a regular file or a new name, outside checkpoints
  } catch (const Error& e) {
    doc_->message("error", QString::fromStdString(e.what()));
    std::fprintf(stderr, "shardlab: %s\n", e.what());  // --screenshot runs without anyone looking at the Log
    return false;
  }
  if (grab().save(file)) return true;
  std::fprintf(stderr, "shardlab: screenshot %s: could not be written\n", qPrintable(file));
  return false;
}

void MainWindow::showError(const QString& title, const QString& text) {
  doc_->message("error", text);
  // Tests and headless runs have no one to click OK; the log has it.
  if (qEnvironmentVariableIsSet("SHARDLAB_NO_DIALOGS")) return;
  QMessageBox::critical(this, title, text);
}

void MainWindow::copySelection() {
  std::vector<std::string> paths;
  for (const QString& s : doc_->selection()) paths.push_back(s.toStdString());
  if (paths.empty()) return;
  auto* mime = new QMimeData;
  const std::string clip = edits::copy_nodes(doc_->project(), paths).dump();
  mime->setData(kClipboardMime, QByteArray::fromStdString(clip));
  mime->setText(QString::fromStdString(clip));
  QApplication::clipboard()->setMimeData(mime);
}

void MainWindow::cutSelection() {
  copySelection();
  deleteSelection();
}

void MainWindow::paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime || !mime->hasFormat(kClipboardMime)) return;
  const graph::Json clip = graph::Json::parse(mime->data(kClipboardMime).toStdString(), nullptr, false);
  const QStringList sel = doc_->selection();
  const std::string parent = sel.isEmpty() ? "" : edits::parent_of(sel.first().toStdString());
  std::vector<std::string> pasted;
  if (doc_->edit(tr("Paste"), [&](project::Project& p) { pasted = edits::paste_nodes(p, clip, parent, 40, 40); })) {
    QStringList s;
    for (const std::string& x : pasted) s << QString::fromStdString(x);
    doc_->setSelection(s);
  }
}

void MainWindow::duplicateSelection() {
  copySelection();
  paste();
}

void MainWindow::deleteSelection() {
  std::vector<std::string> paths;
  for (const QString& s : doc_->selection()) paths.push_back(s.toStdString());
  if (paths.empty()) return;
  doc_->edit(paths.size() == 1 ? tr("Delete %1").arg(QString::fromStdString(paths[0])) : tr("Delete %1 nodes").arg(paths.size()),
             [&](project::Project& p) { edits::remove_nodes(p, paths); });
}

}  // namespace shardlab::ui
