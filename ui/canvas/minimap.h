// The canvas's minimap: the whole graph in small in a corner of the view, with the part the view
// shows outlined. Clicking or dragging in it moves the view there. It shows only while part of the
// graph is out of view (when everything fits there is nothing to navigate to), in the corner of
// the view where it hides the fewest nodes.
#pragma once

#include <QRectF>
#include <QWidget>

namespace shardlab::ui {

class GraphView;

class Minimap : public QWidget {
  Q_OBJECT

 public:
  explicit Minimap(GraphView* view);

  // The scene area drawn, and where a scene point lands on the minimap and back.
  QRectF shownArea() const;
  QPointF toMap(const QPointF& scenePos) const;
  QPointF toScene(const QPointF& mapPos) const;

  // Follows the view after a scroll, zoom, resize or edit: size, corner, visibility, drawing.
  void sync();

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;

 private:
  // The scale and offset taking shownArea() into the widget, keeping its shape.
  double scale() const;
  QPointF offset() const;

  GraphView* view_;
};

}  // namespace shardlab::ui
