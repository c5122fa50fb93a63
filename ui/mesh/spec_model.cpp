#include "ui/mesh/spec_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

#include "ui/document/project_document.h"
#include "ui/mesh/format.h"

namespace shardlab::ui {

SpecModel::SpecModel(ProjectDocument* doc, QObject* parent) : QAbstractTableModel(parent), doc_(doc) {
  connect(doc_, &ProjectDocument::changed, this, &SpecModel::sync);
  sync();
}

void SpecModel::sync() {
  const api::Design& d = doc_->design();
  std::vector<sharding::ArraySharding> next =
      d.sharding_ok ? d.sharding.arrays : std::vector<sharding::ArraySharding>{};
  bool sameRows = next.size() == arrays_.size();
  for (size_t i = 0; sameRows && i < next.size(); ++i)
    sameRows = next[i].name == arrays_[i].name && next[i].kind == arrays_[i].kind;
  if (sameRows) {
    // The same arrays (a rule or a mesh size changed): update in place, keeping selection and scroll.
    arrays_ = std::move(next);
    if (!arrays_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  } else {
    beginResetModel();
    arrays_ = std::move(next);
    endResetModel();
  }
}

int SpecModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(arrays_.size()); }

int SpecModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

const sharding::ArraySharding* SpecModel::array(int row) const {
  return row >= 0 && row < rowCount() ? &arrays_[size_t(row)] : nullptr;
}

int SpecModel::rowOf(const QString& name) const {
  const std::string n = name.toStdString();
  for (size_t i = 0; i < arrays_.size(); ++i)
    if (arrays_[i].name == n) return int(i);
  return -1;
}

QVariant SpecModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const sharding::ArraySharding& a = arrays_[size_t(index.row())];
  if (role == KindRole) return int(a.kind);
  if (role == Qt::ForegroundRole && !a.error.empty()) return QBrush(QColor(200, 30, 30));
  if (role == Qt::ToolTipRole) {
    if (!a.error.empty()) return QString::fromStdString(a.error);
    return tr("%1: %2 split as %3, each device holds %4 (%5)")
        .arg(QString::fromStdString(a.name), shapeText(a.shape), QString::fromStdString(a.spec_text()),
             shapeText(a.shard), bytesText(a.bytes_per_device));
  }
  if (role == Qt::TextAlignmentRole && index.column() == BytesColumn) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == SortRole && index.column() == BytesColumn) return a.bytes_per_device;
  if (role != Qt::DisplayRole && role != SortRole) return {};
  switch (index.column()) {
    case NameColumn:
      return QString::fromStdString(a.name);
    case KindColumn:
      return tr(sharding::kind_name(a.kind));
    case LogicalColumn: {
      QStringList names;
      for (const std::string& n : a.logical) names << (n.empty() ? QStringLiteral("–") : QString::fromStdString(n));
      return names.join(QStringLiteral(", "));
    }
    case SpecColumn:
      return QString::fromStdString(a.spec_text());
    case ShapeColumn:
      return shapeText(a.shape);
    case ShardColumn:
      return shapeText(a.shard);
    case BytesColumn:
      return bytesText(a.bytes_per_device);
    case ErrorColumn:
      return QString::fromStdString(a.error);
    default:
      return {};
  }
}

QVariant SpecModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Array");
    case KindColumn:
      return tr("Kind");
    case LogicalColumn:
      return tr("Logical axes");
    case SpecColumn:
      return tr("PartitionSpec");
    case ShapeColumn:
      return tr("Shape");
    case ShardColumn:
      return tr("Shard shape");
    case BytesColumn:
      return tr("Bytes / device");
    case ErrorColumn:
      return tr("Error");
    default:
      return {};
  }
}

}  // namespace shardlab::ui
