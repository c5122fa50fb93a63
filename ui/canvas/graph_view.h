// The graph canvas: shows the project's layer graph and lets a person edit it with the mouse. It
// pans (middle button, or Space and drag), zooms (Ctrl+wheel, the zoom slots), rubber-band
// selects, takes layers dropped from the palette, and follows the document: it redraws after every
// change without losing the zoom or scroll position. Delete with an edge selected disconnects it.
// Over it float the Find Node bar (top right) and, while part of the graph is out of view, a
// minimap (bottom right). A right-click offers what can be done to the node, edge or empty spot
// under it.
#pragma once

#include <QGraphicsView>
#include <QTimer>

class QLabel;

namespace shardlab::ui {

class ProjectDocument;
class GraphScene;
class FindNodeBar;
class Minimap;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(ProjectDocument* doc, QWidget* parent = nullptr);

  GraphScene* graphScene() const { return scene_; }
  // The short note a refused gesture leaves on the canvas.
  QLabel* notice() const { return notice_; }
  double zoom() const;
  FindNodeBar* findBar() const { return findBar_; }
  Minimap* minimap() const { return minimap_; }

 public slots:
  void zoomIn();
  void zoomOut();
  void zoomToFit();
  void selectAll();
  // Lays out every node automatically, as one undo step.
  void autoLayout();
  // Lines the selected nodes up on the left-most left edge / top-most top edge, as one undo step.
  void alignLeft();
  void alignTop();
  // Disconnects the selected edges and removes the selected nodes, as one undo step.
  void deleteSelection();
  // Adds a layer of `type` in the middle of the visible area and selects it.
  void addLayer(const QString& type);
  void showNotice(const QString& text, const QPoint& viewportPos);
  // Opens the Find Node bar.
  void findNode();
  // Selects the node at `path` ("blocks/W1") and centres it at a readable zoom, first expanding
  // the collapsed Repeats it is inside (one undo step each, as their buttons). False if none.
  bool revealNode(const QString& path);
  // Centres the view on `scenePos`, as a click in the minimap does.
  void panTo(const QPointF& scenePos);

 protected:
  bool event(QEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void keyReleaseEvent(QKeyEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dragMoveEvent(QDragMoveEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  // A node's, an edge's or the canvas's own commands, for the item under the pointer.
  void contextMenuEvent(QContextMenuEvent* e) override;
  void changeEvent(QEvent* e) override;
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  void resizeEvent(QResizeEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  void followDocument();
  void fitSceneRect(bool reset);
  // Scales by `factor` (kept within the zoom limits) keeping the scene point under `anchor` still.
  void zoomBy(double factor, const QPoint& anchor);
  bool deletesEdges(const QKeyEvent* e) const;
  // Keeps the floating widgets in their corners and the minimap current.
  void placeOverlays();

  ProjectDocument* doc_;
  GraphScene* scene_;
  QLabel* notice_;
  FindNodeBar* findBar_;
  Minimap* minimap_;
  QTimer noticeTimer_;
  bool spaceHeld_ = false;
  bool panning_ = false;
  // The view was fitted and the user has not zoomed or panned since: a resize fits again (the
  // window fits a project before its docks have their final sizes).
  bool fitted_ = false;
  QPoint panLast_;
};

}  // namespace shardlab::ui
