#include "ui/sharding/device_blocks_model.h"

#include <QBrush>
#include <QColor>

#include "ui/sharding/sharding_format.h"

namespace shardlab::ui {

DeviceBlocksModel::DeviceBlocksModel(QObject* parent) : QAbstractTableModel(parent) {}

void DeviceBlocksModel::setDevice(const sharding::ShardingReport& report, const std::map<std::string, int64_t>& copies,
                                  int64_t device) {
  beginResetModel();
  rows_.clear();
  device_ = device >= 0 && device < report.mesh.device_count() ? device : -1;
  if (device_ >= 0)
    for (const sharding::ArraySharding& a : report.arrays) {
      Row r;
      r.name = QString::fromStdString(a.name);
      r.kind = QString::fromUtf8(sharding::kind_name(a.kind));
      // An array whose spec is invalid is counted replicated (as the engine counts its memory).
      r.block = sharding::device_block(a.spec, a.shape, report.mesh, device_);
      r.shape = a.shard;
      r.bytes = a.bytes_per_device;
      if (a.kind == sharding::ArrayKind::Activation) {
        const auto it = copies.find(a.name);
        r.copies = it == copies.end() ? 1 : it->second;
      }
      r.error = QString::fromStdString(a.error);
      rows_.push_back(std::move(r));
    }
  endResetModel();
}

double DeviceBlocksModel::heldBytes() const {
  double total = 0;
  for (const Row& r : rows_) total += r.bytes * double(r.copies);
  return total;
}

int DeviceBlocksModel::rowOfArray(const QString& name) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].name == name) return int(i);
  return -1;
}

int DeviceBlocksModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int DeviceBlocksModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DeviceBlocksModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size())) return {};
  const Row& r = rows_[size_t(index.row())];
  if (role == ArrayNameRole) return r.name;
  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (index.column()) {
      case ArrayColumn:
        return r.name;
      case KindColumn:
        return r.kind;
      case BlockColumn:
        return shardfmt::blockIndexText(r.block);
      case RangeColumn:
        return shardfmt::rangeText(r.block);
      case ShardColumn:
        return shardfmt::shapeText(r.shape);
      case BytesColumn:
        return sort ? QVariant(r.bytes) : QVariant(shardfmt::bytesText(r.bytes));
      case CopiesColumn:
        return sort ? QVariant(qlonglong(r.copies)) : QVariant(QStringLiteral("×%1").arg(r.copies));
      case HeldColumn: {
        const double held = r.bytes * double(r.copies);
        return sort ? QVariant(held) : QVariant(shardfmt::bytesText(held));
      }
    }
    return {};
  }
  if (role == Qt::TextAlignmentRole && index.column() >= BytesColumn)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (!r.error.isEmpty()) return tr("%1\nCounted replicated until this is fixed.").arg(r.error);
    if (index.column() == CopiesColumn && r.copies > 1)
      return tr("Inside a Repeat: a training step keeps this activation once per layer (%1 copies).").arg(r.copies);
    return tr("%1: elements %2 of each dimension").arg(r.name, shardfmt::rangeText(r.block));
  }
  if (role == Qt::ForegroundRole && !r.error.isEmpty()) return QBrush(QColor(210, 50, 50));
  return {};
}

QVariant DeviceBlocksModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ArrayColumn:
      return tr("Array");
    case KindColumn:
      return tr("Kind");
    case BlockColumn:
      return tr("Block");
    case RangeColumn:
      return tr("Range (start:end)");
    case ShardColumn:
      return tr("Shard shape");
    case BytesColumn:
      return tr("Bytes");
    case CopiesColumn:
      return tr("Copies");
    case HeldColumn:
      return tr("Held");
  }
  return {};
}

}  // namespace shardlab::ui
