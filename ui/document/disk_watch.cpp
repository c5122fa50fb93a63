#include "ui/document/disk_watch.h"

#include <QFile>
#include <QFileInfo>

#include "ui/document/project_document.h"

namespace shardlab::ui {

namespace {

// Null when the file cannot be read (gone, or mid-rename).
QByteArray contents(const QString& path, bool* missing) {
  QFile f(path);
  *missing = !f.exists();
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

}  // namespace

DiskWatch::DiskWatch(ProjectDocument* doc, QObject* parent) : QObject(parent), doc_(doc) {
  settle_.setSingleShot(true);
  settle_.setInterval(150);
  connect(&settle_, &QTimer::timeout, this, &DiskWatch::look);
  connect(&watcher_, &QFileSystemWatcher::fileChanged, &settle_, qOverload<>(&QTimer::start));
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, &settle_, qOverload<>(&QTimer::start));
  connect(doc_, &ProjectDocument::pathChanged, this, &DiskWatch::follow);
  connect(doc_, &ProjectDocument::opened, this, &DiskWatch::follow);
  connect(doc_, &ProjectDocument::saved, this, &DiskWatch::follow);
  follow();
}

void DiskWatch::follow() {
  if (!watcher_.files().isEmpty()) watcher_.removePaths(watcher_.files());
  if (!watcher_.directories().isEmpty()) watcher_.removePaths(watcher_.directories());
  known_.clear();
  told_.clear();
  const QString path = doc_->path();
  if (path.isEmpty()) return;
  known_ = contents(path, &missing_);
  watcher_.addPath(path);
  watcher_.addPath(QFileInfo(path).absolutePath());
}

void DiskWatch::acknowledge() {
  bool missing = false;
  known_ = contents(doc_->path(), &missing);
  told_.clear();
}

void DiskWatch::look() {
  const QString path = doc_->path();
  if (path.isEmpty()) return;
  bool missing = false;
  const QByteArray now = contents(path, &missing);
  // A file renamed over the old one is a new file: watch it again.
  if (!missing && !watcher_.files().contains(path)) watcher_.addPath(path);
  if (missing) {
    if (!missing_) emit changedOnDisk(path, true);
    missing_ = true;
    return;
  }
  missing_ = false;
  if (now == known_ || now == told_) return;
  told_ = now;
  emit changedOnDisk(path, false);
}

}  // namespace shardlab::ui
