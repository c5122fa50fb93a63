// The spec table: every array's PartitionSpec and shard under the current mesh and rules, with
// toggles to show each kind (parameters, optimizer state, gradients, activations, inputs), sortable
// by any column. Clicking a row asks the sharding view to show that array.
#pragma once

#include <QSortFilterProxyModel>
#include <QWidget>
#include <set>

class QTableView;
class QToolButton;

namespace shardlab::ui {

class ProjectDocument;
class SpecModel;

// Rows of the kinds switched on.
class SpecKindFilter : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setKindShown(int kind, bool shown);
  bool kindShown(int kind) const { return !hidden_.count(kind); }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  std::set<int> hidden_;
};

class SpecTable : public QWidget {
  Q_OBJECT

 public:
  explicit SpecTable(ProjectDocument* doc, QWidget* parent = nullptr);

  SpecModel* model() const { return model_; }
  SpecKindFilter* filter() const { return filter_; }
  QTableView* view() const { return view_; }
  // The toggle button of an ArrayKind.
  QToolButton* kindButton(int kind) const;

 private:
  void selectArray(const QString& name);

  ProjectDocument* doc_;
  SpecModel* model_;
  SpecKindFilter* filter_;
  QTableView* view_;
  std::vector<QToolButton*> kinds_;
};

}  // namespace shardlab::ui
