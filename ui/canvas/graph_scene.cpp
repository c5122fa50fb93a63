#include "ui/canvas/graph_scene.h"

#include <QApplication>
#include <QGraphicsPathItem>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsView>
#include <QSet>
#include <algorithm>
#include <optional>

#include "ui/canvas/canvas_style.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/graph_layout.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/placement.h"
#include "ui/canvas/port_item.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"

namespace shardlab::ui {

namespace {

int depth(const QString& path) { return int(path.count('/')); }

}  // namespace

GraphScene::GraphScene(ProjectDocument* doc, QObject* parent) : QGraphicsScene(parent), doc_(doc) {
  connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::syncSelectionToDocument);
  connect(doc_, &ProjectDocument::selectionChanged, this, &GraphScene::applyDocumentSelection);
}

GraphScene::~GraphScene() {
  // Items go now, while this is still a GraphScene: their deselection must not reach the document.
  quiet_ = true;
  clear();
}

// ---- building -------------------------------------------------------------------------------

void GraphScene::rebuild() {
  quiet_ = true;
  QSet<QString> selectedEdgeKeys;
  for (EdgeItem* e : selectedEdges()) selectedEdgeKeys.insert(e->key());
  // Whatever gesture was under way refers to items about to go.
  dragFrom_ = nullptr;
  rubber_ = nullptr;
  pressPositions_.clear();
  pressParam_.clear();
  pressEdge_.clear();
  pressToggle_.clear();
  nodes_.clear();
  order_.clear();
  edges_.clear();
  clear();
  buildGraph(QString(), nullptr);
  const QStringList docSelection = doc_->selection();
  const QSet<QString> selected(docSelection.begin(), docSelection.end());
  for (NodeItem* n : std::as_const(nodes_)) n->setSelected(selected.contains(n->path()));
  for (EdgeItem* e : std::as_const(edges_)) e->setSelected(selectedEdgeKeys.contains(e->key()));
  quiet_ = false;
}

void GraphScene::buildGraph(const QString& parent, NodeItem* frame) {
  const project::Project& p = doc_->project();
  const api::Design& d = doc_->design();
  const graph::Graph* g = edits::graph_at(p, parent.toStdString());
  if (!g) return;
  QVector<NodeItem*> items;
  auto make = [&](const QString& path) {
    auto* item = new NodeItem(nodeSpec(p, d, path), font(), frame);
    if (!frame) addItem(item);
    nodes_.insert(path, item);
    order_ << path;
    items << item;
    return item;
  };
  if (frame) make(joinPath(parent, QLatin1String(graph::kCarryNode)));
  for (const graph::Node& n : g->nodes) {
    NodeItem* item = make(joinPath(parent, QString::fromStdString(n.name)));
    if (item->spec().expanded) buildGraph(item->path(), item);
  }
  place(items, parent);
  for (const graph::Edge& e : g->edges) {
    const QString from = QString::fromStdString(e.from.node);
    NodeItem* src = nodes_.value(joinPath(parent, from));
    NodeItem* dst = nodes_.value(joinPath(parent, QString::fromStdString(e.to.node)));
    // A dangling edge has nowhere to go; the design report names it.
    if (!src || !dst || !src->outputPort()) continue;
    PortItem* in = dst->inputPort(QString::fromStdString(e.to.port));
    if (!in) continue;
    auto* edge = new EdgeItem(src->outputPort(), in, edgeShape(d, parent, from), edgeArray(p, parent, from), frame);
    if (!frame) addItem(edge);
    edge->updatePath();
    edges_ << edge;
  }
  if (frame) frame->updateFrame();
}

void GraphScene::place(const QVector<NodeItem*>& items, const QString& parent) {
  QVector<layout::Node> sized;
  for (NodeItem* item : items) sized.push_back({item->spec().name, item->size()});
  const QHash<QString, QRectF> at =
      placement::place(doc_->project(), parent, sized, placement::edgesOf(doc_->project(), doc_->design(), font(), parent));
  for (NodeItem* item : items) item->setStoredPos(at.value(item->spec().name).topLeft());
}

QHash<QString, QPointF> GraphScene::arrangedPositions() const {
  const project::Project& p = doc_->project();
  const api::Design& d = doc_->design();
  QHash<QString, QPointF> out;
  QHash<QString, QSizeF> blockExtent;
  auto arrangeGraph = [&](const graph::Graph& g, const QString& parent) {
    QVector<layout::Node> ns;
    if (!parent.isEmpty())
      ns.push_back({QLatin1String(graph::kCarryNode), NodeItem::measure(nodeSpec(p, d, joinPath(parent, graph::kCarryNode)), font())});
    for (const graph::Node& n : g.nodes) {
      const NodeSpec spec = nodeSpec(p, d, joinPath(parent, QString::fromStdString(n.name)));
      ns.push_back({spec.name, NodeItem::measure(spec, font(), blockExtent.value(spec.path))});
    }
    const QHash<QString, QPointF> at = layout::layered(ns, placement::edgesOf(p, d, font(), parent));
    QSizeF extent(0, 0);
    for (const layout::Node& n : ns) {
      const QPointF xy = at.value(n.id);
      out.insert(joinPath(parent, n.id), xy);
      extent = extent.expandedTo(QSizeF(xy.x() + n.size.width(), xy.y() + n.size.height()));
    }
    return extent;
  };
  // Blocks first: an expanded Repeat's size depends on how its block is laid out.
  for (const graph::Node& n : p.graph.nodes)
    if (n.body) {
      const QString path = QString::fromStdString(n.name);
      blockExtent.insert(path, arrangeGraph(*n.body, path));
    }
  arrangeGraph(p.graph, QString());
  return out;
}

// ---- lookups --------------------------------------------------------------------------------

NodeItem* GraphScene::node(const QString& path) const { return nodes_.value(path); }

QList<NodeItem*> GraphScene::nodes() const {
  QList<NodeItem*> out;
  for (const QString& path : order_) out << nodes_.value(path);
  return out;
}

QList<EdgeItem*> GraphScene::edges() const { return edges_; }

EdgeItem* GraphScene::edgeInto(const QString& path, const QString& port) const {
  for (EdgeItem* e : edges_)
    if (e->to()->node()->path() == path && e->to()->name() == port) return e;
  return nullptr;
}

QList<EdgeItem*> GraphScene::selectedEdges() const {
  QList<EdgeItem*> out;
  for (EdgeItem* e : edges_)
    if (e->isSelected()) out << e;
  return out;
}

QRectF GraphScene::graphRect() const {
  QRectF r;
  for (NodeItem* n : std::as_const(nodes_))
    if (!n->frame()) r = r.united(n->sceneBoundingRect());
  return r;
}

NodeItem* GraphScene::frameAt(const QPointF& scenePos) const {
  for (QGraphicsItem* item : items(scenePos))
    if (auto* n = qgraphicsitem_cast<NodeItem*>(item); n && n->contentContains(n->mapFromScene(scenePos))) return n;
  return nullptr;
}

PortItem* GraphScene::portAt(const QPointF& scenePos) const {
  for (QGraphicsItem* item : items(scenePos))
    if (auto* p = qgraphicsitem_cast<PortItem*>(item)) return p;
  return nullptr;
}

NodeItem* GraphScene::nodeAt(const QPointF& scenePos) const {
  for (QGraphicsItem* item : items(scenePos)) {
    if (auto* n = qgraphicsitem_cast<NodeItem*>(item)) return n;
    if (qgraphicsitem_cast<EdgeItem*>(item)) return nullptr;  // an edge drawn over a block's frame
  }
  return nullptr;
}

// ---- edits ----------------------------------------------------------------------------------

bool GraphScene::refuse(const QString& what, const QString& reason, const QPointF& where) {
  // Through the document, so the refusal reaches the status bar and the log like any other.
  doc_->edit(what, [&](project::Project&) { throw Error(reason.toStdString()); });
  emit refused(reason, where);
  return false;
}

bool GraphScene::connectPorts(PortItem* a, PortItem* b, const QPointF& where) {
  if (a->isOutput() == b->isOutput())
    return refuse(tr("Connect"),
                  a->isOutput() ? tr("'%1.out' and '%2.out' are both outputs: drag from an output (right side) to an input (left side)")
                                      .arg(a->node()->path(), b->node()->path())
                                : tr("'%1.%2' and '%3.%4' are both inputs: drag from an output (right side) to an input (left side)")
                                      .arg(a->node()->path(), a->name(), b->node()->path(), b->name()),
                  where);
  PortItem* out = a->isOutput() ? a : b;
  PortItem* in = a->isOutput() ? b : a;
  if (out->graphParent() != in->graphParent())
    return refuse(tr("Connect"),
                  tr("'%1' and '%2' are in different graphs: a block's nodes connect only among themselves and to its @in")
                      .arg(out->node()->path(), in->node()->path()),
                  where);
  const std::string parent = out->graphParent().toStdString();
  const graph::Endpoint from{out->nodeName().toStdString(), "out"}, to{in->nodeName().toStdString(), in->name().toStdString()};
  const bool ok = doc_->edit(tr("Connect %1 to %2.%3").arg(out->node()->path(), in->node()->path(), in->name()),
                             [&](project::Project& p) { edits::connect(p, parent, from, to); });
  if (!ok) emit refused(doc_->lastError(), where);
  return ok;
}

bool GraphScene::toggleExpanded(const QString& repeatPath) {
  const std::string path = repeatPath.toStdString();
  const bool now = edits::expanded(doc_->project(), path);
  doc_->viewEdit([&](project::Project& p) { edits::set_expanded(p, path, !now); });
  return true;
}

bool GraphScene::deleteSelection() {
  struct Cut {
    std::string parent;
    graph::Endpoint to;
  };
  std::vector<Cut> cuts;
  for (EdgeItem* e : selectedEdges())
    cuts.push_back({e->to()->graphParent().toStdString(), {e->to()->nodeName().toStdString(), e->to()->name().toStdString()}});
  std::vector<std::string> paths;
  for (const QString& s : doc_->selection()) paths.push_back(s.toStdString());
  if (cuts.empty() && paths.empty()) return false;
  QString text;
  if (paths.empty())
    text = cuts.size() == 1 ? tr("Disconnect %1").arg(QString::fromStdString(cuts[0].to.str())) : tr("Disconnect %1 edges").arg(cuts.size());
  else
    text = paths.size() == 1 && cuts.empty() ? tr("Delete %1").arg(QString::fromStdString(paths[0]))
           : cuts.empty()                    ? tr("Delete %1 nodes").arg(paths.size())
                                             : tr("Delete %1 nodes and %2 edges").arg(paths.size()).arg(cuts.size());
  return doc_->edit(text, [&](project::Project& p) {
    for (const Cut& c : cuts) edits::disconnect(p, c.parent, c.to);
    edits::remove_nodes(p, paths);
  });
}

QHash<QString, QPointF> GraphScene::automaticPositions() const {
  QHash<QString, QPointF> out;
  for (NodeItem* n : std::as_const(nodes_))
    if (!edits::position(doc_->project(), n->path().toStdString())) out.insert(n->path(), n->storedPos());
  return out;
}

bool GraphScene::writePositions(const QString& text, const QHash<QString, QPointF>& positions) {
  // Nodes still placed by the automatic layout are written where they are too, so placing one node
  // by hand never makes the others jump to new automatic spots.
  QHash<QString, QPointF> all = automaticPositions();
  all.insert(positions);
  return doc_->edit(text, [&](project::Project& p) {
    for (auto it = all.constBegin(); it != all.constEnd(); ++it) edits::set_position(p, it.key().toStdString(), it.value().x(), it.value().y());
  });
}

QString GraphScene::addNode(const QString& type, const QPointF& scenePos) {
  NodeItem* frame = frameAt(scenePos);
  const std::string parent = frame ? frame->path().toStdString() : std::string();
  // Dropped on an edge of the same graph: the layer goes between the edge's ends.
  QStringList onEdge;  // graph, node, input port the edge feeds
  for (QGraphicsItem* item : items(scenePos))
    if (auto* e = qgraphicsitem_cast<EdgeItem*>(item)) {
      const QStringList key = e->key().split('|');
      if (key.size() == 3 && key[0].toStdString() == parent) onEdge = key;
      break;
    }
  // The title's centre under the pointer: about half a node's width left, half a title up.
  QPointF at = scenePos - QPointF(style::kMinNodeWidth / 2, 12);
  if (frame) {
    at = frame->mapFromScene(at) - frame->contentOrigin();
    at = QPointF(std::max(0.0, at.x()), std::max(0.0, at.y()));
  }
  const QHash<QString, QPointF> keep = automaticPositions();
  std::string path;
  const bool ok = doc_->edit(onEdge.isEmpty() ? tr("Add %1").arg(type) : tr("Insert %1").arg(type), [&](project::Project& p) {
    for (auto it = keep.constBegin(); it != keep.constEnd(); ++it) edits::set_position(p, it.key().toStdString(), it.value().x(), it.value().y());
    path = edits::add_node(p, type.toStdString(), parent, at.x(), at.y());
    if (onEdge.isEmpty()) return;
    const std::vector<std::string> inputs = graph::layer_info(type.toStdString()).inputs;
    if (inputs.empty()) return;  // an Input takes nothing: it lands beside the edge
    const graph::Endpoint to{onEdge[1].toStdString(), onEdge[2].toStdString()};
    std::optional<graph::Endpoint> from;
    for (const graph::Edge& e : edits::graph_at(p, parent).edges)
      if (e.to.node == to.node && e.to.port == to.port) from = e.from;
    if (!from) return;
    const std::string added = edits::leaf_of(path);
    edits::disconnect(p, parent, to);
    edits::connect(p, parent, *from, {added, inputs.front()});
    edits::connect(p, parent, {added, "out"}, to);
  });
  if (!ok) {
    emit refused(doc_->lastError(), scenePos);
    return {};
  }
  doc_->setSelection({QString::fromStdString(path)});
  return QString::fromStdString(path);
}

bool GraphScene::arrange() {
  // How the graph is laid out on screen, not the model: no undo step, nothing marked modified
  // (the next save keeps it), like expanding a block.
  const QHash<QString, QPointF> at = arrangedPositions();
  if (at.isEmpty()) return false;
  doc_->viewEdit([&](project::Project& p) {
    for (auto it = at.constBegin(); it != at.constEnd(); ++it) edits::set_position(p, it.key().toStdString(), it.value().x(), it.value().y());
  });
  return true;
}

bool GraphScene::alignSelection(Qt::Edge edge) {
  QList<NodeItem*> sel;
  for (QGraphicsItem* item : selectedItems())
    if (auto* n = qgraphicsitem_cast<NodeItem*>(item); n && !(n->frame() && n->frame()->isSelected())) sel << n;
  if (sel.size() < 2) return false;
  const bool left = edge == Qt::LeftEdge;
  double target = 1e300;
  for (NodeItem* n : sel) target = std::min(target, left ? n->scenePos().x() : n->scenePos().y());
  QHash<QString, QPointF> moved;
  for (NodeItem* n : sel) {
    QPointF at = n->scenePos();
    (left ? at.rx() : at.ry()) = target;
    QPointF stored = n->parentItem() ? n->parentItem()->mapFromScene(at) : at;
    if (NodeItem* f = n->frame()) stored = QPointF(std::max(0.0, stored.x() - f->contentOrigin().x()), std::max(0.0, stored.y() - f->contentOrigin().y()));
    moved.insert(n->path(), stored);
  }
  return writePositions(left ? tr("Align Left") : tr("Align Top"), moved);
}

void GraphScene::commitMoves() {
  QHash<QString, QPointF> moved;
  for (auto it = pressPositions_.constBegin(); it != pressPositions_.constEnd(); ++it)
    if (NodeItem* n = node(it.key()); n && (n->storedPos() - it.value()).manhattanLength() > 0.5) moved.insert(it.key(), n->storedPos());
  pressPositions_.clear();
  if (moved.isEmpty()) return;
  writePositions(moved.size() == 1 ? tr("Move %1").arg(moved.begin().key()) : tr("Move %1 nodes").arg(moved.size()), moved);
}

// ---- mouse ----------------------------------------------------------------------------------

void GraphScene::clearMarks() {
  for (NodeItem* n : std::as_const(nodes_))
    for (PortItem* p : n->ports()) p->setMark(PortItem::Mark::None);
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* e) {
  pressParam_.clear();
  pressEdge_.clear();
  pressToggle_.clear();
  pressPositions_.clear();
  if (e->button() == Qt::LeftButton) {
    if (PortItem* port = portAt(e->scenePos())) {
      // A connection starts; the rubber edge follows the mouse until the release.
      dragFrom_ = port;
      rubber_ = new QGraphicsPathItem;
      QPen pen(style::selection(palette()), 2, Qt::DashLine);
      rubber_->setPen(pen);
      rubber_->setZValue(10);
      addItem(rubber_);
      port->setMark(PortItem::Mark::Target);
      e->accept();
      return;
    }
    if (NodeItem* n = nodeAt(e->scenePos())) {
      const QPointF local = n->mapFromScene(e->scenePos());
      if (n->toggleRect().contains(local)) {
        pressToggle_ = n->path();
        e->accept();
        return;
      }
      if (int i = n->paramAt(local); i >= 0) pressParam_ = n->spec().params[i].array;
    } else {
      for (QGraphicsItem* item : items(e->scenePos()))
        if (auto* edge = qgraphicsitem_cast<EdgeItem*>(item)) {
          pressEdge_ = edge->array();
          break;
        }
    }
    for (NodeItem* n : std::as_const(nodes_)) pressPositions_.insert(n->path(), n->storedPos());
  }
  QGraphicsScene::mousePressEvent(e);
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent* e) {
  if (!dragFrom_) {
    QGraphicsScene::mouseMoveEvent(e);
    return;
  }
  const QPointF a = dragFrom_->scenePos(), b = e->scenePos();
  rubber_->setPath(dragFrom_->isOutput() ? EdgeItem::curve(a, b) : EdgeItem::curve(b, a));
  clearMarks();
  dragFrom_->setMark(PortItem::Mark::Target);
  if (PortItem* target = portAt(b); target && target != dragFrom_) {
    // A quick hint only; the document has the last word when the button comes up.
    const bool plausible = target->isOutput() != dragFrom_->isOutput() && target->graphParent() == dragFrom_->graphParent() &&
                           target->node() != dragFrom_->node();
    target->setMark(plausible ? PortItem::Mark::Target : PortItem::Mark::Refused);
  }
  e->accept();
}

void GraphScene::finishConnection(const QPointF& scenePos) {
  PortItem* from = dragFrom_;
  dragFrom_ = nullptr;
  delete rubber_;
  rubber_ = nullptr;
  clearMarks();
  PortItem* to = portAt(scenePos);
  if (to && to != from) connectPorts(from, to, scenePos);
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* e) {
  if (e->button() == Qt::LeftButton && dragFrom_) {
    finishConnection(e->scenePos());
    e->accept();
    return;
  }
  if (e->button() == Qt::LeftButton && !pressToggle_.isEmpty()) {
    const QString path = pressToggle_;
    pressToggle_.clear();
    if (NodeItem* n = node(path); n && n->toggleRect().contains(n->mapFromScene(e->scenePos()))) toggleExpanded(path);
    e->accept();
    return;
  }
  QGraphicsScene::mouseReleaseEvent(e);
  if (e->button() != Qt::LeftButton) return;
  const bool click = (e->screenPos() - e->buttonDownScreenPos(Qt::LeftButton)).manhattanLength() < QApplication::startDragDistance();
  const QString param = pressParam_, edge = pressEdge_;
  pressParam_.clear();
  pressEdge_.clear();
  commitMoves();  // may rebuild the scene: nothing below touches items
  if (click && !param.isEmpty()) doc_->requestArray(param);
  else if (click && !edge.isEmpty()) doc_->requestArray(edge);
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* e) {
  if (e->button() == Qt::LeftButton)
    if (NodeItem* n = nodeAt(e->scenePos()); n && n->spec().repeat) {
      const QPointF local = n->mapFromScene(e->scenePos());
      if (n->headerRect().contains(local)) {
        // The button's own presses already toggle; a double-click on it must not toggle a third time.
        if (!n->toggleRect().contains(local)) toggleExpanded(n->path());
        e->accept();
        return;
      }
    }
  QGraphicsScene::mouseDoubleClickEvent(e);
}

// ---- selection ------------------------------------------------------------------------------

void GraphScene::syncSelectionToDocument() {
  if (quiet_) return;
  QStringList paths;
  for (const QString& path : std::as_const(order_))
    if (NodeItem* n = nodes_.value(path); n->isSelected() && !n->spec().carry) paths << path;
  // Top-level nodes first: deleting a Repeat before its block's nodes never trips over them.
  std::stable_sort(paths.begin(), paths.end(), [](const QString& a, const QString& b) { return depth(a) < depth(b); });
  quiet_ = true;
  doc_->setSelection(paths);
  quiet_ = false;
}

void GraphScene::selectAllNodes() {
  quiet_ = true;
  for (NodeItem* n : std::as_const(nodes_)) n->setSelected(true);
  quiet_ = false;
  syncSelectionToDocument();
}

void GraphScene::applyDocumentSelection() {
  if (quiet_) return;
  clearRevealMark();
  quiet_ = true;
  const QStringList docSelection = doc_->selection();
  const QSet<QString> selected(docSelection.begin(), docSelection.end());
  for (NodeItem* n : std::as_const(nodes_)) n->setSelected(selected.contains(n->path()));
  for (EdgeItem* e : std::as_const(edges_)) e->setSelected(false);
  quiet_ = false;
}

// ---- revealing a node (a trace span's) ------------------------------------------------------

namespace {
constexpr int kRevealMarkKey = 0x5e1;  // QGraphicsItem::data key of revealNode()'s mark
}

QString GraphScene::revealNode(const QString& path) {
  clearRevealMark();
  QString shown = path;
  NodeItem* item = nodes_.value(path);
  // Hidden: the deepest drawn node above it is the collapsed Repeat that holds it.
  for (qsizetype cut = path.lastIndexOf('/'); !item && cut > 0; cut = shown.lastIndexOf('/')) {
    shown = path.left(cut);
    item = nodes_.value(shown);
  }
  if (!item) return {};
  quiet_ = true;
  item->setSelected(true);
  quiet_ = false;
  if (shown != path) {
    auto* mark = new QGraphicsSimpleTextItem(tr("selected inside: %1").arg(path.mid(shown.size() + 1)), item);
    mark->setData(kRevealMarkKey, shown);
    mark->setAcceptedMouseButtons(Qt::NoButton);
    QFont f = font();
    f.setBold(true);
    mark->setFont(f);
    mark->setBrush(QApplication::palette().color(QPalette::Highlight));
    mark->setPos(0, -mark->boundingRect().height() - 2);
  }
  for (QGraphicsView* v : views()) v->ensureVisible(item);
  return shown;
}

QString GraphScene::revealedIn() const {
  for (QGraphicsItem* i : items())
    if (i->data(kRevealMarkKey).isValid()) return i->data(kRevealMarkKey).toString();
  return {};
}

void GraphScene::clearRevealMark() {
  for (QGraphicsItem* i : items())
    if (i->data(kRevealMarkKey).isValid()) delete i;
}

}  // namespace shardlab::ui
