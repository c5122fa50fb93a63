// Every array of the training step as the design check splits it: name, kind, logical axes,
// PartitionSpec, shape, shard shape, bytes per device and the error, if any. Follows the document:
// the design is recomputed before changed() arrives, so the rows are always the current rules'.
#pragma once

#include <QAbstractTableModel>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ProjectDocument;

class SpecModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    NameColumn,
    KindColumn,
    LogicalColumn,
    SpecColumn,
    ShapeColumn,
    ShardColumn,
    BytesColumn,
    ErrorColumn,
    ColumnCount
  };
  static constexpr int KindRole = Qt::UserRole + 1;  // int(sharding::ArrayKind)
  static constexpr int SortRole = Qt::UserRole + 2;  // numbers as numbers

  explicit SpecModel(ProjectDocument* doc, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // The array on `row`, or null.
  const sharding::ArraySharding* array(int row) const;
  int rowOf(const QString& name) const;  // -1 when absent

 private:
  void sync();

  ProjectDocument* doc_;
  std::vector<sharding::ArraySharding> arrays_;
};

}  // namespace shardlab::ui
