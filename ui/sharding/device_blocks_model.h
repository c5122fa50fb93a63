// The reverse view's table: every block one device holds, one row per array, with the block's
// index and element range per dimension, its shard shape, its bytes, and how many copies of it a
// step keeps (an activation inside a Repeat, once per layer), so the rows add up to the device's
// memory.
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class DeviceBlocksModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    ArrayColumn = 0,
    KindColumn,
    BlockColumn,
    RangeColumn,
    ShardColumn,
    BytesColumn,
    CopiesColumn,
    HeldColumn,
    ColumnCount
  };
  enum Role {
    ArrayNameRole = Qt::UserRole + 1,  // the array's full name
    SortRole,                          // numbers sort as numbers
  };

  explicit DeviceBlocksModel(QObject* parent = nullptr);

  // The blocks `device` holds under `report` (one model reset); out of range: no rows.
  void setDevice(const sharding::ShardingReport& report, const std::map<std::string, int64_t>& copies, int64_t device);
  int64_t device() const { return device_; }
  // The sum of the Held column: every block times its copies.
  double heldBytes() const;
  int rowOfArray(const QString& name) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString name, kind;
    sharding::Block block;
    Shape shape;
    double bytes = 0;
    int64_t copies = 1;
    QString error;
  };
  std::vector<Row> rows_;
  int64_t device_ = -1;
};

}  // namespace shardlab::ui
