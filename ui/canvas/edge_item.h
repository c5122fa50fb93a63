// An edge on the canvas: a curve from an output port to an input port, labelled with the shape of
// the activation it carries, in logical axis names ("(batch 128, embed 784)"). Selecting it and
// pressing Delete disconnects it; clicking it shows its activation in the sharding view.
#pragma once

#include <QGraphicsItem>
#include <QPainterPath>
#include <QString>

namespace shardlab::ui {

class PortItem;

class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };

  // `parent` is the Repeat item for an edge inside a block, so the edge moves with its frame.
  EdgeItem(PortItem* from, PortItem* to, const QString& label, const QString& array, QGraphicsItem* parent = nullptr);

  int type() const override { return Type; }
  PortItem* from() const { return from_; }
  PortItem* to() const { return to_; }
  QString label() const { return label_; }
  // What is drawn: the label, or between close nodes the label shortened in the middle to fit.
  QString shownLabel() const { return shown_; }
  QString array() const { return array_; }  // the activation's name: the source node's path
  // "blocks|W2|in": which graph and input this edge feeds, stable across rebuilds.
  QString key() const;

  // Follows the ports after a node moved.
  void updatePath();
  QPainterPath path() const { return path_; }
  QRectF labelRect() const { return labelRect_; }

  // The curve an edge (or a connection being dragged) takes between two points in one coordinate
  // system: leaving `a` to the right and entering `b` from the left.
  static QPainterPath curve(const QPointF& a, const QPointF& b);
  // The way from `a` back left to `b` on a lower row (a chain the layout folded): out to the
  // right, down to `runY`, left along it, down and into `b` from the left, with rounded corners.
  static QPainterPath folded(const QPointF& a, const QPointF& b, double runY);

  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  PortItem* from_;
  PortItem* to_;
  QString label_, array_, shown_;
  QPainterPath path_;
  QRectF labelRect_;
};

}  // namespace shardlab::ui
