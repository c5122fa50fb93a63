// The rules table's mesh-axes cell edits in a list of what the mesh has: None, each axis, and each
// ordered pair of axes (data+model), so a rule cannot name an axis the mesh lacks by a typo. A rule
// read from a file that names a missing axis keeps its text in the list until it is changed.
#pragma once

#include <QStyledItemDelegate>

namespace shardlab::ui {

class RulesModel;

class MeshAxesDelegate : public QStyledItemDelegate {
  Q_OBJECT

 public:
  MeshAxesDelegate(const RulesModel* model, QObject* parent);

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override;
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;

 private:
  const RulesModel* rules_;
};

}  // namespace shardlab::ui
