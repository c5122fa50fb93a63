// A node's port on the canvas: an input on the node's left edge (named as the layer's input port)
// or its one output "out" on the right. Dragging from a port starts a connection; the scene does
// that, the port only draws itself, says where it is, and lights up as a drop target.
#pragma once

#include <QGraphicsItem>
#include <QString>

namespace shardlab::ui {

class NodeItem;

class PortItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  enum class Mark { None, Target, Refused };

  PortItem(NodeItem* node, const QString& name, bool output, const QString& shape);

  int type() const override { return Type; }
  NodeItem* node() const { return node_; }
  QString name() const { return name_; }
  bool isOutput() const { return output_; }
  // Path of the node in the graph's own terms: "W1", "@in".
  QString nodeName() const;
  // The graph the port's node lives in: "" or the Repeat's path.
  QString graphParent() const;
  void setMark(Mark m);
  void setConnected(bool on);

  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent* e) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* e) override;

 private:
  NodeItem* node_;
  QString name_;
  bool output_;
  bool connected_ = false;
  bool hovered_ = false;
  Mark mark_ = Mark::None;
};

}  // namespace shardlab::ui
