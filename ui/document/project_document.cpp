#include "ui/document/project_document.h"

#include <QFileInfo>
#include <QUndoCommand>
#include <QtConcurrent/QtConcurrentRun>

namespace shardlab::ui {

namespace {

project::Project reparse(const std::string& json, const std::filesystem::path& file) {
  project::Project p = project::parse_project(json, file.empty() ? "untitled" : file.string(), project::Validation::Structure);
  p.file = file;
  return p;
}

// One edit: the project's text before and after. Whole-project snapshots are a few kilobytes and
// make every edit, however it touches the graph, undo exactly.
class EditCommand : public QUndoCommand {
 public:
  EditCommand(ProjectDocument* doc, const QString& text, std::string before, std::string after, const QString& mergeKey)
      : QUndoCommand(text), doc_(doc), before_(std::move(before)), after_(std::move(after)), key_(mergeKey) {}
  void undo() override { doc_->restoreState(before_); }
  void redo() override { doc_->restoreState(after_); }
  int id() const override { return key_.isEmpty() ? -1 : 1; }
  bool mergeWith(const QUndoCommand* other) override {
    auto* o = static_cast<const EditCommand*>(other);
    if (o->key_ != key_) return false;
    after_ = o->after_;
    return true;
  }

 private:
  ProjectDocument* doc_;
  std::string before_, after_;
  QString key_;
};

}  // namespace

ProjectDocument::ProjectDocument(QObject* parent) : QObject(parent) {
  project_ = std::make_unique<project::Project>();
  design_ = std::make_unique<api::Design>();
  connect(&undo_, &QUndoStack::cleanChanged, this, [this](bool clean) { emit modifiedChanged(!clean); });
  connect(&worker_, &QFutureWatcher<api::Design>::finished, this, &ProjectDocument::checkLanded);
  if (const QByteArray ms = qgetenv("SHARDLAB_INLINE_CHECK_MS"); !ms.isEmpty()) inlineBudgetMs_ = ms.toInt();
}

ProjectDocument::~ProjectDocument() = default;

QString ProjectDocument::displayName() const {
  return path_.isEmpty() ? QStringLiteral("untitled") : QFileInfo(path_).fileName();
}

void ProjectDocument::replace(project::Project p) {
  *project_ = std::move(p);
  recheck();
  emit changed();
}

namespace {
constexpr size_t kRemembered = 8;  // checks kept for undo and redo
}

void ProjectDocument::remember(const std::string& key, const api::Design& d) {
  std::erase_if(remembered_, [&](const auto& r) { return r.first == key; });
  remembered_.insert(remembered_.begin(), {key, std::make_shared<const api::Design>(d)});
  if (remembered_.size() > kRemembered) remembered_.pop_back();
}

void ProjectDocument::setChecking(bool checking) {
  if (checking_ == checking) return;
  checking_ = checking;
  emit checkingChanged(checking);
}

void ProjectDocument::recheck() {
  // The text says everything the check reads, and the file where relative data paths start.
  wantedKey_ = project::to_json_string(*project_) + '\n' + project_->file.string();
  for (const auto& [key, d] : remembered_)
    if (key == wantedKey_) {
      *design_ = *d;
      checkedKey_ = wantedKey_;
      setChecking(false);
      return;
    }
  if (!worker_.isRunning() && lastCheckMs_ <= inlineBudgetMs_ && inlineBudgetMs_ > 0) {
    QElapsedTimer clock;
    clock.start();
    *design_ = api::check_design(*project_);
    lastCheckMs_ = clock.elapsed();
    checkedKey_ = wantedKey_;
    remember(checkedKey_, *design_);
    return;
  }
  setChecking(true);
  if (!worker_.isRunning()) startCheck();  // else checkLanded() starts the newest
}

void ProjectDocument::startCheck() {
  runningKey_ = wantedKey_;
  // The worker checks a copy of its own, made through the text: a Repeat's body is shared between
  // copies of a Project.
  project::Project copy = reparse(project::to_json_string(*project_), project_->file);
  workerClock_.start();
  worker_.setFuture(QtConcurrent::run([copy = std::move(copy)] { return api::check_design(copy); }));
}

void ProjectDocument::checkLanded() {
  lastCheckMs_ = workerClock_.elapsed();
  const api::Design d = worker_.result();
  remember(runningKey_, d);
  if (runningKey_ == wantedKey_) {
    *design_ = d;
    checkedKey_ = wantedKey_;
    setChecking(false);
    emit changed();
  } else if (checkedKey_ == wantedKey_) {
    setChecking(false);  // the project went back to one checked before (undo) while this ran
  } else {
    startCheck();  // edited while this ran: check the newest
  }
}

void ProjectDocument::open(const QString& path) {
  project::Project p = project::load_project(path.toStdString(), project::Validation::Structure);
  undo_.clear();
  path_ = QFileInfo(path).absoluteFilePath();
  p.file = path_.toStdString();
  selection_.clear();
  replace(std::move(p));
  emit pathChanged();
  emit opened();
  emit selectionChanged();
  emit message("info", tr("Opened %1").arg(path_));
}

void ProjectDocument::newBlank() {
  undo_.clear();
  path_.clear();
  selection_.clear();
  replace(project::blank_project());
  emit pathChanged();
  emit opened();
  emit selectionChanged();
  emit message("info", tr("New empty project"));
}

void ProjectDocument::openTemplate(const QString& path) {
  project::Project p = project::load_project(path.toStdString(), project::Validation::Structure);
  undo_.clear();
  path_.clear();
  // Relative data paths keep resolving against the template's folder until the first save.
  p.file = QFileInfo(path).absoluteFilePath().toStdString();
  selection_.clear();
  replace(std::move(p));
  emit pathChanged();
  emit opened();
  emit selectionChanged();
  emit message("info", tr("New project from template %1").arg(QFileInfo(path).fileName()));
}

void ProjectDocument::saveAs(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  project::save_project(*project_, abs.toStdString());
  project_->file = abs.toStdString();
  const bool moved = abs != path_;
  path_ = abs;
  undo_.setClean();
  if (moved) emit pathChanged();
  emit saved();
  emit message("info", tr("Saved %1").arg(abs));
}

bool ProjectDocument::edit(const QString& text, const std::function<void(project::Project&)>& mutate, const QString& mergeKey) {
  const std::string before = project::to_json_string(*project_);
  std::string after;
  try {
    // A deep copy through the text: a Repeat's body is shared between copies of a Project.
    project::Project copy = reparse(before, project_->file);
    mutate(copy);
    after = project::to_json_string(copy);
    reparse(after, project_->file);  // what an edit leaves must still be a readable project
  } catch (const std::exception& e) {
    lastError_ = QString::fromStdString(e.what());
    emit editRefused(lastError_);
    emit message("warning", tr("%1 refused: %2").arg(text, lastError_));
    return false;
  }
  lastError_.clear();
  if (after == before) return true;
  undo_.push(new EditCommand(this, text, before, after, mergeKey));
  return true;
}

void ProjectDocument::viewEdit(const std::function<void(project::Project&)>& mutate) {
  project::Project copy = reparse(project::to_json_string(*project_), project_->file);
  mutate(copy);
  // The design is unchanged: no check again, only the views redrawn.
  *project_ = std::move(copy);
  emit changed();
}

void ProjectDocument::restoreState(const std::string& json) {
  replace(reparse(json, project_->file));
  // Drop selected nodes that no longer exist.
  QStringList kept;
  for (const QString& s : selection_) {
    const std::string path = s.toStdString();
    const size_t slash = path.rfind('/');
    const graph::Graph* g = &project_->graph;
    if (slash != std::string::npos) {
      const graph::Node* r = project_->graph.find(path.substr(0, slash));
      g = r && r->body ? r->body.get() : nullptr;
    }
    if (g && g->find(slash == std::string::npos ? path : path.substr(slash + 1))) kept << s;
  }
  if (kept != selection_) setSelection(kept);
}

void ProjectDocument::setSelection(const QStringList& paths) {
  if (paths == selection_) return;
  selection_ = paths;
  emit selectionChanged();
}

}  // namespace shardlab::ui
