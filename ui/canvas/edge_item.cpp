#include "ui/canvas/edge_item.h"

#include <QApplication>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <cmath>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/graph_layout.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/port_item.h"

namespace shardlab::ui {

EdgeItem::EdgeItem(PortItem* from, PortItem* to, const QString& label, const QString& array, QGraphicsItem* parent)
    : QGraphicsItem(parent), from_(from), to_(to), label_(label), array_(array) {
  setFlag(ItemIsSelectable);
  setZValue(-1);  // under the nodes it joins
  setCursor(Qt::PointingHandCursor);
  setToolTip(label.isEmpty() ? QObject::tr("%1 → %2.%3 (shape unknown: see the node's error)")
                                   .arg(from->nodeName(), to->nodeName(), to->name())
                             : QObject::tr("%1 → %2.%3 %4").arg(from->nodeName(), to->nodeName(), to->name(), label));
  from->setConnected(true);
  to->setConnected(true);
  from->node()->addEdge(this);
  to->node()->addEdge(this);
  updatePath();
}

QString EdgeItem::key() const { return to_->graphParent() + "|" + to_->nodeName() + "|" + to_->name(); }

QPainterPath EdgeItem::curve(const QPointF& a, const QPointF& b) {
  // Horizontal tangents at both ends; a backwards edge bends out further so it stays readable.
  const double reach = std::max(50.0, std::abs(b.x() - a.x()) / 2);
  QPainterPath p(a);
  p.cubicTo(a + QPointF(reach, 0), b - QPointF(reach, 0), b);
  return p;
}

QPainterPath EdgeItem::folded(const QPointF& a, const QPointF& b, double runY) {
  constexpr double stub = 24, r = 14;
  const double right = a.x() + stub, left = b.x() - stub;
  QPainterPath p(a);
  p.lineTo(right, a.y());
  p.quadTo(right + r, a.y(), right + r, a.y() + r);
  p.lineTo(right + r, runY - r);
  p.quadTo(right + r, runY, right, runY);
  p.lineTo(left, runY);
  p.quadTo(left - r, runY, left - r, runY + r);
  p.lineTo(left - r, b.y() - r);
  p.quadTo(left - r, b.y(), left, b.y());
  p.lineTo(b);
  return p;
}

void EdgeItem::updatePath() {
  prepareGeometryChange();
  const QPointF a = mapFromScene(from_->scenePos()), b = mapFromScene(to_->scenePos());
  // An edge into a node wholly below its source's node, going back left, is a folded chain's turn
  // to the next row: it runs through the middle of the room above the target's row, where the
  // layout leaves nothing, instead of cutting across both rows.
  // The room is above the target's row, not above the target: a target lower in its column (the
  // second branch of a fork) is reached over the row's top, clear of the nodes beside it.
  const NodeItem* source = from_->node();
  const double sourceBottomScene = source->mapToScene(QPointF(0, source->size().height())).y();
  const double sourceBottom = mapFromScene(QPointF(0, sourceBottomScene)).y();
  double rowTop = to_->node()->scenePos().y();
  const QGraphicsItem* graph = to_->node()->parentItem();
  const QList<QGraphicsItem*> siblings = graph ? graph->childItems() : (scene() ? scene()->items() : QList<QGraphicsItem*>{});
  for (const QGraphicsItem* item : siblings)
    if (const auto* n = dynamic_cast<const NodeItem*>(item); n && n->parentItem() == graph) {
      const double y = n->scenePos().y();
      if (y > sourceBottomScene && y < rowTop) rowTop = y;
    }
  const double runY = mapFromScene(QPointF(0, rowTop)).y() - layout::kRowGap / 2;
  const bool turn = b.x() < a.x() && runY > std::max(a.y() + 30, sourceBottom + 10) && b.y() > runY + 30;
  path_ = turn ? folded(a, b, runY) : curve(a, b);
  labelRect_ = QRectF();
  shown_ = label_;
  if (!label_.isEmpty()) {
    const QFontMetricsF fm(style::smallFont(scene() ? scene()->font() : QApplication::font()));
    // Between two close nodes the label gets the gap, shortened in the middle, rather than being
    // drawn under the nodes; the whole shape is in the tooltip and the Sharding tab.
    const double gap = b.x() - a.x() - 12;
    const double room = !turn && gap > 0 ? std::max(48.0, gap - 10) : 1e9;
    if (fm.horizontalAdvance(label_) > room) shown_ = fm.elidedText(label_, Qt::ElideMiddle, room);
    const QSizeF size(fm.horizontalAdvance(shown_) + 10, fm.height() + 4);
    labelRect_ = QRectF(path_.pointAtPercent(0.5) - QPointF(size.width() / 2, size.height() / 2), size);
  }
}

QRectF EdgeItem::boundingRect() const { return path_.boundingRect().adjusted(-6, -6, 6, 6).united(labelRect_.adjusted(-2, -2, 2, 2)); }

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);  // easy to click without being pixel-exact
  QPainterPath s = stroker.createStroke(path_);
  if (!labelRect_.isEmpty()) s.addRect(labelRect_);
  return s;
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QPalette pal = scene() ? scene()->palette() : QApplication::palette();
  const QColor color = isSelected() ? style::selection(pal) : style::edge(pal);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(color, isSelected() ? 3 : 1.8));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path_);
  // Far out, the shapes are unreadable: the nodes' names get the room (see NodeItem::isFar).
  const double lod = QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform());
  if (labelRect_.isEmpty() || NodeItem::isFar(lod, scene() ? scene()->font() : QApplication::font())) return;
  painter->setPen(QPen(color, 1));
  painter->setBrush(style::nodeFill(pal));
  painter->drawRoundedRect(labelRect_, 4, 4);
  painter->setFont(style::smallFont(scene() ? scene()->font() : QApplication::font()));
  painter->setPen(style::text(pal));
  painter->drawText(labelRect_, Qt::AlignCenter, shown_);
}

}  // namespace shardlab::ui
