#include "ui/mesh/rules_editor.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSignalBlocker>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/document/project_document.h"
#include "ui/mesh/layout_advisor_dialog.h"
#include "ui/mesh/mesh_axes_delegate.h"
#include "ui/mesh/rules_model.h"
#include "ui/mesh/rules_view.h"

namespace shardlab::ui {

RulesEditor::RulesEditor(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  model_ = new RulesModel(doc_, this);
  view_ = new RulesView(this);
  view_->setObjectName("rules");
  view_->setModel(model_);
  view_->setItemDelegateForColumn(RulesModel::MeshColumn, new MeshAxesDelegate(model_, view_));
  view_->horizontalHeader()->setSectionResizeMode(RulesModel::LogicalColumn, QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setSectionResizeMode(RulesModel::MeshColumn, QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                         QAbstractItemView::SelectedClicked);

  presets_ = new QToolButton(this);
  presets_->setObjectName("presets");
  presets_->setText(tr("Presets"));
  presets_->setToolTip(tr("Replace the rules (and the mesh, where needed) with a common strategy; one undo step"));
  presets_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(presets_);
  menu->setToolTipsVisible(true);
  for (const sharding::Preset& preset : sharding::presets()) {
    const QString id = QString::fromStdString(preset.id);
    QAction* a = menu->addAction(QString::fromStdString(preset.title));
    a->setObjectName("preset_" + id);
    a->setToolTip(QString::fromStdString(preset.description));
    a->setData(id);
    connect(a, &QAction::triggered, this, [this, id] { applyPreset(id); });
  }
  presets_->setMenu(menu);
  suggest_ = new QPushButton(tr("Suggest…"), this);
  suggest_->setObjectName("suggestLayouts");
  suggest_->setToolTip(tr("Rank the meshes and rules this project could use on N devices: memory per device, "
                          "predicted step time, what bounds each"));
  connect(suggest_, &QPushButton::clicked, this, [this] {
    if (!advisor_) advisor_ = new LayoutAdvisorDialog(doc_, this);
    advisor_->show();
    advisor_->raise();
    advisor_->suggest();
  });

  fallback_ = new QComboBox(this);
  fallback_->setObjectName("constraintFallback");
  fallback_->addItem(tr("replicated (unsharded)"), QString());
  fallback_->addItem(tr("an error"), QStringLiteral("error"));
  fallback_->addItem(tr("left to propagation (no constraint)"), QStringLiteral("no_constraint"));
  // Its longest choice must not set the Mesh & Rules tab's minimum width: it shrinks and elides.
  fallback_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  fallback_->setMinimumContentsLength(10);
  fallback_->setToolTip(
      tr("What an activation's logical name that no rule maps means when training "
         "(Flax's RulesFallback): kept replicated, an error, or no constraint at all"));

  add_ = new QPushButton(tr("Add"), this);
  add_->setObjectName("addRule");
  add_->setToolTip(tr("Add a rule after the selected one, for a logical name that has none yet"));
  remove_ = new QPushButton(tr("Remove"), this);
  remove_->setObjectName("removeRule");
  up_ = new QPushButton(tr("Up"), this);
  up_->setObjectName("ruleUp");
  up_->setToolTip(tr("Earlier rules win a mesh axis over later ones"));
  down_ = new QPushButton(tr("Down"), this);
  down_->setObjectName("ruleDown");
  error_ = new QLabel(this);
  error_->setObjectName("rulesError");
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #c62828;");
  error_->hide();

  auto* top = new QHBoxLayout;
  top->addWidget(presets_);
  top->addWidget(suggest_);
  top->addStretch(1);
  auto* buttons = new QHBoxLayout;
  for (QPushButton* b : {add_, remove_, up_, down_}) buttons->addWidget(b);
  buttons->addStretch(1);
  // On its own line: beside the buttons it set the tab's minimum width.
  auto* unmatched = new QHBoxLayout;
  unmatched->addWidget(new QLabel(tr("Names without a rule are"), this));
  unmatched->addWidget(fallback_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(view_, 1);
  layout->addLayout(buttons);
  layout->addLayout(unmatched);
  layout->addWidget(error_);

  connect(add_, &QPushButton::clicked, this, [this] {
    const QModelIndex current = view_->currentIndex();
    const int row = current.isValid() ? current.row() + 1 : model_->rowCount();
    if (model_->insertRows(row, 1)) view_->setCurrentIndex(model_->index(row, RulesModel::LogicalColumn));
  });
  connect(remove_, &QPushButton::clicked, this, [this] {
    const QModelIndex current = view_->currentIndex();
    if (current.isValid()) model_->removeRows(current.row(), 1);
  });
  connect(up_, &QPushButton::clicked, this, [this] { moveCurrent(-1); });
  connect(down_, &QPushButton::clicked, this, [this] { moveCurrent(+1); });
  connect(fallback_, &QComboBox::activated, this, [this](int i) {
    const std::string value = fallback_->itemData(i).toString().toStdString();
    doc_->edit(tr("Set unmatched logical names to %1").arg(fallback_->itemText(i)),
               [&](project::Project& p) { p.constraint_fallback = value; });
  });
  connect(model_, &RulesModel::refused, this, &RulesEditor::showError);
  // Shown under the table, and in the Log like every refused edit.
  connect(model_, &RulesModel::refused, this, [this](const QString& reason) { doc_->message("warning", tr("Rule edit refused: %1").arg(reason)); });
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, &RulesEditor::refresh);
  connect(model_, &QAbstractItemModel::modelReset, this, &RulesEditor::refresh);
  connect(model_, &QAbstractItemModel::rowsMoved, this, &RulesEditor::refresh);
  connect(doc_, &ProjectDocument::changed, this, [this] {
    error_->clear();
    error_->hide();
    refresh();
  });
  refresh();
}

bool RulesEditor::applyPreset(const QString& id) {
  QString title = id;
  for (const sharding::Preset& p : sharding::presets())
    if (QString::fromStdString(p.id) == id) title = QString::fromStdString(p.title);
  const std::vector<std::string> names = sharding::logical_names_of(doc_->design().graph);
  const bool ok = doc_->edit(tr("Apply preset %1").arg(title),
                             [&](project::Project& p) { sharding::apply_preset(id.toStdString(), names, p); });
  if (!ok) showError(doc_->lastError());
  return ok;
}

void RulesEditor::moveCurrent(int delta) {
  const QModelIndex current = view_->currentIndex();
  if (!current.isValid()) return;
  const int row = current.row();
  const int target = row + delta;
  if (target < 0 || target >= model_->rowCount()) return;
  // moveRows puts the row before `destinationChild`: one further when moving down.
  model_->moveRows(QModelIndex(), row, 1, QModelIndex(), delta > 0 ? target + 1 : target);
}

void RulesEditor::showError(const QString& reason) {
  error_->setText(reason);
  error_->setToolTip(reason);
  error_->show();
}

void RulesEditor::refresh() {
  const QModelIndex current = view_->currentIndex();
  remove_->setEnabled(current.isValid());
  up_->setEnabled(current.isValid() && current.row() > 0);
  down_->setEnabled(current.isValid() && current.row() + 1 < model_->rowCount());
  const QSignalBlocker block(fallback_);
  const int at = fallback_->findData(QString::fromStdString(
      doc_->project().constraint_fallback == "unsharded" ? std::string() : doc_->project().constraint_fallback));
  fallback_->setCurrentIndex(at < 0 ? 0 : at);
}

}  // namespace shardlab::ui
