// The "Mesh & Rules" tab: the design-time sharding check. On the left the device mesh and the
// ordered logical axis rules, edited in place; on the right, live as they change, how every array
// splits (PartitionSpec, shard, bytes per device), the memory each device needs against its
// capacity, and the problems the check finds.
#pragma once

#include <QWidget>

class QGroupBox;

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

 private:
  void refresh();

  ProjectDocument* doc_;
  MeshEditor* mesh_;
  RulesEditor* rules_;
  SpecTable* specs_;
  MemoryBars* bars_;
  IssuesList* issues_;
  QGroupBox* memoryBox_;
  QGroupBox* issuesBox_;
};

}  // namespace shardlab::ui
