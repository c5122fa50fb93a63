#include "ui/mesh/spec_table.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/document/project_document.h"
#include "ui/sharding/array_menu.h"
#include "ui/mesh/spec_model.h"

namespace shardlab::ui {

void SpecKindFilter::setKindShown(int kind, bool shown) {
  if (shown == kindShown(kind)) return;
  if (shown)
    hidden_.erase(kind);
  else
    hidden_.insert(kind);
  invalidateRowsFilter();
}

bool SpecKindFilter::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const QModelIndex i = sourceModel()->index(sourceRow, 0, sourceParent);
  return kindShown(i.data(SpecModel::KindRole).toInt());
}

SpecTable::SpecTable(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  model_ = new SpecModel(doc_, this);
  filter_ = new SpecKindFilter(this);
  filter_->setSourceModel(model_);
  filter_->setSortRole(SpecModel::SortRole);
  view_ = new QTableView(this);
  view_->setObjectName("specTable");
  view_->setModel(filter_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(-1, Qt::AscendingOrder);  // the check's order (parameters first) until a header is clicked
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setWordWrap(false);
  view_->verticalHeader()->hide();
  // A row a line of text tall (the style's default is half as tall again): more arrays in a short panel.
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setStretchLastSection(true);

  auto* kinds = new QHBoxLayout;
  const std::pair<sharding::ArrayKind, QString> labels[] = {
      {sharding::ArrayKind::Parameter, tr("Parameters")},
      {sharding::ArrayKind::OptimizerState, tr("Optimizer")},
      {sharding::ArrayKind::Gradient, tr("Gradients")},
      {sharding::ArrayKind::Activation, tr("Activations")},
      {sharding::ArrayKind::Input, tr("Inputs")}};
  for (const auto& [kind, label] : labels) {
    auto* b = new QToolButton(this);
    b->setText(label);
    b->setCheckable(true);
    b->setChecked(true);
    b->setObjectName(QStringLiteral("showKind%1").arg(int(kind)));
    connect(b, &QToolButton::toggled, this, [this, k = int(kind)](bool on) { filter_->setKindShown(k, on); });
    kinds->addWidget(b);
    kinds_.push_back(b);
  }
  kinds->addStretch(1);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(kinds);
  layout->addWidget(view_, 1);

  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& proxyIndex) {
    const sharding::ArraySharding* a = model_->array(filter_->mapToSource(proxyIndex).row());
    if (a) doc_->requestArray(QString::fromStdString(a->name));
  });
  connect(doc_, &ProjectDocument::arrayRequested, this, &SpecTable::selectArray);
  view_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view_, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    const QModelIndex at = view_->indexAt(pos);
    const sharding::ArraySharding* a = at.isValid() ? model_->array(filter_->mapToSource(at).row()) : nullptr;
    if (a) execArrayMenu(doc_, QString::fromStdString(a->name), view_, view_->viewport()->mapToGlobal(pos));
  });
}

QToolButton* SpecTable::kindButton(int kind) const {
  return kind >= 0 && kind < int(kinds_.size()) ? kinds_[size_t(kind)] : nullptr;
}

void SpecTable::selectArray(const QString& name) {
  const int row = model_->rowOf(name);
  if (row < 0) return;
  const QModelIndex at = filter_->mapFromSource(model_->index(row, SpecModel::NameColumn));
  if (!at.isValid()) return;  // its kind is hidden
  view_->setCurrentIndex(at);
  view_->scrollTo(at);
}

}  // namespace shardlab::ui
