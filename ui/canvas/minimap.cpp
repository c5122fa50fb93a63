#include "ui/canvas/minimap.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"

namespace shardlab::ui {

namespace {

constexpr int kLongSide = 220;  // pixels, the minimap's longer side
constexpr int kShortMin = 60;
constexpr int kMargin = 10;     // from the view's corner
constexpr double kInset = 6;    // between the frame and the graph drawn in it

}  // namespace

Minimap::Minimap(GraphView* view) : QWidget(view->viewport()), view_(view) {
  setObjectName("canvasMinimap");
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("The whole graph: click or drag to move the view"));
  hide();
}

QRectF Minimap::shownArea() const { return view_->graphScene()->graphRect().adjusted(-30, -30, 30, 30); }

double Minimap::scale() const {
  const QRectF area = shownArea();
  if (area.isEmpty()) return 1;
  return std::min((width() - 2 * kInset) / area.width(), (height() - 2 * kInset) / area.height());
}

QPointF Minimap::offset() const {
  // Centred in the widget.
  const QRectF area = shownArea();
  const double s = scale();
  return QPointF((width() - area.width() * s) / 2, (height() - area.height() * s) / 2) - area.topLeft() * s;
}

QPointF Minimap::toMap(const QPointF& scenePos) const { return scenePos * scale() + offset(); }

QPointF Minimap::toScene(const QPointF& mapPos) const { return (mapPos - offset()) / scale(); }

void Minimap::sync() {
  const QRectF area = shownArea();
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  // An empty graph has a null rect, which no view "contains": nothing to show, not an empty frame.
  const QRectF graph = view_->graphScene()->graphRect();
  const bool needed = !graph.isNull() && !area.isEmpty() && !visible.contains(graph);
  if (!needed) {
    hide();
    return;
  }
  // The graph's shape, the longer side kLongSide, neither side more than a third of the view.
  const QSize room = view_->viewport()->size() / 3;
  double w = kLongSide, h = kLongSide;
  if (area.width() >= area.height()) h = std::max<double>(kShortMin, w * area.height() / area.width());
  else w = std::max<double>(kShortMin, h * area.width() / area.height());
  const double fit = std::min({1.0, room.width() / w, room.height() / h});
  resize(std::max(40, int(w * fit)), std::max(30, int(h * fit)));
  // A corner of the view: the bottom-right one unless it hides more nodes than another does (the
  // last node of a graph the view cannot fit lands there), and the one it is in while no other
  // hides fewer, so it does not hop as the view scrolls.
  const QSize port = view_->viewport()->size();
  const QPoint corners[] = {{port.width() - width() - kMargin, port.height() - height() - kMargin},
                            {kMargin, port.height() - height() - kMargin},
                            {kMargin, kMargin},
                            {port.width() - width() - kMargin, kMargin}};
  auto hidden = [&](QPoint at) {
    const QRect r(at, size());
    int n = 0;
    for (NodeItem* node : view_->graphScene()->nodes())
      if (node->isVisible() && !node->spec().expanded && view_->mapFromScene(node->sceneBoundingRect()).boundingRect().intersects(r)) ++n;
    return n;
  };
  QPoint best = corners[0];
  int fewest = hidden(best);
  for (const QPoint& c : corners) {
    const int n = hidden(c);
    if (n < fewest || (n == fewest && isVisible() && c == pos())) best = c, fewest = n;
  }
  move(best);
  show();
  raise();
  update();
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette pal = view_->palette();
  QColor back = pal.color(QPalette::Base);
  back.setAlphaF(0.92f);
  p.setPen(QPen(style::border(pal), 1));
  p.setBrush(back);
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);

  // Nodes as small boxes, the top-level ones first so a block's nodes draw over their frame.
  const double s = scale();
  QList<NodeItem*> nodes = view_->graphScene()->nodes();
  std::stable_sort(nodes.begin(), nodes.end(), [](NodeItem* a, NodeItem* b) { return !a->frame() && b->frame(); });
  for (NodeItem* n : nodes) {
    if (!n->isVisible()) continue;
    const QRectF r(toMap(n->sceneBoundingRect().topLeft()), n->sceneBoundingRect().size() * s);
    p.setPen(Qt::NoPen);
    p.setBrush(n->isSelected() ? style::selection(pal) : n->spec().expanded ? style::frameFill(pal) : style::headerFill(pal, n->spec().category));
    p.drawRect(r.adjusted(0, 0, std::max(0.0, 2 - r.width()), std::max(0.0, 2 - r.height())));
  }

  // What the view shows.
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  const QRectF r(toMap(visible.topLeft()), visible.size() * s);
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(style::selection(pal), 1.5));
  p.setClipRect(rect().adjusted(1, 1, -1, -1));
  p.drawRect(r);
}

void Minimap::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  view_->panTo(toScene(e->position()));
  e->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton)) return QWidget::mouseMoveEvent(e);
  view_->panTo(toScene(e->position()));
  e->accept();
}

}  // namespace shardlab::ui
