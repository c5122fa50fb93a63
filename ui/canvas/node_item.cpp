#include "ui/canvas/node_item.h"

#include <QApplication>
#include <QCursor>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QGraphicsSceneHoverEvent>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/port_item.h"

namespace shardlab::ui {

using namespace style;

namespace {

constexpr double kToggle = 14;
constexpr double kCarryWidth = 120;
// Free room under an expanded block's nodes, so there is somewhere to drop a new layer into it.
constexpr double kDropRoom = 56;

}  // namespace

NodeItem::Geometry NodeItem::layout(const NodeSpec& spec, const QFont& font, QSizeF content) {
  const QFontMetricsF title(titleFont(font)), small(smallFont(font));
  Geometry g;
  g.header = title.height() + 10;
  g.row = small.height() + 6;
  g.line = small.height() + 4;
  g.rows = std::max<int>(int(spec.inputs.size()), spec.hasOutput ? 1 : 0);
  g.portsTop = g.header + 2;
  g.notesTop = g.portsTop + g.rows * g.row;
  g.paramsTop = g.notesTop + spec.notes.size() * g.line;
  const int paramLines = spec.expanded ? 0 : int(spec.params.size());

  double w = (spec.repeat ? kToggle + 6 : 0) + title.horizontalAdvance(spec.name) + 18 + small.horizontalAdvance(spec.type);
  double portWidth = small.horizontalAdvance(QStringLiteral("out")) + 40;
  for (const QString& in : spec.inputs) portWidth = std::max(portWidth, small.horizontalAdvance(in) + small.horizontalAdvance("out") + 40);
  w = std::max(w, portWidth);
  for (const QString& n : spec.notes) w = std::max(w, small.horizontalAdvance(n));
  for (int i = 0; i < paramLines; ++i) w = std::max(w, small.horizontalAdvance(spec.params[i].text));
  g.width = std::clamp(w + 2 * kPad, spec.carry ? kCarryWidth : kMinNodeWidth, kMaxNodeWidth);
  // Room right of the block's nodes for the line from its output node to this node's "out".
  if (spec.expanded) g.width = std::max(g.width, content.width() + 2 * kPad + 24);

  double y = g.paramsTop + paramLines * g.line;
  if (!spec.error.isEmpty()) {
    const QRectF r = small.boundingRect(QRectF(0, 0, g.width - 2 * kPad, 1e6), Qt::TextWordWrap, spec.error);
    g.error = QRectF(kPad, y + 2, g.width - 2 * kPad, r.height());
    y = g.error.bottom() + 2;
  }
  if (spec.expanded) {
    g.contentTop = y + kPad;
    y = g.contentTop + content.height() + kDropRoom;
  }
  g.height = y + kPad;
  return g;
}

QSizeF NodeItem::measure(const NodeSpec& spec, const QFont& font, QSizeF content) {
  const Geometry g = layout(spec, font, content);
  return {g.width, g.height};
}

NodeItem::NodeItem(NodeSpec spec, const QFont& font, NodeItem* frame) : QGraphicsItem(frame), spec_(std::move(spec)), font_(font) {
  setFlags(ItemIsSelectable | ItemIsMovable | ItemSendsGeometryChanges);
  setAcceptHoverEvents(true);
  geo_ = layout(spec_, font_, {});
  for (int i = 0; i < spec_.inputs.size(); ++i)
    inputs_.push_back(new PortItem(this, spec_.inputs[i], false, spec_.inputShapes.value(i)));
  if (spec_.hasOutput) output_ = new PortItem(this, QStringLiteral("out"), true, spec_.outputShape);
  placePorts();
  setToolTip(spec_.error.isEmpty() ? QStringLiteral("%1 (%2)").arg(spec_.name, spec_.type)
                                   : QStringLiteral("%1: %2").arg(spec_.name, spec_.error));
}

NodeItem* NodeItem::frame() const { return parentItem() ? qgraphicsitem_cast<NodeItem*>(parentItem()) : nullptr; }

PortItem* NodeItem::inputPort(const QString& name) const {
  for (PortItem* p : inputs_)
    if (p->name() == name) return p;
  return nullptr;
}

QVector<PortItem*> NodeItem::ports() const {
  QVector<PortItem*> all = inputs_;
  if (output_) all.push_back(output_);
  return all;
}

void NodeItem::placePorts() {
  for (int i = 0; i < inputs_.size(); ++i) inputs_[i]->setPos(0, geo_.portsTop + (i + 0.5) * geo_.row);
  if (output_) output_->setPos(geo_.width, geo_.portsTop + 0.5 * geo_.row);
}

QRectF NodeItem::toggleRect() const {
  return spec_.repeat ? QRectF(kPad, (geo_.header - kToggle) / 2, kToggle, kToggle) : QRectF();
}

QRectF NodeItem::headerRect() const { return QRectF(0, 0, geo_.width, geo_.header); }

int NodeItem::paramAt(const QPointF& local) const {
  if (spec_.expanded) return -1;
  for (int i = 0; i < spec_.params.size(); ++i)
    if (paramRect(i).contains(local)) return i;
  return -1;
}

QRectF NodeItem::paramRect(int i) const {
  return QRectF(kPad, geo_.paramsTop + i * geo_.line, geo_.width - 2 * kPad, geo_.line);
}

QPointF NodeItem::contentOrigin() const { return QPointF(kPad, geo_.contentTop); }

bool NodeItem::contentContains(const QPointF& local) const {
  return spec_.expanded && QRectF(0, geo_.contentTop, geo_.width, geo_.height - geo_.contentTop).contains(local);
}

QPointF NodeItem::storedPos() const {
  NodeItem* f = frame();
  return f ? pos() - f->contentOrigin() : pos();
}

void NodeItem::setStoredPos(const QPointF& p) {
  NodeItem* f = frame();
  setPos(f ? p + f->contentOrigin() : p);
}

QSizeF NodeItem::contentExtent() const {
  QSizeF extent(0, 0);
  for (QGraphicsItem* child : childItems())
    if (auto* n = qgraphicsitem_cast<NodeItem*>(child)) {
      const QPointF at = n->storedPos();
      extent = extent.expandedTo(QSizeF(at.x() + n->size().width(), at.y() + n->size().height()));
    }
  return extent;
}

void NodeItem::updateFrame() {
  if (!spec_.expanded) return;
  const Geometry g = layout(spec_, font_, contentExtent());
  update();  // the line from the block's output node follows it
  if (g.width == geo_.width && g.height == geo_.height) return;
  prepareGeometryChange();
  geo_ = g;
  placePorts();
  updateEdges();
}

void NodeItem::updateEdges() {
  for (EdgeItem* e : edges_) e->updatePath();
}

QRectF NodeItem::boundingRect() const { return QRectF(-1, -1, geo_.width + 2, geo_.height + 2); }

QPainterPath NodeItem::shape() const {
  QPainterPath p;
  p.addRoundedRect(QRectF(0, 0, geo_.width, geo_.height), kCorner, kCorner);
  return p;
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionChange) {
    // A block's nodes stay inside its frame: the frame grows right and down, never up or left.
    if (NodeItem* f = frame()) {
      const QPointF o = f->contentOrigin();
      const QPointF p = value.toPointF();
      return QPointF(std::max(p.x(), o.x()), std::max(p.y(), o.y()));
    }
  } else if (change == ItemPositionHasChanged) {
    updateEdges();
    if (NodeItem* f = frame()) f->updateFrame();
  }
  return QGraphicsItem::itemChange(change, value);
}

void NodeItem::hoverMoveEvent(QGraphicsSceneHoverEvent* e) {
  const int i = paramAt(e->pos());
  if (i == hoveredParam_) return;
  hoveredParam_ = i;
  if (i >= 0) {
    setCursor(Qt::PointingHandCursor);
    setToolTip(QObject::tr("%1: show in the Sharding view").arg(spec_.params[i].array));
  } else {
    unsetCursor();
    setToolTip(spec_.error.isEmpty() ? QStringLiteral("%1 (%2)").arg(spec_.name, spec_.type)
                                     : QStringLiteral("%1: %2").arg(spec_.name, spec_.error));
  }
  update();
}

void NodeItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* e) {
  hoveredParam_ = -1;
  unsetCursor();
  QGraphicsItem::hoverLeaveEvent(e);
  update();
}

bool NodeItem::isFar(double lod, const QFont& base) { return QFontMetricsF(titleFont(base)).height() * lod < kLegiblePixels; }

QFont NodeItem::farFont(const QFont& base, double lod, const QSizeF& box, const QString& name) {
  // kFarPixels on screen, no taller than the node allows; a long name shrinks to fit its width,
  // down to 60% (then it is elided).
  const double want = kFarPixels / std::max(lod, 1e-3);
  QFont f = titleFont(base);
  f.setPixelSize(std::max(1, int(std::min(want, box.height() * 0.5))));
  const double width = QFontMetricsF(f).horizontalAdvance(name), room = box.width() * 0.92;
  if (width > room) f.setPixelSize(std::max(1, int(std::max(f.pixelSize() * room / width, std::min(want * 0.6, f.pixelSize() * 1.0)))));
  return f;
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QPalette pal = scene() ? scene()->palette() : QApplication::palette();
  const double lod = QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform());
  const QFont small = smallFont(font_), title = titleFont(font_);
  const QFontMetricsF fm(small);
  const QRectF body(0, 0, geo_.width, geo_.height);
  const bool hasError = !spec_.error.isEmpty();
  painter->setRenderHint(QPainter::Antialiasing);

  // Body, then the header band clipped to the rounded outline.
  painter->setPen(Qt::NoPen);
  painter->setBrush(nodeFill(pal));
  painter->drawRoundedRect(body, kCorner, kCorner);
  {
    QPainterPath outline;
    outline.addRoundedRect(body, kCorner, kCorner);
    painter->save();
    painter->setClipPath(outline);
    painter->fillRect(headerRect(), headerFill(pal, spec_.category));
    painter->restore();
  }
  if (spec_.expanded) {
    const QRectF block(kPad / 2, geo_.contentTop - kPad / 2, geo_.width - kPad, geo_.height - geo_.contentTop);
    painter->setBrush(frameFill(pal));
    painter->setPen(QPen(border(pal), 1, Qt::DashLine));
    painter->drawRoundedRect(block, kCorner, kCorner);
    painter->setFont(smallFont(font_));
    painter->setPen(dimText(pal));
    painter->drawText(QRectF(kPad, geo_.height - kPad - kDropRoom, geo_.width - 2 * kPad, kDropRoom), Qt::AlignCenter,
                      QObject::tr("drop layers here to add them to the block"));
    // What leaves the block: a dashed line from its output node to this node's own "out".
    for (QGraphicsItem* child : childItems())
      if (auto* n = qgraphicsitem_cast<NodeItem*>(child); n && n->spec().blockOutput && n->outputPort() && output_) {
        painter->setPen(QPen(edge(pal), 1.5, Qt::DashLine));
        painter->setBrush(Qt::NoBrush);
        painter->drawPath(EdgeItem::curve(mapFromItem(n, n->outputPort()->pos()), output_->pos()));
      }
  }
  QPen outlinePen(border(pal), 1);
  if (hasError) outlinePen = QPen(error(), 2.5);
  if (isSelected()) outlinePen = QPen(selection(pal), hasError ? 3 : 2.5);
  if (spec_.carry) outlinePen.setStyle(Qt::DashLine);
  painter->setPen(outlinePen);
  painter->setBrush(Qt::NoBrush);
  painter->drawRoundedRect(body, kCorner, kCorner);
  if (hasError && isSelected()) {
    // Keep the error visible on a selected node: a red inner ring inside the selection ring.
    painter->setPen(QPen(error(), 1.5));
    painter->drawRoundedRect(body.adjusted(3, 3, -3, -3), kCorner - 2, kCorner - 2);
  }

  // Zoomed out past reading the small print: only the name, as large as the node allows, and the
  // type under it where there is room (a fitted view of a long model stays legible).
  if (isFar(lod, font_) && !spec_.expanded) {
    const QFont big = farFont(font_, lod, body.size(), spec_.name);
    const QFontMetricsF bm(big);
    painter->setFont(big);
    painter->setPen(text(pal));
    const QRectF inner = body.adjusted(kPad / 2, 2, -kPad / 2, -2);
    const bool typeFits = bm.height() * 2.1 < inner.height();
    painter->drawText(typeFits ? QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2) : inner,
                      Qt::AlignCenter | (typeFits ? Qt::AlignBottom : Qt::AlignVCenter),
                      bm.elidedText(spec_.name, Qt::ElideRight, inner.width()));
    if (typeFits) {
      QFont typeFont = big;
      typeFont.setBold(false);
      typeFont.setPixelSize(std::max(1, int(big.pixelSize() * 0.8)));
      painter->setFont(typeFont);
      painter->setPen(hasError ? error() : dimText(pal));
      painter->drawText(QRectF(inner.left(), inner.center().y(), inner.width(), inner.height() / 2), Qt::AlignHCenter | Qt::AlignTop,
                        QFontMetricsF(typeFont).elidedText(spec_.type, Qt::ElideRight, inner.width()));
    }
    return;
  }

  // Title: [toggle] name ... type.
  double x = kPad;
  if (spec_.repeat) {
    const QRectF t = toggleRect();
    painter->setPen(QPen(text(pal), 1));
    painter->setBrush(nodeFill(pal));
    painter->drawRoundedRect(t, 3, 3);
    QPolygonF arrow;
    const QPointF c = t.center();
    if (spec_.expanded) arrow << c + QPointF(-4, -2) << c + QPointF(4, -2) << c + QPointF(0, 3);
    else arrow << c + QPointF(-2, -4) << c + QPointF(3, 0) << c + QPointF(-2, 4);
    painter->setBrush(text(pal));
    painter->setPen(Qt::NoPen);
    painter->drawPolygon(arrow);
    x = t.right() + 6;
  }
  painter->setFont(small);
  painter->setPen(dimText(pal));
  const double typeWidth = fm.horizontalAdvance(spec_.type);
  painter->drawText(QRectF(geo_.width - kPad - typeWidth, 0, typeWidth, geo_.header), Qt::AlignVCenter | Qt::AlignRight, spec_.type);
  painter->setFont(title);
  painter->setPen(text(pal));
  const QFontMetricsF tm(title);
  painter->drawText(QRectF(x, 0, geo_.width - x - typeWidth - kPad - 6, geo_.header), Qt::AlignVCenter | Qt::AlignLeft,
                    tm.elidedText(spec_.name, Qt::ElideRight, geo_.width - x - typeWidth - kPad - 6));

  // Port names beside their ports.
  painter->setFont(small);
  painter->setPen(dimText(pal));
  for (int i = 0; i < spec_.inputs.size(); ++i)
    painter->drawText(QRectF(kPad + 4, geo_.portsTop + i * geo_.row, geo_.width / 2, geo_.row), Qt::AlignVCenter | Qt::AlignLeft,
                      spec_.inputs[i]);
  if (spec_.hasOutput)
    painter->drawText(QRectF(geo_.width / 2, geo_.portsTop, geo_.width / 2 - kPad - 4, geo_.row), Qt::AlignVCenter | Qt::AlignRight,
                      QStringLiteral("out"));

  // Notes, then the parameter links.
  QFont italic = small;
  italic.setItalic(true);
  painter->setFont(italic);
  for (int i = 0; i < spec_.notes.size(); ++i)
    painter->drawText(QRectF(kPad, geo_.notesTop + i * geo_.line, geo_.width - 2 * kPad, geo_.line), Qt::AlignVCenter | Qt::AlignLeft,
                      fm.elidedText(spec_.notes[i], Qt::ElideRight, geo_.width - 2 * kPad));
  painter->setPen(link(pal));
  for (int i = 0; !spec_.expanded && i < spec_.params.size(); ++i) {
    QFont f = small;
    f.setUnderline(i == hoveredParam_);
    painter->setFont(f);
    const QRectF r = paramRect(i);
    painter->drawText(r, Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(spec_.params[i].text, Qt::ElideRight, r.width()));
  }
  if (hasError) {
    painter->setFont(small);
    painter->setPen(error());
    painter->drawText(geo_.error, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, spec_.error);
  }
}

}  // namespace shardlab::ui
