// Notices when someone else changes the open project's file (an editor, a `git checkout`, a
// script), so the window can offer to reload it. The window's own saves are not news: the file is
// compared by content with what this window last read or wrote, so a save, or a touch that
// changes nothing, passes unreported. Editors that save by writing a new file and renaming it over
// the old one are followed too (the folder is watched as well as the file).
#pragma once

#include <QByteArray>
#include <QFileSystemWatcher>
#include <QObject>
#include <QTimer>

namespace shardlab::ui {

class ProjectDocument;

class DiskWatch : public QObject {
  Q_OBJECT

 public:
  explicit DiskWatch(ProjectDocument* doc, QObject* parent = nullptr);
  // The file's present contents are known (reloaded, or the person chose to keep their version):
  // only a change after this is reported.
  void acknowledge();

 signals:
  // The file at `path` now holds something this window did not read or write; `removed` when it
  // is gone.
  void changedOnDisk(const QString& path, bool removed);

 private:
  void follow();  // the document's path, re-read and watched afresh
  void look();

  ProjectDocument* doc_;
  QFileSystemWatcher watcher_;
  QTimer settle_;     // editors write in bursts: look once they are done
  QByteArray known_;  // the contents last read or written here
  QByteArray told_;   // the contents last reported, so one change is reported once
  bool missing_ = false;
};

}  // namespace shardlab::ui
