#include "ui/mesh/rules_model.h"

#include <QBrush>
#include <QColor>
#include <QDataStream>
#include <QIODevice>
#include <QMimeData>
#include <algorithm>

#include "ui/document/project_document.h"
#include "ui/mesh/format.h"

namespace shardlab::ui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

RulesModel::RulesModel(ProjectDocument* doc, QObject* parent) : QAbstractTableModel(parent), doc_(doc) {
  connect(doc_, &ProjectDocument::changed, this, &RulesModel::sync);
  sync();
}

void RulesModel::sync() {
  const project::Project& p = doc_->project();
  sharding::LogicalRules next;
  try {
    next = sharding::project_rules(p);
  } catch (const Error&) {
    // A project only loads with readable rules; an unreadable list shows as empty, and the
    // design's error list says why.
  }
  try {
    mesh_ = sharding::project_mesh(p);
    meshOk_ = true;
  } catch (const Error&) {
    meshOk_ = false;
  }
  const api::Design& d = doc_->design();
  usedNames_ = sharding::logical_names_of(d.graph);
  arraysPerName_.clear();
  if (d.sharding_ok)
    for (const sharding::ArraySharding& a : d.sharding.arrays)
      for (const std::string& n : std::set<std::string>(a.logical.begin(), a.logical.end()))
        if (!n.empty()) ++arraysPerName_[n];

  if (next.size() == rules_.size()) {
    // Same rows: refresh in place, so the view keeps its selection and any open editor.
    rules_ = std::move(next);
    if (!rules_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  } else {
    beginResetModel();
    rules_ = std::move(next);
    endResetModel();
  }
}

bool RulesModel::commit(const sharding::LogicalRules& next, const QString& text) {
  const bool ok = doc_->edit(text, [&](project::Project& p) { p.logical_axis_rules = sharding::rules_to_json(next); });
  if (!ok) {
    emit refused(doc_->lastError());
    sync();  // undo what the rows already show
  }
  return ok;
}

int RulesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rules_.size()); }

int RulesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QStringList RulesModel::unknownAxes(const sharding::LogicalRule& r) const {
  QStringList out;
  for (const std::string& a : r.mesh)
    if (!meshOk_ || mesh_.axis_index(a) < 0) out << q(a);
  return out;
}

QStringList RulesModel::meshAxisChoices() const {
  QStringList out{q(sharding::mesh_axes_text({}))};
  const std::vector<sharding::MeshAxis>& axes = mesh_.axes();
  for (const sharding::MeshAxis& a : axes) out << q(a.name);
  for (const sharding::MeshAxis& a : axes)
    for (const sharding::MeshAxis& b : axes)
      if (a.name != b.name) out << q(sharding::mesh_axes_text({a.name, b.name}));
  return out;
}

QString RulesModel::problem(int row) const {
  if (row < 0 || row >= rowCount()) return {};
  const sharding::LogicalRule& r = rules_[size_t(row)];
  if (r.logical.empty()) return tr("rule %1 has no logical name").arg(row + 1);
  const QStringList unknown = unknownAxes(r);
  if (unknown.isEmpty()) return {};
  return tr("mesh %1 has no axis %2")
      .arg(meshOk_ ? q(mesh_.str()) : tr("(unreadable)"), "'" + unknown.join("', '") + "'");
}

QVariant RulesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const sharding::LogicalRule& r = rules_[size_t(index.row())];
  const QString logical = q(r.logical);
  const auto count = arraysPerName_.find(r.logical);
  const int arrays = count == arraysPerName_.end() ? 0 : count->second;
  const QString why = problem(index.row());
  if (role == ProblemRole) return !why.isEmpty();
  switch (index.column()) {
    case LogicalColumn:
      if (role == Qt::DisplayRole || role == Qt::EditRole) return logical;
      if (role == Qt::ToolTipRole)
        return arrays ? tr("%1 with a dimension named '%2'").arg(counted(arrays, tr("array"), tr("arrays")), logical)
                      : tr("no array of this project has a dimension named '%1'").arg(logical);
      break;
    case MeshColumn:
      if (role == Qt::DisplayRole || role == Qt::EditRole) return q(sharding::mesh_axes_text(r.mesh));
      if (role == Qt::ForegroundRole && !why.isEmpty()) return QBrush(QColor(200, 30, 30));
      if (role == Qt::ToolTipRole) {
        if (!why.isEmpty()) return why;
        if (r.mesh.empty()) return tr("dimensions named '%1' stay replicated (None)").arg(logical);
        int64_t ways = 1;
        for (const std::string& a : r.mesh) ways *= mesh_.axis_size(a);
        return tr("dimensions named '%1' split %2 ways over %3 (unless an earlier rule took these axes)")
            .arg(logical)
            .arg(ways)
            .arg(q(sharding::mesh_axes_text(r.mesh)));
      }
      break;
    case StatusColumn:
      if (role == Qt::DisplayRole) {
        if (!why.isEmpty()) return why;
        return arrays ? counted(arrays, tr("array"), tr("arrays")) : tr("unused");
      }
      if (role == Qt::ForegroundRole) {
        if (!why.isEmpty()) return QBrush(QColor(200, 30, 30));
        if (!arrays) return QBrush(QColor(130, 130, 130));
      }
      if (role == Qt::ToolTipRole) return why.isEmpty() ? data(index.siblingAtColumn(LogicalColumn), role) : why;
      break;
    default:
      break;
  }
  return {};
}

QVariant RulesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    if (role == Qt::DisplayRole) return section + 1;
    if (role == Qt::ToolTipRole) return tr("Rules apply in this order: an earlier rule wins a mesh axis");
    return {};
  }
  if (role == Qt::DisplayRole) {
    switch (section) {
      case LogicalColumn:
        return tr("Logical axis");
      case MeshColumn:
        return tr("Mesh axes");
      case StatusColumn:
        return tr("Status");
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole && section == MeshColumn)
    return tr("One mesh axis (data), several (data+model, the first major), or None for replicated");
  return {};
}

Qt::ItemFlags RulesModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::ItemIsDropEnabled;  // drops land between rows
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled;
  if (index.column() == LogicalColumn || index.column() == MeshColumn) f |= Qt::ItemIsEditable;
  return f;
}

bool RulesModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  sharding::LogicalRules next = rules_;
  sharding::LogicalRule& r = next[size_t(index.row())];
  const QString old = q(r.logical);
  if (index.column() == LogicalColumn) {
    const QString name = value.toString().trimmed();
    if (const std::string why = sharding::axis_name_problem(
            name.toStdString(), tr("rule %1: logical axis").arg(index.row() + 1).toStdString(), false);
        !why.empty()) {
      emit refused(q(why));
      return false;
    }
    if (name == old) return true;
    r.logical = name.toStdString();
    return commit(next, tr("Rename rule '%1' to '%2'").arg(old, name));
  }
  if (index.column() == MeshColumn) {
    const sharding::ParsedMeshAxes parsed = sharding::parse_mesh_axes(value.toString().toStdString());
    if (!parsed.problem.empty()) {
      emit refused(tr("rule '%1': %2").arg(old, q(parsed.problem)));
      return false;
    }
    if (parsed.axes == r.mesh) return true;
    r.mesh = parsed.axes;
    return commit(next, tr("Set rule '%1' to %2").arg(old, q(sharding::mesh_axes_text(r.mesh))));
  }
  return false;
}

bool RulesModel::insertRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row > rowCount() || count < 1) return false;
  auto taken = [&](const std::string& n, const sharding::LogicalRules& rs) {
    return std::any_of(rs.begin(), rs.end(), [&](const sharding::LogicalRule& r) { return r.logical == n; });
  };
  sharding::LogicalRules added;
  for (int i = 0; i < count; ++i) {
    std::string name;
    for (const std::string& n : usedNames_)
      if (!taken(n, rules_) && !taken(n, added)) {
        name = n;
        break;
      }
    for (int k = 1; name.empty(); ++k) {
      const std::string c = k == 1 ? "axis" : "axis" + std::to_string(k);
      if (!taken(c, rules_) && !taken(c, added)) name = c;
    }
    added.push_back({name, {}});
  }
  beginInsertRows(QModelIndex(), row, row + count - 1);
  rules_.insert(rules_.begin() + row, added.begin(), added.end());
  endInsertRows();
  return commit(rules_, count == 1 ? tr("Add rule '%1'").arg(q(added[0].logical)) : tr("Add %1 rules").arg(count));
}

bool RulesModel::removeRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || count < 1 || row + count > rowCount()) return false;
  const QString text =
      count == 1 ? tr("Remove rule '%1'").arg(q(rules_[size_t(row)].logical)) : tr("Remove %1 rules").arg(count);
  beginRemoveRows(QModelIndex(), row, row + count - 1);
  rules_.erase(rules_.begin() + row, rules_.begin() + row + count);
  endRemoveRows();
  return commit(rules_, text);
}

bool RulesModel::moveRows(const QModelIndex& sourceParent, int sourceRow, int count,
                          const QModelIndex& destinationParent, int destinationChild) {
  if (sourceParent.isValid() || destinationParent.isValid() || count < 1 || sourceRow < 0 ||
      sourceRow + count > rowCount() || destinationChild < 0 || destinationChild > rowCount())
    return false;
  // beginMoveRows refuses moves onto the rows themselves (no change).
  if (!beginMoveRows(QModelIndex(), sourceRow, sourceRow + count - 1, QModelIndex(), destinationChild)) return false;
  const QString name = q(rules_[size_t(sourceRow)].logical);
  const sharding::LogicalRules moved(rules_.begin() + sourceRow, rules_.begin() + sourceRow + count);
  rules_.erase(rules_.begin() + sourceRow, rules_.begin() + sourceRow + count);
  const int at = destinationChild > sourceRow ? destinationChild - count : destinationChild;
  rules_.insert(rules_.begin() + at, moved.begin(), moved.end());
  endMoveRows();
  const QString text = count == 1 && at == sourceRow - 1   ? tr("Move rule '%1' up").arg(name)
                       : count == 1 && at == sourceRow + 1 ? tr("Move rule '%1' down").arg(name)
                                                           : tr("Move rule '%1' to row %2").arg(name).arg(at + 1);
  return commit(rules_, text);
}

QStringList RulesModel::mimeTypes() const { return {QString::fromLatin1(kMimeType)}; }

QMimeData* RulesModel::mimeData(const QModelIndexList& indexes) const {
  QList<int> rows;
  for (const QModelIndex& i : indexes)
    if (i.isValid() && i.model() == this && !rows.contains(i.row())) rows << i.row();
  std::sort(rows.begin(), rows.end());
  QByteArray bytes;
  QDataStream out(&bytes, QIODevice::WriteOnly);
  out << quintptr(this) << rows;
  auto* m = new QMimeData;
  m->setData(QString::fromLatin1(kMimeType), bytes);
  return m;
}

QList<int> RulesModel::decodeRows(const QMimeData* data) const {
  if (!data || !data->hasFormat(QString::fromLatin1(kMimeType))) return {};
  QDataStream in(data->data(QString::fromLatin1(kMimeType)));
  quintptr from = 0;
  QList<int> rows;
  in >> from >> rows;
  // Only this model's own rows, contiguous: a drag moves one block of rules.
  if (in.status() != QDataStream::Ok || from != quintptr(this) || rows.isEmpty()) return {};
  for (int i = 0; i < rows.size(); ++i)
    if (rows[i] != rows[0] + i || rows[i] < 0 || rows[i] >= rowCount()) return {};
  return rows;
}

bool RulesModel::canDropMimeData(const QMimeData* data, Qt::DropAction action, int, int, const QModelIndex&) const {
  return action == Qt::MoveAction && !decodeRows(data).isEmpty();
}

bool RulesModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int, const QModelIndex& parent) {
  if (action == Qt::IgnoreAction) return true;
  const QList<int> rows = decodeRows(data);
  if (action != Qt::MoveAction || rows.isEmpty()) return false;
  const int dest = row >= 0 ? std::min(row, rowCount()) : parent.isValid() ? parent.row() : rowCount();
  if (dest >= rows.first() && dest <= rows.last() + 1) return true;  // dropped onto itself: nothing moves
  return moveRows(QModelIndex(), rows.first(), int(rows.size()), QModelIndex(), dest);
}

}  // namespace shardlab::ui
