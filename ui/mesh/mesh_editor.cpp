#include "ui/mesh/mesh_editor.h"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStringList>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/document/project_document.h"
#include "ui/mesh/device_grid.h"
#include "ui/mesh/format.h"
#include "ui/mesh/mesh_axes_model.h"

namespace shardlab::ui {

namespace {

// Sizes edit in spin boxes that stay open and commit on every step, so the checks on the right
// follow the size as it changes (the model merges the steps into one undo command).
class SizeDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* spin = new QSpinBox(parent);
    spin->setRange(1, int(MeshAxesModel::kMaxDevices));
    spin->setAutoFillBackground(true);  // covers the cell, so the number shows once
    spin->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    spin->setKeyboardTracking(true);
    connect(spin, &QSpinBox::valueChanged, this,
            [this, spin] { emit const_cast<SizeDelegate*>(this)->commitData(spin); });
    return spin;
  }
  // The spin box is always open over the cell: the cell itself draws no text under it.
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QStyleOptionViewItem blank = option;
    initStyleOption(&blank, index);
    blank.text.clear();
    const QStyle* style = blank.widget ? blank.widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &blank, painter, blank.widget);
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* spin = static_cast<QSpinBox*>(editor);
    const int v = index.data(Qt::EditRole).toInt();
    if (spin->value() == v) return;
    const QSignalBlocker block(spin);  // showing the project's value is not an edit
    spin->setValue(v);
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    auto* spin = static_cast<QSpinBox*>(editor);
    spin->interpretText();
    if (!model->setData(index, spin->value())) setEditorData(editor, index);  // refused: show the real size again
  }
};

}  // namespace

MeshEditor::MeshEditor(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  model_ = new MeshAxesModel(doc_, this);

  kind_ = new QComboBox(this);
  kind_->setObjectName("deviceKind");
  kind_->addItem(tr("CPU (virtual devices)"), "cpu");
  kind_->addItem(tr("GPU"), "gpu");
  if (auto* items = qobject_cast<QStandardItemModel*>(kind_->model())) {
    QStandardItem* gpu = items->item(1);
    gpu->setEnabled(false);
    gpu->setToolTip(tr("needs the CUDA backend"));
  }
  kind_->setToolTip(tr("Devices the mesh is made of: the CPU backend runs each as a thread with its own memory"));
  count_ = new QLabel(this);
  count_->setObjectName("deviceCount");

  view_ = new QTableView(this);
  view_->setObjectName("meshAxes");
  view_->setModel(model_);
  view_->setItemDelegateForColumn(MeshAxesModel::SizeColumn, new SizeDelegate(view_));
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                         QAbstractItemView::SelectedClicked);
  view_->horizontalHeader()->setSectionResizeMode(MeshAxesModel::NameColumn, QHeaderView::Stretch);
  view_->horizontalHeader()->setSectionResizeMode(MeshAxesModel::SizeColumn, QHeaderView::Fixed);
  view_->horizontalHeader()->resizeSection(MeshAxesModel::SizeColumn, 110);
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->setMaximumHeight(view_->horizontalHeader()->sizeHint().height() +
                          4 * view_->verticalHeader()->defaultSectionSize() + 4);

  add_ = new QPushButton(tr("Add axis"), this);
  add_->setObjectName("addAxis");
  remove_ = new QPushButton(tr("Remove axis"), this);
  remove_->setObjectName("removeAxis");
  error_ = new QLabel(this);
  error_->setObjectName("meshError");
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #c62828;");
  error_->hide();
  grid_ = new DeviceGrid(this);
  grid_->setObjectName("deviceGrid");

  auto* kindRow = new QHBoxLayout;
  kindRow->addWidget(new QLabel(tr("Devices:"), this));
  kindRow->addWidget(kind_);
  kindRow->addWidget(count_, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(add_);
  buttons->addWidget(remove_);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(kindRow);
  layout->addWidget(view_);
  layout->addLayout(buttons);
  layout->addWidget(error_);
  layout->addWidget(grid_, 1);

  connect(add_, &QPushButton::clicked, this, [this] { model_->insertRows(model_->rowCount(), 1); });
  connect(remove_, &QPushButton::clicked, this, [this] {
    const QModelIndex current = view_->currentIndex();
    model_->removeRows(current.isValid() ? current.row() : model_->rowCount() - 1, 1);
  });
  connect(model_, &MeshAxesModel::refused, this, &MeshEditor::showError);
  // Shown under the table, and in the Log like every refused edit.
  connect(model_, &MeshAxesModel::refused, this, [this](const QString& reason) { doc_->message("warning", tr("Mesh edit refused: %1").arg(reason)); });
  connect(model_, &QAbstractItemModel::modelReset, this, &MeshEditor::openSizeEditors);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, &MeshEditor::refresh);
  // Any change of the project (this editor's own included) clears a refusal shown before it.
  connect(doc_, &ProjectDocument::changed, this, [this] {
    error_->clear();
    error_->hide();
    refresh();
  });
  openSizeEditors();
  refresh();
}

void MeshEditor::openSizeEditors() {
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QModelIndex at = model_->index(r, MeshAxesModel::SizeColumn);
    view_->openPersistentEditor(at);
    // The view selects an editor's text when it opens it, as for typing; an always-open spin box
    // should just show its number until it is used.
    if (auto* edit = view_->indexWidget(at) ? view_->indexWidget(at)->findChild<QLineEdit*>() : nullptr)
      edit->deselect();
  }
}

void MeshEditor::showError(const QString& reason) {
  error_->setText(reason);
  error_->setToolTip(reason);
  error_->show();
}

void MeshEditor::refresh() {
  const sharding::Mesh& mesh = model_->mesh();
  QStringList factors;
  for (const sharding::MeshAxis& a : mesh.axes())
    factors << QStringLiteral("%1 %2").arg(QString::fromStdString(a.name)).arg(a.size);
  const qlonglong n = mesh.device_count();
  const QString devices = counted(n, tr("device"), tr("devices"));
  count_->setText(factors.isEmpty() ? devices : tr("%1 = %2").arg(devices, factors.join(QStringLiteral(" × "))));
  if (!model_->meshError().isEmpty()) showError(model_->meshError());
  remove_->setEnabled(model_->rowCount() > 0);
  grid_->setMesh(mesh);
}

}  // namespace shardlab::ui
