#include "ui/canvas/port_item.h"

#include <QApplication>
#include <QCursor>
#include <QGraphicsScene>
#include <QPainter>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/node_item.h"

namespace shardlab::ui {

PortItem::PortItem(NodeItem* node, const QString& name, bool output, const QString& shape)
    : QGraphicsItem(node), node_(node), name_(name), output_(output) {
  setAcceptHoverEvents(true);
  setCursor(Qt::CrossCursor);
  setToolTip(shape.isEmpty() ? name : name + " " + shape);
  // Ports sit above the node body they overlap, so a press on one starts a connection, not a move.
  setZValue(1);
}

QString PortItem::nodeName() const { return node_->spec().name; }
QString PortItem::graphParent() const { return node_->spec().parent; }

void PortItem::setMark(Mark m) {
  if (m == mark_) return;
  mark_ = m;
  update();
}

void PortItem::setConnected(bool on) {
  connected_ = on;
  update();
}

QRectF PortItem::boundingRect() const {
  const double r = style::kPortHitRadius + 1;
  return QRectF(-r, -r, 2 * r, 2 * r);
}

QPainterPath PortItem::shape() const {
  QPainterPath p;
  p.addEllipse(QPointF(0, 0), style::kPortHitRadius, style::kPortHitRadius);
  return p;
}

void PortItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QPalette pal = scene() ? scene()->palette() : QApplication::palette();
  QColor ring = style::border(pal), fill = style::nodeFill(pal);
  if (connected_ || output_) fill = style::edge(pal);
  if (hovered_ || mark_ == Mark::Target) ring = fill = style::selection(pal);
  if (mark_ == Mark::Refused) ring = fill = style::error();
  const double r = style::kPortRadius + (hovered_ || mark_ != Mark::None ? 2 : 0);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(ring, 1.5));
  painter->setBrush(fill);
  painter->drawEllipse(QPointF(0, 0), r, r);
}

void PortItem::hoverEnterEvent(QGraphicsSceneHoverEvent*) {
  hovered_ = true;
  update();
}

void PortItem::hoverLeaveEvent(QGraphicsSceneHoverEvent*) {
  hovered_ = false;
  update();
}

}  // namespace shardlab::ui
