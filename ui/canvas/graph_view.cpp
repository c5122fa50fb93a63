#include "ui/canvas/graph_view.h"

#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/find_node_bar.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/minimap.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/port_item.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/palette/layer_mime.h"

namespace shardlab::ui {

namespace {

constexpr double kMinZoom = 0.1, kMaxZoom = 4.0, kZoomStep = 1.25;
// Room around the graph to scroll into, so there is space to drop new layers beside it.
constexpr double kSceneMargin = 1500;
constexpr int kNoticeMs = 5000;
// Find Node centres a match at least this large, so it can be read.
constexpr double kFindZoom = 0.8;
constexpr int kOverlayMargin = 10;

}  // namespace

GraphView::GraphView(ProjectDocument* doc, QWidget* parent)
    : QGraphicsView(parent),
      doc_(doc),
      scene_(new GraphScene(doc, this)),
      notice_(new QLabel(viewport())),
      findBar_(new FindNodeBar(doc, viewport())),
      minimap_(new Minimap(this)) {
  setObjectName("graphView");
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::RubberBandDrag);
  setRubberBandSelectionMode(Qt::IntersectsItemShape);
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  setAcceptDrops(true);
  viewport()->setAcceptDrops(true);
  setFocusPolicy(Qt::StrongFocus);
  scene_->setPalette(palette());

  notice_->setObjectName("canvasNotice");
  notice_->setWordWrap(true);
  notice_->setMaximumWidth(420);
  notice_->setAutoFillBackground(true);
  notice_->setFrameShape(QFrame::StyledPanel);
  notice_->setMargin(6);
  notice_->setForegroundRole(QPalette::ToolTipText);
  notice_->setBackgroundRole(QPalette::ToolTipBase);
  notice_->hide();
  noticeTimer_.setSingleShot(true);
  connect(&noticeTimer_, &QTimer::timeout, notice_, &QWidget::hide);

  connect(doc_, &ProjectDocument::changed, this, &GraphView::followDocument);
  connect(doc_, &ProjectDocument::opened, this, [this] {
    fitSceneRect(true);
    zoomToFit();
  });
  connect(scene_, &GraphScene::refused, this,
          [this](const QString& reason, const QPointF& at) { showNotice(reason, mapFromScene(at)); });
  connect(findBar_, &FindNodeBar::picked, this, [this](const QString& path) {
    if (!revealNode(path)) return;
    findBar_->hide();
    setFocus();
  });
  // Nodes moved, added or removed change the minimap.
  connect(scene_, &QGraphicsScene::changed, minimap_, &Minimap::sync);
  scene_->rebuild();
  fitSceneRect(true);
}

double GraphView::zoom() const { return transform().m11(); }

void GraphView::followDocument() {
  // Rebuilding may grow the scene rect, which moves the scroll bars: keep the same point centred.
  const QPointF center = mapToScene(viewport()->rect().center());
  const QRectF before = sceneRect();
  scene_->rebuild();
  fitSceneRect(false);
  if (sceneRect() != before) centerOn(center);
  minimap_->sync();
}

void GraphView::fitSceneRect(bool reset) {
  const QRectF want = scene_->graphRect().adjusted(-kSceneMargin, -kSceneMargin, kSceneMargin, kSceneMargin);
  // Growing only (until another project opens) keeps the view from jumping when nodes go.
  scene_->setSceneRect(reset || scene_->sceneRect().isEmpty() ? want : scene_->sceneRect().united(want));
}

// ---- zoom -----------------------------------------------------------------------------------

void GraphView::zoomBy(double factor, const QPoint& anchor) {
  const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  if (std::abs(target - zoom()) < 1e-9) return;
  const QPointF under = mapToScene(anchor);
  const double f = target / zoom();
  scale(f, f);
  const QPoint moved = mapFromScene(under) - anchor;
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + moved.x());
  verticalScrollBar()->setValue(verticalScrollBar()->value() + moved.y());
  minimap_->sync();
}

void GraphView::zoomIn() {
  fitted_ = false;
  zoomBy(kZoomStep, viewport()->rect().center());
}

void GraphView::zoomOut() {
  fitted_ = false;
  zoomBy(1 / kZoomStep, viewport()->rect().center());
}

void GraphView::zoomToFit() {
  const QRectF r = scene_->graphRect();
  if (r.isEmpty()) return;
  fitInView(r.adjusted(-30, -30, 30, 30), Qt::KeepAspectRatio);
  // A small graph is shown at its natural size rather than blown up.
  const double z = std::clamp(zoom(), kMinZoom, 1.0);
  setTransform(QTransform::fromScale(z, z));
  centerOn(r.center());
  fitted_ = true;
  minimap_->sync();
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  if (fitted_) zoomToFit();
  placeOverlays();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  minimap_->sync();
}

void GraphView::placeOverlays() {
  findBar_->move(viewport()->width() - findBar_->width() - kOverlayMargin, kOverlayMargin);
  minimap_->sync();
}

void GraphView::panTo(const QPointF& scenePos) {
  fitted_ = false;
  centerOn(scenePos);
  minimap_->sync();
}

void GraphView::wheelEvent(QWheelEvent* e) {
  fitted_ = false;
  if (e->modifiers() & Qt::ControlModifier) {
    zoomBy(std::pow(1.0015, e->angleDelta().y()), e->position().toPoint());
    e->accept();
    return;
  }
  QGraphicsView::wheelEvent(e);
}

// ---- commands -------------------------------------------------------------------------------

void GraphView::selectAll() { scene_->selectAllNodes(); }

void GraphView::autoLayout() { scene_->arrange(); }

void GraphView::alignLeft() { scene_->alignSelection(Qt::LeftEdge); }

void GraphView::alignTop() { scene_->alignSelection(Qt::TopEdge); }

void GraphView::deleteSelection() { scene_->deleteSelection(); }

void GraphView::addLayer(const QString& type) { scene_->addNode(type, mapToScene(viewport()->rect().center())); }

void GraphView::findNode() {
  findBar_->open();
  placeOverlays();
}

bool GraphView::revealNode(const QString& path) {
  if (!edits::find_node(doc_->project(), path.toStdString())) return false;
  // Outermost first: an inner block is drawn only once the block around it is open.
  const QStringList parts = path.split('/');
  for (int i = 1; i < parts.size(); ++i) {
    const QString block = parts.mid(0, i).join('/');
    if (!edits::expanded(doc_->project(), block.toStdString())) scene_->toggleExpanded(block);
  }
  NodeItem* item = scene_->node(path);
  if (!item) return false;
  doc_->setSelection({path});
  if (zoom() < kFindZoom) {
    setTransform(QTransform::fromScale(kFindZoom, kFindZoom));
  }
  fitSceneRect(false);
  panTo(item->sceneBoundingRect().center());
  return true;
}

void GraphView::showNotice(const QString& text, const QPoint& viewportPos) {
  notice_->setText(text);
  notice_->adjustSize();
  const QRect area = viewport()->rect();
  const int x = std::clamp(viewportPos.x() + 12, 0, std::max(0, area.width() - notice_->width()));
  const int y = std::clamp(viewportPos.y() + 12, 0, std::max(0, area.height() - notice_->height()));
  notice_->move(x, y);
  notice_->show();
  notice_->raise();
  noticeTimer_.start(kNoticeMs);
}

// ---- keys -----------------------------------------------------------------------------------

bool GraphView::deletesEdges(const QKeyEvent* e) const {
  const bool del = e->matches(QKeySequence::Delete) || e->key() == Qt::Key_Delete || e->key() == Qt::Key_Backspace;
  return del && !scene_->selectedEdges().isEmpty();
}

bool GraphView::event(QEvent* e) {
  // The window's Delete action removes selected nodes only; with an edge selected the key is ours,
  // so it reaches keyPressEvent instead of the action.
  if (e->type() == QEvent::ShortcutOverride && deletesEdges(static_cast<QKeyEvent*>(e))) {
    e->accept();
    return true;
  }
  return QGraphicsView::event(e);
}

void GraphView::keyPressEvent(QKeyEvent* e) {
  if (deletesEdges(e)) {
    deleteSelection();
    e->accept();
    return;
  }
  if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    spaceHeld_ = true;
    viewport()->setCursor(Qt::OpenHandCursor);
    e->accept();
    return;
  }
  if (e->key() == Qt::Key_Escape) {
    scene_->clearSelection();
    e->accept();
    return;
  }
  QGraphicsView::keyPressEvent(e);
}

void GraphView::keyReleaseEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Space && !e->isAutoRepeat()) {
    spaceHeld_ = false;
    if (!panning_) viewport()->unsetCursor();
    e->accept();
    return;
  }
  QGraphicsView::keyReleaseEvent(e);
}

// ---- pan ------------------------------------------------------------------------------------

void GraphView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::MiddleButton || (e->button() == Qt::LeftButton && spaceHeld_)) {
    panning_ = true;
    fitted_ = false;
    panLast_ = e->position().toPoint();
    viewport()->setCursor(Qt::ClosedHandCursor);
    e->accept();
    return;
  }
  QGraphicsView::mousePressEvent(e);
}

void GraphView::mouseMoveEvent(QMouseEvent* e) {
  if (panning_) {
    const QPoint delta = e->position().toPoint() - panLast_;
    panLast_ = e->position().toPoint();
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    e->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(e);
}

void GraphView::mouseReleaseEvent(QMouseEvent* e) {
  if (panning_ && (e->button() == Qt::MiddleButton || e->button() == Qt::LeftButton)) {
    panning_ = false;
    if (spaceHeld_) viewport()->setCursor(Qt::OpenHandCursor);
    else viewport()->unsetCursor();
    e->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(e);
}

// ---- drops from the palette -----------------------------------------------------------------

void GraphView::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasFormat(kLayerMimeType)) {
    e->setDropAction(Qt::CopyAction);
    e->accept();
    return;
  }
  QGraphicsView::dragEnterEvent(e);
}

void GraphView::dragMoveEvent(QDragMoveEvent* e) {
  if (e->mimeData()->hasFormat(kLayerMimeType)) {
    e->setDropAction(Qt::CopyAction);
    e->accept();
    return;
  }
  QGraphicsView::dragMoveEvent(e);
}

void GraphView::dropEvent(QDropEvent* e) {
  if (!e->mimeData()->hasFormat(kLayerMimeType)) {
    QGraphicsView::dropEvent(e);
    return;
  }
  const QString type = QString::fromUtf8(e->mimeData()->data(kLayerMimeType)).trimmed();
  scene_->addNode(type, mapToScene(e->position().toPoint()));
  e->setDropAction(Qt::CopyAction);
  e->accept();
  setFocus();
}

void GraphView::contextMenuEvent(QContextMenuEvent* e) {
  NodeItem* node = nullptr;
  EdgeItem* edge = nullptr;
  for (QGraphicsItem* item : items(e->pos())) {
    if (auto* n = qgraphicsitem_cast<NodeItem*>(item)) node = n;
    else if (auto* p = qgraphicsitem_cast<PortItem*>(item)) node = p->node();
    else if (auto* g = qgraphicsitem_cast<EdgeItem*>(item)) edge = g;
    if (node || edge) break;
  }
  // The window's clipboard and delete commands, where it gave the canvas its actions.
  const QList<QAction*> shared = actions();
  auto sharedAction = [&](QKeySequence::StandardKey key) -> QAction* {
    for (QAction* a : shared)
      if (a->shortcut() == QKeySequence(key)) return a;
    return nullptr;
  };
  QMenu menu(this);
  menu.setObjectName("canvasMenu");
  const QPointF at = mapToScene(e->pos());
  if (node) {
    // What is right-clicked is what the commands act on, as in a file manager.
    const QString path = node->path();
    if (!doc_->selection().contains(path)) doc_->setSelection({path});
    menu.addAction(tr("Show Output in Sharding"), this, [this, path] { doc_->requestArray(path); });
    if (node->spec().repeat) {
      const bool open = edits::expanded(doc_->project(), path.toStdString());
      menu.addAction(open ? tr("Collapse Block") : tr("Expand Block"), this, [this, path] { scene_->toggleExpanded(path); });
    }
    menu.addSeparator();
    for (QKeySequence::StandardKey key : {QKeySequence::Cut, QKeySequence::Copy})
      if (QAction* a = sharedAction(key)) menu.addAction(a);
    for (QAction* a : shared)
      if (a->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_D)) menu.addAction(a);
    menu.addAction(tr("Delete"), this, &GraphView::deleteSelection);
  } else if (edge) {
    const QString array = edge->array();
    scene_->clearSelection();
    edge->setSelected(true);
    menu.addAction(tr("Show Array in Sharding"), this, [this, array] { doc_->requestArray(array); });
    menu.addSeparator();
    menu.addAction(tr("Disconnect"), this, &GraphView::deleteSelection);
  } else {
    QMenu* add = menu.addMenu(tr("Add Layer"));
    add->setObjectName("addLayerMenu");
    QMap<QString, QMenu*> groups;
    for (const graph::LayerInfo& info : graph::layer_catalog()) {
      const QString group = QString::fromStdString(info.category);
      if (!groups.contains(group)) groups[group] = add->addMenu(group);
      const QString type = QString::fromStdString(info.type);
      groups[group]->addAction(type, this, [this, type, at] { scene_->addNode(type, at); });
    }
    if (QAction* a = sharedAction(QKeySequence::Paste)) menu.addAction(a);
    menu.addSeparator();
    menu.addAction(tr("Select All"), this, &GraphView::selectAll);
    menu.addAction(tr("Zoom to Fit"), this, &GraphView::zoomToFit);
    menu.addAction(tr("Arrange Graph"), this, &GraphView::autoLayout);
  }
  menu.exec(e->globalPos());
  e->accept();
}

// ---- look -----------------------------------------------------------------------------------

void GraphView::changeEvent(QEvent* e) {
  if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange) {
    scene_->setPalette(palette());
    scene_->update();
    if (e->type() == QEvent::FontChange) {
      scene_->setFont(font());
      scene_->rebuild();  // node sizes follow the font
    }
  }
  QGraphicsView::changeEvent(e);
}

void GraphView::drawBackground(QPainter* painter, const QRectF& rect) {
  const QPalette pal = palette();
  painter->fillRect(rect, pal.color(QPalette::Window));
  if (zoom() < 0.4) return;  // dots closer than ~10 px are noise
  constexpr double kGrid = 24;
  QColor dot = style::border(pal);
  dot.setAlphaF(0.5f);
  painter->setPen(QPen(dot, 1.5 / zoom()));
  const double left = std::floor(rect.left() / kGrid) * kGrid, top = std::floor(rect.top() / kGrid) * kGrid;
  QVector<QPointF> dots;
  for (double x = left; x < rect.right(); x += kGrid)
    for (double y = top; y < rect.bottom(); y += kGrid) dots << QPointF(x, y);
  painter->drawPoints(dots.data(), int(dots.size()));
}

}  // namespace shardlab::ui
