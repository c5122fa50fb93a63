// The tree of every array in a project's sharding report: grouped by kind (Parameters, Optimizer
// state, Gradients, Activations, Inputs), then by the node the array belongs to, with its global
// shape, PartitionSpec and bytes per device in columns.
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ArrayTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { NameColumn = 0, ShapeColumn, SpecColumn, BytesColumn, ColumnCount };
  enum Role {
    ArrayNameRole = Qt::UserRole + 1,  // the array's full name ("blocks/W1/kernel/mu"); empty on group rows
    FilterTextRole,                    // what the filter box matches: name, kind, logical axes, spec
  };

  explicit ArrayTreeModel(QObject* parent = nullptr);
  ~ArrayTreeModel() override;

  // Replaces the tree with these arrays (one model reset).
  void setArrays(const std::vector<sharding::ArraySharding>& arrays);
  // The row of the array named `name`, or an invalid index.
  QModelIndex indexOfArray(const QString& name, int column = NameColumn) const;
  int arrayCount() const { return arrayCount_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 private:
  struct Item;
  Item* itemOf(const QModelIndex& index) const;

  std::unique_ptr<Item> root_;
  int arrayCount_ = 0;
};

}  // namespace shardlab::ui
