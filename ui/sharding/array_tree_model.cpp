#include "ui/sharding/array_tree_model.h"

#include <QBrush>
#include <QFont>

#include "ui/sharding/sharding_format.h"

namespace shardlab::ui {

struct ArrayTreeModel::Item {
  QString label;
  QString array;  // full name; empty for a group
  QString shape, spec, bytes, tooltip, filter;
  bool error = false;
  Item* parent = nullptr;
  int row = 0;
  std::vector<std::unique_ptr<Item>> children;

  Item* add(std::unique_ptr<Item> child) {
    child->parent = this;
    child->row = int(children.size());
    children.push_back(std::move(child));
    return children.back().get();
  }
  Item* group(const QString& name) {
    for (auto& c : children)
      if (c->array.isEmpty() && c->label == name) return c.get();
    auto g = std::make_unique<Item>();
    g->label = name;
    return add(std::move(g));
  }
};

namespace {

// Where an array sits under its kind: the node path it belongs to ("" for none) and its own label.
// "blocks/W1/kernel" -> ("blocks/W1", "kernel"); its gradient "d_blocks/W1/kernel" and Adam state
// "blocks/W1/kernel/mu" sit under the same node as "kernel" and "kernel/mu". Activations and inputs
// are a node's output: they are listed by the node's own path.
std::pair<QString, QString> placement(const sharding::ArraySharding& a) {
  QString name = QString::fromStdString(a.name);
  if (a.kind == sharding::ArrayKind::Activation || a.kind == sharding::ArrayKind::Input) return {QString(), name};
  QString suffix;
  if (a.kind == sharding::ArrayKind::Gradient && name.startsWith("d_")) name = name.mid(2);
  if (a.kind == sharding::ArrayKind::OptimizerState) {
    const int cut = name.lastIndexOf('/');
    if (cut > 0) suffix = name.mid(cut), name = name.left(cut);
  }
  const int cut = name.lastIndexOf('/');
  if (cut < 0) return {QString(), name + suffix};
  return {name.left(cut), name.mid(cut + 1) + suffix};
}

constexpr sharding::ArrayKind kKindOrder[] = {sharding::ArrayKind::Parameter, sharding::ArrayKind::OptimizerState,
                                              sharding::ArrayKind::Gradient, sharding::ArrayKind::Activation,
                                              sharding::ArrayKind::Input};

}  // namespace

ArrayTreeModel::ArrayTreeModel(QObject* parent) : QAbstractItemModel(parent), root_(std::make_unique<Item>()) {}

ArrayTreeModel::~ArrayTreeModel() = default;

void ArrayTreeModel::setArrays(const std::vector<sharding::ArraySharding>& arrays) {
  beginResetModel();
  root_ = std::make_unique<Item>();
  arrayCount_ = 0;
  for (sharding::ArrayKind kind : kKindOrder) {
    Item* group = nullptr;
    int inGroup = 0;
    for (const sharding::ArraySharding& a : arrays) {
      if (a.kind != kind) continue;
      if (!group) group = root_->group(shardfmt::kindGroupName(kind));
      const auto [node, label] = placement(a);
      Item* parent = node.isEmpty() ? group : group->group(node);
      auto item = std::make_unique<Item>();
      item->label = label;
      item->array = QString::fromStdString(a.name);
      item->shape = shardfmt::shapeText(a.shape);
      item->error = !a.error.empty();
      // The column header says PartitionSpec; the cell keeps just its arguments, to stay narrow.
      const QString spec = QString::fromStdString(a.spec_text());
      item->spec = item->error ? tr("invalid") : spec.startsWith("PartitionSpec") ? spec.mid(13) : spec;
      // The dtype beside the bytes where it is not float32 (a mixed-precision step's activations).
      item->bytes = shardfmt::bytesText(a.bytes_per_device) +
                    (a.dtype == DType::F32 ? QString() : QStringLiteral(" %1").arg(QString(dtype_short(a.dtype))));
      item->tooltip = QStringLiteral("%1 (%2)\nlogical %3\n%4")
                          .arg(item->array, QString::fromUtf8(sharding::kind_name(a.kind)),
                               shardfmt::logicalText(a.logical), item->error ? QString::fromStdString(a.error) : spec);
      item->filter = QStringList{item->array, QString::fromUtf8(sharding::kind_name(a.kind)),
                                 shardfmt::logicalText(a.logical), item->error ? item->spec : spec}
                         .join(' ');
      parent->add(std::move(item));
      ++arrayCount_;
      ++inGroup;
    }
    if (group) group->label += QStringLiteral(" (%1)").arg(inGroup);
  }
  endResetModel();
}

ArrayTreeModel::Item* ArrayTreeModel::itemOf(const QModelIndex& index) const {
  return index.isValid() ? static_cast<Item*>(index.internalPointer()) : root_.get();
}

QModelIndex ArrayTreeModel::indexOfArray(const QString& name, int column) const {
  if (name.isEmpty()) return {};
  std::vector<const Item*> stack{root_.get()};
  while (!stack.empty()) {
    const Item* it = stack.back();
    stack.pop_back();
    if (it->array == name) return createIndex(it->row, column, const_cast<Item*>(it));
    for (const auto& c : it->children) stack.push_back(c.get());
  }
  return {};
}

QModelIndex ArrayTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= ColumnCount || (parent.isValid() && parent.column() != 0)) return {};
  Item* p = itemOf(parent);
  if (row < 0 || row >= int(p->children.size())) return {};
  return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex ArrayTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  Item* p = static_cast<Item*>(child.internalPointer())->parent;
  if (!p || p == root_.get()) return {};
  return createIndex(p->row, 0, p);
}

int ArrayTreeModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return int(itemOf(parent)->children.size());
}

int ArrayTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant ArrayTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Item* it = itemOf(index);
  const bool group = it->array.isEmpty();
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case NameColumn:
          return it->label;
        case ShapeColumn:
          return it->shape;
        case SpecColumn:
          return it->spec;
        case BytesColumn:
          return it->bytes;
      }
      return {};
    case Qt::ToolTipRole:
      return group ? QVariant() : QVariant(it->tooltip);
    case Qt::FontRole:
      if (group && !it->parent->parent) {  // a kind heading
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ForegroundRole:
      if (it->error && index.column() == SpecColumn) return QBrush(QColor(210, 50, 50));
      return {};
    case Qt::TextAlignmentRole:
      if (index.column() == BytesColumn) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case ArrayNameRole:
      return it->array;
    case FilterTextRole:
      return it->filter;
  }
  return {};
}

QVariant ArrayTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Array");
    case ShapeColumn:
      return tr("Shape");
    case SpecColumn:
      return tr("PartitionSpec");
    case BytesColumn:
      return tr("Per device");
  }
  return {};
}

Qt::ItemFlags ArrayTreeModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  // Group rows open and close; only arrays can be chosen for drawing.
  return itemOf(index)->array.isEmpty() ? Qt::ItemIsEnabled : (Qt::ItemIsEnabled | Qt::ItemIsSelectable);
}

}  // namespace shardlab::ui
