// The design check's errors and warnings for the mesh and rules (unmatched logical names,
// indivisible dimensions, unused mesh axes, a step that will not fit), errors first, one per cause,
// each with its fix where the check can name one.
#pragma once

#include <QListWidget>

namespace shardlab::ui {

class ProjectDocument;

class IssuesList : public QListWidget {
  Q_OBJECT

 public:
  // Item data beside Qt::UserRole ("error", "warning", "ok"): the diagnostic's code and its nodes.
  enum Role { CodeRole = Qt::UserRole + 1, NodesRole };
  explicit IssuesList(ProjectDocument* doc, QWidget* parent = nullptr);

  int errorCount() const { return errors_; }
  int warningCount() const { return warnings_; }
  // "2 errors, 1 warning", or "no problems".
  QString summary() const;

 signals:
  void summaryChanged(const QString& summary);

 private:
  void refresh();

  ProjectDocument* doc_;
  int errors_ = 0, warnings_ = 0;
};

}  // namespace shardlab::ui
