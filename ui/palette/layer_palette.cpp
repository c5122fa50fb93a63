#include "ui/palette/layer_palette.h"

#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/canvas/placement.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/palette/layer_model.h"

namespace shardlab::ui {

namespace {

// Room between the graph and a node added beside it, as between two layers of the layout.
constexpr double kGapRight = layout::kLayerGap;

}  // namespace

LayerPalette::LayerPalette(ProjectDocument* doc, QWidget* parent)
    : QWidget(parent), doc_(doc), model_(new LayerModel(this)), proxy_(new QSortFilterProxyModel(this)) {
  setObjectName("layerPalette");
  proxy_->setSourceModel(model_);
  proxy_->setFilterRole(LayerModel::SearchRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setRecursiveFilteringEnabled(true);  // a matching layer keeps its group
  proxy_->setAutoAcceptChildRows(true);        // a matching group keeps its layers

  filter_ = new QLineEdit(this);
  filter_->setObjectName("layerFilter");
  filter_->setPlaceholderText(tr("Search layers"));
  filter_->setClearButtonEnabled(true);
  filter_->installEventFilter(this);

  view_ = new QTreeView(this);
  view_->setObjectName("layerList");
  view_->setModel(proxy_);
  view_->setHeaderHidden(true);
  view_->setRootIsDecorated(false);
  view_->setUniformRowHeights(true);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setDragEnabled(true);
  view_->setDragDropMode(QAbstractItemView::DragOnly);
  view_->setDefaultDropAction(Qt::CopyAction);
  view_->setExpandsOnDoubleClick(false);  // groups stay open; a double-click adds a layer
  view_->installEventFilter(this);
  view_->expandAll();

  help_ = new QLabel(tr("Drag a layer onto the graph, or double-click it to add it."), this);
  help_->setObjectName("layerHelp");
  help_->setWordWrap(true);
  help_->setForegroundRole(QPalette::PlaceholderText);
  help_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  // Room for a three-line summary, so the list does not jump as the current layer changes.
  help_->setMinimumHeight(help_->fontMetrics().lineSpacing() * 3 + 4);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(filter_);
  layout->addWidget(view_, 1);
  layout->addWidget(help_);

  connect(filter_, &QLineEdit::textChanged, this, &LayerPalette::applyFilter);
  connect(filter_, &QLineEdit::returnPressed, this, [this] { activate(firstLayer()); });
  connect(view_, &QTreeView::doubleClicked, this, &LayerPalette::activate);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
    const QString tip = current.data(Qt::ToolTipRole).toString();
    help_->setText(current.data(LayerModel::TypeRole).toString().isEmpty() ? tr("Drag a layer onto the graph, or double-click it to add it.") : tip);
  });
}

void LayerPalette::applyFilter(const QString& text) {
  proxy_->setFilterFixedString(text.trimmed());
  view_->expandAll();
  if (!text.trimmed().isEmpty()) view_->setCurrentIndex(firstLayer());
}

QModelIndex LayerPalette::firstLayer() const {
  for (int g = 0; g < proxy_->rowCount(); ++g) {
    const QModelIndex group = proxy_->index(g, 0);
    if (proxy_->rowCount(group) > 0) return proxy_->index(0, 0, group);
  }
  return {};
}

bool LayerPalette::eventFilter(QObject* watched, QEvent* e) {
  if (e->type() == QEvent::KeyPress) {
    const auto* k = static_cast<QKeyEvent*>(e);
    if (watched == view_ && (k->key() == Qt::Key_Return || k->key() == Qt::Key_Enter)) {
      activate(view_->currentIndex());
      return true;
    }
    if (watched == filter_ && k->key() == Qt::Key_Down) {
      // From the search field straight into the matches.
      view_->setFocus();
      if (!view_->currentIndex().isValid() || view_->currentIndex().data(LayerModel::TypeRole).toString().isEmpty())
        view_->setCurrentIndex(firstLayer());
      return true;
    }
  }
  return QWidget::eventFilter(watched, e);
}

void LayerPalette::activate(const QModelIndex& proxyIndex) {
  const QString type = proxyIndex.data(LayerModel::TypeRole).toString();
  if (!type.isEmpty()) addLayer(type);
}

QPointF LayerPalette::spotRightOfGraph() const {
  // Where the canvas draws each node (placed or laid out automatically), measured as it draws them.
  const QHash<QString, QRectF> rects = placement::nodeRects(doc_->project(), doc_->design(), font(), QString());
  if (rects.isEmpty()) return {0, 0};
  QRectF rightmost = *rects.begin();
  for (const QRectF& r : rects)
    if (r.right() > rightmost.right()) rightmost = r;
  return {rightmost.right() + kGapRight, rightmost.top()};
}

QString LayerPalette::addLayer(const QString& type) {
  const QPointF at = spotRightOfGraph();
  std::string path;
  if (!doc_->edit(tr("Add %1").arg(type), [&](project::Project& p) { path = edits::add_node(p, type.toStdString(), "", at.x(), at.y()); }))
    return {};
  doc_->setSelection({QString::fromStdString(path)});
  return QString::fromStdString(path);
}

}  // namespace shardlab::ui
