// The Log tab: the document's messages (opened, saved, edits refused) and the design check's
// errors and warnings, each line with its time and level, newest last.
#pragma once

#include <QPlainTextEdit>
#include <QStringList>

namespace shardlab::ui {

class ProjectDocument;

class LogTab : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit LogTab(ProjectDocument* doc, QWidget* parent = nullptr);

 public slots:
  void append(const QString& level, const QString& text);

 private:
  void designChecked();
  ProjectDocument* doc_;
  QStringList lastProblems_;  // so an edit that changes nothing does not repeat them
};

}  // namespace shardlab::ui
