#include "ui/mesh/mesh_axes_delegate.h"

#include <QComboBox>

#include "ui/mesh/rules_model.h"

namespace shardlab::ui {

MeshAxesDelegate::MeshAxesDelegate(const RulesModel* model, QObject* parent) : QStyledItemDelegate(parent), rules_(model) {}

QWidget* MeshAxesDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const {
  auto* combo = new QComboBox(parent);
  combo->setObjectName("meshAxesPicker");
  combo->addItems(rules_->meshAxisChoices());
  // A pick is an edit at once, as choosing from a menu is.
  connect(combo, &QComboBox::activated, this, [this, combo] {
    emit const_cast<MeshAxesDelegate*>(this)->commitData(combo);
    emit const_cast<MeshAxesDelegate*>(this)->closeEditor(combo);
  });
  return combo;
}

void MeshAxesDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
  auto* combo = static_cast<QComboBox*>(editor);
  const QString current = index.data(Qt::EditRole).toString();
  int at = combo->findText(current);
  if (at < 0) {  // an axis the mesh lacks, as the file has it: shown, so the user sees what to replace
    combo->addItem(current);
    at = combo->count() - 1;
  }
  combo->setCurrentIndex(at);
}

void MeshAxesDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const {
  model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
}

}  // namespace shardlab::ui
