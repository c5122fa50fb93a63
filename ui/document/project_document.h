// The open project as the whole window shares it: the engine's Project, its file, the undo stack
// every edit goes through, the design check re-run after each change, and the node selection the
// canvas, inspector and sharding view keep in step.
//
// The design check never holds up the window for long: a project seen before (undo, redo) takes its
// remembered check at once; a quick one runs inline; once a check has taken longer than a frame or
// so (a model of thousands of layers), the next runs on a worker thread while design() keeps the
// previous one, isChecking() says so, and changed() follows when it lands. Edits made meanwhile are
// checked once the running check ends, the newest only.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <QUndoStack>
#include <functional>
#include <memory>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ProjectDocument : public QObject {
  Q_OBJECT

 public:
  explicit ProjectDocument(QObject* parent = nullptr);
  ~ProjectDocument() override;

  // Opens a project file. A graph with shape errors opens (they show on its nodes); a file that is
  // not a readable project throws shardlab::Error and leaves the document as it was.
  void open(const QString& path);
  // Starts an empty, unsaved project (project::blank_project): no path, not modified.
  void newBlank();
  // Starts an unsaved project from a template file (an example project): no path, not modified.
  void openTemplate(const QString& path);
  // Atomic save; throws shardlab::Error and keeps the modified mark when it fails.
  void saveAs(const QString& path);

  const project::Project& project() const { return *project_; }
  const api::Design& design() const { return *design_; }
  // A check of the current project is running: design() is still an earlier project's.
  bool isChecking() const { return checking_; }
  // Checks that took longer than this run on a worker from then on (0: always). The environment's
  // SHARDLAB_INLINE_CHECK_MS sets it at start (the UI suite keeps every check inline, so what a
  // test reads right after an edit does not depend on how loaded the machine is).
  void setInlineCheckBudgetMs(int ms) { inlineBudgetMs_ = ms; }
  static constexpr int kInlineCheckBudgetMs = 100;
  QUndoStack* undoStack() { return &undo_; }
  QString path() const { return path_; }
  bool isModified() const { return !undo_.isClean(); }
  // "fashion-mlp.shardlab.json", or "untitled" for a new project.
  QString displayName() const;

  // Every change goes through here: `mutate` edits a private copy; when it returns, the change is
  // one undo command named `text`. When it throws shardlab::Error nothing changes, editRefused()
  // carries the reason, and edit() returns false. Consecutive edits with the same `mergeKey`
  // (typing in one field, dragging one node) merge into one command.
  bool edit(const QString& text, const std::function<void(project::Project&)>& mutate, const QString& mergeKey = {});
  // A change to how the project is shown, not to the model (a Repeat expanded or collapsed): kept
  // with the project, so its next save writes it, but no undo step, and nothing marked modified:
  // looking inside a block never prompts "Unsaved changes".
  void viewEdit(const std::function<void(project::Project&)>& mutate);
  QString lastError() const { return lastError_; }

  // Node paths ("dense1", "blocks/W1") selected in the canvas; every view follows it.
  QStringList selection() const { return selection_; }
  void setSelection(const QStringList& paths);
  // Asks the sharding view to show an array ("dense1/kernel", an activation "dense1").
  void requestArray(const QString& name) { emit arrayRequested(name); }

  // Used by the undo commands: replaces the project with a serialized state.
  void restoreState(const std::string& json);

 signals:
  void changed();             // the project's content or its design check changed: an edit, undo, redo, open, a check landing
  void checkingChanged(bool checking);
  void opened();              // a different project was opened or started
  void pathChanged();
  void saved();               // written to path(): what the file now holds is this project
  void modifiedChanged(bool modified);
  void selectionChanged();
  void arrayRequested(const QString& name);
  void editRefused(const QString& reason);
  void message(const QString& level, const QString& text);  // "info" | "warning" | "error", for the log

 private:
  void replace(project::Project p);
  void recheck();
  void startCheck();   // on a worker, of the newest project
  void checkLanded();  // back on the UI thread
  void setChecking(bool checking);
  void remember(const std::string& key, const api::Design& d);

  std::unique_ptr<project::Project> project_;
  std::unique_ptr<api::Design> design_;
  QUndoStack undo_;
  QString path_;
  QString lastError_;
  QStringList selection_;
  // The check: what design_ was checked on, what the project is now, and what the worker checks
  // (each the project's text and file), and the last few checks, newest first.
  std::string checkedKey_, wantedKey_, runningKey_;
  QFutureWatcher<api::Design> worker_;
  QElapsedTimer workerClock_;
  std::vector<std::pair<std::string, std::shared_ptr<const api::Design>>> remembered_;
  qint64 lastCheckMs_ = 0;
  int inlineBudgetMs_ = kInlineCheckBudgetMs;
  bool checking_ = false;
};

}  // namespace shardlab::ui
