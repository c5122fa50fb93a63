// A layer node on the canvas: a title (name and type), input ports on the left and "out" on the
// right, notes, the parameter lines (each one a link to its array in the sharding view) and, when
// the design finds a problem, a red border with the error under the ports. A Repeat can be expanded:
// it then becomes a frame holding its block's nodes (children of this item, so they move with it)
// and grows to fit them.
#pragma once

#include <QFont>
#include <QGraphicsItem>
#include <QVector>

#include "ui/canvas/node_spec.h"

namespace shardlab::ui {

class PortItem;
class EdgeItem;

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };

  // A body node gets its Repeat's item as `frame`.
  NodeItem(NodeSpec spec, const QFont& font, NodeItem* frame = nullptr);

  int type() const override { return Type; }
  const NodeSpec& spec() const { return spec_; }
  QString path() const { return spec_.path; }
  QSizeF size() const { return {geo_.width, geo_.height}; }
  // The Repeat frame this node sits in, or null at the top level.
  NodeItem* frame() const;

  PortItem* inputPort(const QString& name) const;
  PortItem* outputPort() const { return output_; }
  QVector<PortItem*> ports() const;
  void addEdge(EdgeItem* e) { edges_.push_back(e); }
  const QVector<EdgeItem*>& edges() const { return edges_; }

  // Hit zones, in item coordinates.
  QRectF toggleRect() const;  // a Repeat's expand/collapse button; empty otherwise
  QRectF headerRect() const;
  int paramAt(const QPointF& local) const;  // index into spec().params, or -1
  QRectF paramRect(int i) const;
  // An expanded Repeat: where its block's coordinates start, and whether a point is in the block.
  QPointF contentOrigin() const;
  bool contentContains(const QPointF& local) const;

  // The position the project stores: scene position at the top, offset from the frame's content
  // origin inside a block.
  QPointF storedPos() const;
  void setStoredPos(const QPointF& p);

  // An expanded Repeat refits itself around its block after a body node moved.
  void updateFrame();

  // Zoomed out so far that the node's title would be under kLegiblePixels tall on screen (`lod`:
  // screen pixels per scene unit), a node draws only its name and type, in farFont: kFarPixels tall
  // on screen where the node has room.
  static constexpr double kLegiblePixels = 10, kFarPixels = 12;
  static bool isFar(double lod, const QFont& base);
  static QFont farFont(const QFont& base, double lod, const QSizeF& box, const QString& name);

  // Size of a node showing `spec`, without making one; `content` is an expanded Repeat's block extent.
  static QSizeF measure(const NodeSpec& spec, const QFont& font, QSizeF content = {});

  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverMoveEvent(QGraphicsSceneHoverEvent* e) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* e) override;

 private:
  struct Geometry {
    double width = 0, height = 0;
    double header = 0, row = 0, portsTop = 0;
    int rows = 0;
    double notesTop = 0, line = 0, paramsTop = 0;
    QRectF error;
    double contentTop = 0;
  };
  static Geometry layout(const NodeSpec& spec, const QFont& font, QSizeF content);
  QSizeF contentExtent() const;
  void placePorts();
  void updateEdges();

  NodeSpec spec_;
  QFont font_;
  Geometry geo_;
  QVector<PortItem*> inputs_;
  PortItem* output_ = nullptr;
  QVector<EdgeItem*> edges_;
  int hoveredParam_ = -1;
};

}  // namespace shardlab::ui
