#include "ui/palette/layer_model.h"

#include <QFont>
#include <QMimeData>

#include "engine/api/engine.h"
#include "ui/palette/layer_mime.h"

namespace shardlab::ui {

namespace {

// Internal ids: 0 marks a group row; a layer row stores its group's index + 1.
constexpr quintptr kGroupId = 0;

}  // namespace

LayerModel::LayerModel(QObject* parent) : QAbstractItemModel(parent) {
  for (const graph::LayerInfo& info : graph::layer_catalog()) {
    const QString category = QString::fromStdString(info.category);
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.name == category; });
    if (it == groups_.end()) {
      groups_.push_back({category, {}});
      it = groups_.end() - 1;
    }
    QStringList inputs;
    for (const std::string& in : info.inputs) inputs << QString::fromStdString(in);
    it->layers.push_back({QString::fromStdString(info.type), QString::fromStdString(info.summary), inputs});
  }
}

QModelIndex LayerModel::index(int row, int column, const QModelIndex& parent) const {
  if (column != 0 || row < 0) return {};
  if (!parent.isValid()) return row < groups_.size() ? createIndex(row, 0, kGroupId) : QModelIndex();
  if (parent.internalId() != kGroupId || parent.row() >= groups_.size()) return {};
  if (row >= groups_[parent.row()].layers.size()) return {};
  return createIndex(row, 0, quintptr(parent.row()) + 1);
}

QModelIndex LayerModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kGroupId) return {};
  return createIndex(int(child.internalId() - 1), 0, kGroupId);
}

int LayerModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(groups_.size());
  if (parent.column() != 0 || parent.internalId() != kGroupId) return 0;
  return int(groups_[parent.row()].layers.size());
}

int LayerModel::columnCount(const QModelIndex&) const { return 1; }

QVariant LayerModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  if (index.internalId() == kGroupId) {
    const Group& g = groups_[index.row()];
    switch (role) {
      case Qt::DisplayRole: return g.name;
      case Qt::ToolTipRole: return tr("%n layer type(s)", nullptr, int(g.layers.size()));
      case SearchRole: return g.name;
      case TypeRole: return QString();
      case Qt::FontRole: {
        QFont f;
        f.setBold(true);
        return f;
      }
      default: return {};
    }
  }
  const Group& g = groups_[int(index.internalId() - 1)];
  const Layer& l = g.layers[index.row()];
  switch (role) {
    case Qt::DisplayRole:
    case TypeRole: return l.type;
    case Qt::ToolTipRole:
    case Qt::StatusTipRole: {
      const QString ports = l.inputs.isEmpty() ? tr("no inputs") : tr("inputs: %1").arg(l.inputs.join(", "));
      return QStringLiteral("%1 — %2 (%3)").arg(l.type, l.summary, ports);
    }
    case SearchRole: return QStringList{l.type, g.name, l.summary}.join(' ');
    default: return {};
  }
}

Qt::ItemFlags LayerModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  if (index.internalId() == kGroupId) return Qt::ItemIsEnabled;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled | Qt::ItemNeverHasChildren;
}

QStringList LayerModel::mimeTypes() const { return {QString::fromLatin1(kLayerMimeType)}; }

QMimeData* LayerModel::mimeData(const QModelIndexList& indexes) const {
  for (const QModelIndex& i : indexes) {
    const QString type = data(i, TypeRole).toString();
    if (type.isEmpty()) continue;
    auto* mime = new QMimeData;
    mime->setData(kLayerMimeType, type.toUtf8());
    mime->setText(type);
    return mime;  // one layer per drag: the canvas adds one node per drop
  }
  return nullptr;
}

QModelIndex LayerModel::indexOf(const QString& type) const {
  for (int g = 0; g < groups_.size(); ++g)
    for (int r = 0; r < groups_[g].layers.size(); ++r)
      if (groups_[g].layers[r].type == type) return index(r, 0, index(g, 0));
  return {};
}

}  // namespace shardlab::ui
