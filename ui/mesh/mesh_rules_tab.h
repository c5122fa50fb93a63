// The "Mesh & Rules" tab: the design-time sharding check. On the left the device mesh and the
// ordered logical axis rules, edited in place; on the right, live as they change, how every array
// splits (PartitionSpec, shard, bytes per device), the memory each device needs against its
// capacity, and the problems the check finds. In a narrow panel (a 1024x768 window) the two
// sides stack, and the memory over the problems, so the page scrolls down rather than sideways.
#pragma once

#include <QPointer>
#include <QWidget>

class QGroupBox;
class QSplitter;

namespace shardlab::ui {

class IssuesList;
class MemoryBars;
class MeshEditor;
class ProjectDocument;
class RulesEditor;
class SpecTable;

class MeshRulesTab : public QWidget {
  Q_OBJECT

 public:
  explicit MeshRulesTab(ProjectDocument* doc, QWidget* parent = nullptr);

  MeshEditor* meshEditor() const { return mesh_; }
  RulesEditor* rulesEditor() const { return rules_; }
  SpecTable* specTable() const { return specs_; }
  MemoryBars* memoryBars() const { return bars_; }
  IssuesList* issues() const { return issues_; }

 protected:
  void showEvent(QShowEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  bool eventFilter(QObject* watched, QEvent* e) override;

 private:
  void refresh();
  // Side by side or stacked, by the width of the panel the tab is shown in: a scroll area's
  // viewport where there is one (the tab's own width never goes below its least), else its own.
  void reflow();

  ProjectDocument* doc_;
  MeshEditor* mesh_;
  RulesEditor* rules_;
  SpecTable* specs_;
  MemoryBars* bars_;
  IssuesList* issues_;
  QSplitter* sides_ = nullptr;  // mesh and rules | arrays, memory and problems
  QSplitter* below_ = nullptr;  // memory | problems
  QPointer<QWidget> panel_;     // the viewport whose width reflow() follows
  QGroupBox* memoryBox_;
  QGroupBox* issuesBox_;
};

}  // namespace shardlab::ui
