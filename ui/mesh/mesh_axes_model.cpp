#include "ui/mesh/mesh_axes_model.h"

#include <algorithm>

#include "ui/document/project_document.h"

namespace shardlab::ui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

MeshAxesModel::MeshAxesModel(ProjectDocument* doc, QObject* parent) : QAbstractTableModel(parent), doc_(doc) {
  connect(doc_, &ProjectDocument::changed, this, &MeshAxesModel::sync);
  sync();
}

void MeshAxesModel::sync() {
  sharding::Mesh next;
  meshError_.clear();
  try {
    next = sharding::project_mesh(doc_->project());
  } catch (const Error& e) {
    meshError_ = QString::fromUtf8(e.what());
  }
  if (next.axes().size() == mesh_.axes().size()) {
    // Same rows: update in place, so the size spin boxes (persistent editors) stay open.
    mesh_ = next;
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  } else {
    beginResetModel();
    mesh_ = next;
    endResetModel();
  }
}

bool MeshAxesModel::commit(const std::vector<sharding::MeshAxis>& axes, const QString& text, const QString& mergeKey,
                           const sharding::LogicalRules* rules) {
  sharding::Mesh next;
  try {
    next = sharding::Mesh(axes);
  } catch (const Error& e) {
    emit refused(QString::fromUtf8(e.what()));
    return false;
  }
  if (next.device_count() > kMaxDevices) {
    emit refused(tr("mesh %1 has %2 devices; this editor simulates at most %3 virtual CPU devices")
                     .arg(q(next.str()))
                     .arg(next.device_count())
                     .arg(kMaxDevices));
    return false;
  }
  const bool ok = doc_->edit(
      text,
      [&](project::Project& p) {
        // No axes at all is the one-device mesh, which the project writes as no mesh.
        p.mesh = axes.empty() ? graph::Json(nullptr) : sharding::mesh_to_json(next);
        if (rules) p.logical_axis_rules = sharding::rules_to_json(*rules);
      },
      mergeKey);
  if (!ok) emit refused(doc_->lastError());
  return ok;
}

int MeshAxesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(mesh_.axes().size()); }

int MeshAxesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant MeshAxesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const sharding::MeshAxis& a = mesh_.axes()[size_t(index.row())];
  if (role == Qt::DisplayRole || role == Qt::EditRole) {
    if (index.column() == NameColumn) return q(a.name);
    return qlonglong(a.size);
  }
  if (role == Qt::ToolTipRole) {
    if (index.column() == NameColumn)
      return tr("Mesh axis %1 of %2; rules name it to split dimensions over it").arg(index.row() + 1).arg(rowCount());
    return tr("Devices along '%1'").arg(q(a.name));
  }
  if (role == Qt::TextAlignmentRole && index.column() == SizeColumn) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant MeshAxesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  return section == NameColumn ? tr("Axis") : section == SizeColumn ? tr("Size") : QVariant();
}

Qt::ItemFlags MeshAxesModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable;
}

bool MeshAxesModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  std::vector<sharding::MeshAxis> axes = mesh_.axes();
  sharding::MeshAxis& a = axes[size_t(index.row())];
  const QString old = q(a.name);
  if (index.column() == NameColumn) {
    const QString name = value.toString().trimmed();
    if (const std::string why =
            sharding::axis_name_problem(name.toStdString(), tr("mesh axis %1").arg(index.row() + 1).toStdString(), true);
        !why.empty()) {
      emit refused(q(why));
      return false;
    }
    if (name == old) return true;
    a.name = name.toStdString();
    // Rules that named the old axis follow it, so a rename does not silently unshard them.
    sharding::LogicalRules rules;
    try {
      rules = sharding::project_rules(doc_->project());
    } catch (const Error&) {
      return commit(axes, tr("Rename mesh axis '%1' to '%2'").arg(old, name),
                    QStringLiteral("mesh.name:%1").arg(index.row()));
    }
    for (sharding::LogicalRule& r : rules)
      for (std::string& m : r.mesh)
        if (m == old.toStdString()) m = a.name;
    return commit(axes, tr("Rename mesh axis '%1' to '%2'").arg(old, name),
                  QStringLiteral("mesh.name:%1").arg(index.row()), &rules);
  }
  if (index.column() == SizeColumn) {
    bool isNumber = false;
    const qlonglong size = value.toLongLong(&isNumber);
    if (!isNumber) {
      emit refused(tr("mesh axis '%1': size '%2' is not a whole number").arg(old, value.toString()));
      return false;
    }
    if (size == a.size) return true;
    a.size = size;
    return commit(axes, tr("Set mesh axis '%1' to %2").arg(old).arg(size), QStringLiteral("mesh.size:%1").arg(old));
  }
  return false;
}

bool MeshAxesModel::insertRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row > rowCount() || count < 1) return false;
  std::vector<sharding::MeshAxis> axes = mesh_.axes();
  auto taken = [&](const std::string& n) {
    return std::any_of(axes.begin(), axes.end(), [&](const sharding::MeshAxis& a) { return a.name == n; });
  };
  QStringList names;
  for (int i = 0; i < count; ++i) {
    std::string name;
    for (const char* c : {"data", "model"})
      if (name.empty() && !taken(c)) name = c;
    for (int k = 2; name.empty(); ++k)
      if (!taken("axis" + std::to_string(k))) name = "axis" + std::to_string(k);
    axes.insert(axes.begin() + row + i, sharding::MeshAxis{name, 1});
    names << q(name);
  }
  return commit(axes, tr("Add mesh axis '%1'").arg(names.join("', '")), {});
}

bool MeshAxesModel::removeRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || count < 1 || row + count > rowCount()) return false;
  std::vector<sharding::MeshAxis> axes = mesh_.axes();
  QStringList names;
  for (int i = row; i < row + count; ++i) names << q(axes[size_t(i)].name);
  axes.erase(axes.begin() + row, axes.begin() + row + count);
  return commit(axes, tr("Remove mesh axis '%1'").arg(names.join("', '")), {});
}

}  // namespace shardlab::ui
