// The main window: the graph canvas in the middle, docks for the layer palette (left), inspector
// (right) and the tabs for Mesh & Rules, Sharding, Training, Trace, Checkpoints and Log (below); the menus, shortcuts, recent files, palettes and title a desktop user
// expects; an unsaved-changes prompt wherever work could be lost, and a bar offering to reload a
// project whose file was changed on disk by something else.
#pragma once

#include <QMainWindow>
#include <QStringList>

class QAction;
class QMenu;
class QTabWidget;
class QDockWidget;
class QLabel;
class QToolBar;

namespace shardlab::ui {

class ProjectDocument;
class GraphView;
class LayerPalette;
class Inspector;
class MeshRulesTab;
class ShardingTab;
class TrainingTab;
class TraceTab;
class CheckpointBrowser;
class LogTab;
class DiskWatch;
class ShortcutsDialog;
class UserGuideDialog;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ProjectDocument* document() const { return doc_; }
  GraphView* canvas() const { return canvas_; }
  QTabWidget* tabs() const { return tabs_; }
  TrainingTab* training() const { return training_; }
  TraceTab* trace() const { return trace_; }
  CheckpointBrowser* checkpoints() const { return checkpoints_; }

  // Open a project; on failure a message box names the file and the reason, and false comes back.
  bool openFile(const QString& path);
  // fashion-mlp from the example projects.
  bool openDefaultProject();
  bool save();
  bool saveAs(const QString& path = {});
  // File > Attach to Run and `shardlab --attach`: the Training tab follows a run started
  // elsewhere by its JSONL log (or a folder holding it); false, saying why in that tab, if it cannot.
  bool attachToRun(const QString& path);
  // File > Import Hugging Face Model: asks for the model folder and the project to write, imports
  // on a worker thread, then opens the project (modelImported), or says why not.
  void importModel();
  // Renders the whole window to an image file (the README's screenshot, the tests' artifacts).
  bool saveScreenshot(const QString& file);
  // "Dark" or "Light".
  void setTheme(const QString& name);
  QStringList recentFiles() const;

  // The example projects offered by File > New.
  static QString examplesDir();
  // Help > About's text: version, build options and the CPU code path in use (api::build_info_text).
  static QString aboutText();

  // Brings a tab's page (training(), trace(), ...) to the front, showing the tabs' dock if hidden.
  void showTab(QWidget* page);
  // The page of the tab in front (each page sits in its own scroll area).
  QWidget* currentTab() const;

  // Help > User Guide (the README's usage sections) and Help > Keyboard Shortcuts (from the actions).
  void showUserGuide();
  void showShortcuts();
  UserGuideDialog* userGuide() const { return userGuide_; }
  ShortcutsDialog* shortcutsDialog() const { return shortcuts_; }

  // Clipboard and selection commands, for the menus and tests.
  void copySelection();
  void cutSelection();
  void paste();
  void duplicateSelection();
  void deleteSelection();

 signals:
  // An import finished and its project is open.
  void modelImported(const QString& projectFile);

 protected:
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void buildActions();
  void buildDocks();
  // The docks' places and sizes for a window without a saved layout, or one that became wide or
  // ceased to be (the panels beside the graph or below it).
  void applyDefaultLayout();
  void connectTabs();
  void updateTitle();
  void updateRecentMenu();
  void addRecent(const QString& path);
  // True when there is nothing unsaved, or the user saved or chose to discard it.
  bool maybeSave();
  void showError(const QString& title, const QString& text);
  // The bar offered when the project's file changes on disk: Reload, or keep what is open.
  void buildReloadBar();
  void offerReload(const QString& path, bool removed);
  void reloadFromDisk();

  ProjectDocument* doc_ = nullptr;
  GraphView* canvas_ = nullptr;
  LayerPalette* palette_ = nullptr;
  Inspector* inspector_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  MeshRulesTab* meshRules_ = nullptr;
  ShardingTab* sharding_ = nullptr;
  TrainingTab* training_ = nullptr;
  TraceTab* trace_ = nullptr;
  CheckpointBrowser* checkpoints_ = nullptr;
  LogTab* log_ = nullptr;
  QDockWidget* paletteDock_ = nullptr;
  QDockWidget* inspectorDock_ = nullptr;
  QDockWidget* tabsDock_ = nullptr;
  bool defaultLayoutPending_ = false;  // no saved layout of this version: size the docks when shown
  UserGuideDialog* userGuide_ = nullptr;
  ShortcutsDialog* shortcuts_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QMenu* viewMenu_ = nullptr;
  QString theme_;
  DiskWatch* diskWatch_ = nullptr;
  QToolBar* reloadBar_ = nullptr;
  QLabel* reloadText_ = nullptr;
  QAction* reloadAction_ = nullptr;
};

}  // namespace shardlab::ui
