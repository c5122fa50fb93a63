// The scene behind the graph canvas: builds node, port and edge items from the document (placing
// nodes the project gives no position), keeps the scene's selection and the document's in step,
// and turns mouse gestures into document edits: dragging between ports connects them, dragging
// nodes moves them (one undo step per drag), clicking a parameter or an edge asks the sharding view
// for that array, and a Repeat's button (or a double-click on its title) expands or collapses it.
#pragma once

#include <QGraphicsScene>
#include <QHash>
#include <QPointF>

#include "ui/canvas/node_spec.h"

class QGraphicsPathItem;

namespace shardlab::ui {

class ProjectDocument;
class NodeItem;
class PortItem;
class EdgeItem;

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit GraphScene(ProjectDocument* doc, QObject* parent = nullptr);
  ~GraphScene() override;

  // Drops every item and draws the document's graph again.
  void rebuild();

  NodeItem* node(const QString& path) const;
  QList<NodeItem*> nodes() const;
  QList<EdgeItem*> edges() const;
  // The edge feeding input `port` of node `path` ("blocks/W1", "in"), or null.
  EdgeItem* edgeInto(const QString& path, const QString& port) const;
  QList<EdgeItem*> selectedEdges() const;
  // The bounds of every node, in scene coordinates.
  QRectF graphRect() const;
  // The expanded Repeat whose block area contains `scenePos` (a drop there adds into the block).
  NodeItem* frameAt(const QPointF& scenePos) const;

  // Selects every node (blocks' nodes included), telling the document once.
  void selectAllNodes();

  // Brings node `path` into view, selected, without editing the project: its own item where it is
  // drawn, else the collapsed Repeat that holds it, selected and marked above its title with the
  // inner node's name (expanding it would be an edit, and change the saved project). The document's
  // selection stays as it is. Returns the path of the item shown, empty when there is none.
  QString revealNode(const QString& path);
  // The Repeat marked by revealNode() as holding the selected node, empty when none is.
  QString revealedIn() const;

  // Edits; each is one undo step and returns false when nothing changed or the document refused.
  bool toggleExpanded(const QString& repeatPath);
  bool deleteSelection();  // the selected edges disconnected and the selected nodes removed
  bool arrange();          // every node (blocks included) placed by the automatic layout
  bool alignSelection(Qt::Edge edge);  // Qt::LeftEdge or Qt::TopEdge
  bool connectPorts(PortItem* a, PortItem* b, const QPointF& where);
  // A new node of `type` with its title centred at `scenePos`, inside the expanded block there if
  // any; it becomes the selection. Dropped on an edge, it is inserted into it (the edge's source
  // feeds its first input, it feeds what the edge fed), still one undo step. Returns its path, or
  // empty when refused.
  QString addNode(const QString& type, const QPointF& scenePos);

  // Positions for every node of every graph by the automatic layout, as the project stores them.
  QHash<QString, QPointF> arrangedPositions() const;

 signals:
  // A gesture on the canvas was refused; the view shows `reason` near `scenePos`.
  void refused(const QString& reason, const QPointF& scenePos);

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* e) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* e) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* e) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* e) override;

 private:
  // Makes the items of the graph at `parent` (inside `frame` for a block) and places them.
  void buildGraph(const QString& parent, NodeItem* frame);
  void place(const QVector<NodeItem*>& items, const QString& parent);
  PortItem* portAt(const QPointF& scenePos) const;
  NodeItem* nodeAt(const QPointF& scenePos) const;
  void finishConnection(const QPointF& scenePos);
  void clearMarks();
  void commitMoves();
  bool writePositions(const QString& text, const QHash<QString, QPointF>& positions);
  // Stored positions of the shown nodes the project has no position for (placed automatically).
  QHash<QString, QPointF> automaticPositions() const;
  bool refuse(const QString& what, const QString& reason, const QPointF& where);
  void syncSelectionToDocument();
  void applyDocumentSelection();
  void clearRevealMark();

  ProjectDocument* doc_;
  // Selection changes made while following the document (or rebuilding) are not the user's.
  bool quiet_ = false;
  QHash<QString, NodeItem*> nodes_;
  QStringList order_;  // node paths in the project's order
  QList<EdgeItem*> edges_;

  // The gesture under way.
  PortItem* dragFrom_ = nullptr;
  QGraphicsPathItem* rubber_ = nullptr;
  QHash<QString, QPointF> pressPositions_;  // every node's stored position when the button went down
  QPointF pressAt_;
  QString pressParam_;  // array of the parameter line pressed on
  QString pressEdge_;   // array of the edge pressed on
  QString pressToggle_; // Repeat whose button was pressed
};

}  // namespace shardlab::ui
