#include "ui/canvas/placement.h"

#include <QFontMetricsF>
#include <algorithm>

#include "ui/canvas/canvas_style.h"

#include "ui/canvas/node_item.h"
#include "ui/canvas/node_spec.h"
#include "ui/document/graph_edits.h"

namespace shardlab::ui::placement {

QVector<layout::Edge> edgesOf(const project::Project& p, const api::Design& d, const QFont& font, const QString& parent) {
  QVector<layout::Edge> out;
  const graph::Graph* g = edits::graph_at(p, parent.toStdString());
  if (!g) return out;
  const QFontMetricsF fm(style::smallFont(font));
  for (const graph::Edge& e : g->edges) {
    const QString from = QString::fromStdString(e.from.node);
    const QString label = edgeShape(d, parent, from);
    out.push_back({from, QString::fromStdString(e.to.node), label.isEmpty() ? 0.0 : fm.horizontalAdvance(label) + 10});
  }
  return out;
}

QHash<QString, QRectF> place(const project::Project& p, const QString& parent, const QVector<layout::Node>& nodes,
                             const QVector<layout::Edge>& edges) {
  QHash<QString, QRectF> out;
  QVector<QRectF> taken;
  QVector<const layout::Node*> unplaced;
  for (const layout::Node& n : nodes) {
    if (auto xy = edits::position(p, joinPath(parent, n.id).toStdString())) {
      // Inside a block nothing goes above or left of the block's area.
      QPointF at(xy->first, xy->second);
      if (!parent.isEmpty()) at = QPointF(std::max(0.0, at.x()), std::max(0.0, at.y()));
      out.insert(n.id, QRectF(at, n.size));
      taken << out.value(n.id);
    } else {
      unplaced << &n;
    }
  }
  if (unplaced.isEmpty()) return out;
  // The layout sees the whole graph so unplaced nodes land where the flow puts them; they then
  // step aside from any node the user placed.
  const QHash<QString, QPointF> at = layout::layered(nodes, edges);
  std::stable_sort(unplaced.begin(), unplaced.end(), [&](const layout::Node* a, const layout::Node* b) {
    const QPointF pa = at.value(a->id), pb = at.value(b->id);
    return pa.x() != pb.x() ? pa.x() < pb.x() : pa.y() < pb.y();
  });
  for (const layout::Node* n : unplaced) {
    const QRectF r = layout::freeSpot(QRectF(at.value(n->id), n->size), taken);
    out.insert(n->id, r);
    taken << r;
  }
  return out;
}

QHash<QString, QRectF> nodeRects(const project::Project& p, const api::Design& d, const QFont& font, const QString& parent) {
  const graph::Graph* g = edits::graph_at(p, parent.toStdString());
  if (!g) return {};
  QVector<layout::Node> nodes;
  if (!parent.isEmpty())
    nodes.push_back({QLatin1String(graph::kCarryNode), NodeItem::measure(nodeSpec(p, d, joinPath(parent, graph::kCarryNode)), font)});
  for (const graph::Node& n : g->nodes) {
    const NodeSpec spec = nodeSpec(p, d, joinPath(parent, QString::fromStdString(n.name)));
    QSizeF block;
    if (spec.expanded)
      for (const QRectF& r : nodeRects(p, d, font, spec.path)) block = block.expandedTo(QSizeF(r.right(), r.bottom()));
    nodes.push_back({spec.name, NodeItem::measure(spec, font, block)});
  }
  return place(p, parent, nodes, edgesOf(p, d, font, parent));
}

}  // namespace shardlab::ui::placement
