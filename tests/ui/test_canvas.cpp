// The graph canvas driven as a person drives it: real mouse presses, moves and releases on the
// view's viewport, keys on the view, a palette drop delivered as a drop event; every change is
// checked in the document and in what the scene draws, then undone and redone.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDropEvent>
#include <QContextMenuEvent>
#include <QTimer>
#include <QMenu>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QPainter>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStyleFactory>
#include <QUndoStack>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "tests/engine/test_support.h"
#include "tests/ui/context_menu.h"
#include "ui/canvas/canvas_style.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/find_node_bar.h"
#include "ui/canvas/graph_layout.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/minimap.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/port_item.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/palette/layer_model.h"
#include "ui/palette/layer_palette.h"

using namespace shardlab;
using namespace shardlab::ui;
using shardlab::testing::contextMenu;

namespace {

QString projectFile(const QString& name) { return QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/") + name + ".shardlab.json"; }

struct Canvas {
  ProjectDocument doc;
  GraphView view{&doc};
  GraphScene* scene() { return view.graphScene(); }
  NodeItem* node(const QString& path) { return scene()->node(path); }
  QWidget* viewport() { return view.viewport(); }
  // Where a point of an item is on the viewport.
  QPoint at(const QGraphicsItem* item, QPointF local = {}) { return view.mapFromScene(item->mapToScene(local)); }
  QPoint port(const QString& path, const QString& name) {
    NodeItem* n = node(path);
    return at(name == "out" ? static_cast<QGraphicsItem*>(n->outputPort()) : n->inputPort(name));
  }
  // A point in a node's title, clear of its Repeat button and ports.
  QPoint title(const QString& path) {
    NodeItem* n = node(path);
    return at(n, QPointF(n->size().width() / 2, n->headerRect().height() / 2));
  }
  QPoint edgeLabel(EdgeItem* e) { return at(e, e->labelRect().center()); }
  std::string json() { return project::to_json_string(doc.project()); }
};

std::unique_ptr<Canvas> openCanvas(const QString& name) {
  auto c = std::make_unique<Canvas>();
  c->doc.open(projectFile(name));
  c->view.resize(1500, 900);
  c->view.show();
  if (!QTest::qWaitForWindowExposed(&c->view)) qWarning("canvas window not exposed");
  c->view.zoomToFit();
  return c;
}

// Press, move in steps (as a hand does), release.
void drag(QWidget* w, QPoint from, QPoint to, Qt::MouseButton button = Qt::LeftButton, Qt::KeyboardModifiers mods = {}) {
  QTest::mousePress(w, button, mods, from);
  for (int i = 1; i <= 6; ++i) QTest::mouseMove(w, from + (to - from) * i / 6);
  QTest::mouseRelease(w, button, mods, to);
}

// What a drag from the palette delivers to the viewport: enter, move, then the drop. (QDrag::exec
// blocks on the offscreen platform, so the events are sent as the window system would.)
bool dropOn(QWidget* viewport, QPoint at, const QMimeData* mime) {
  QDragEnterEvent enter(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &enter);
  if (!enter.isAccepted()) return false;
  QDragMoveEvent move(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &move);
  if (!move.isAccepted()) return false;
  QDropEvent drop(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &drop);
  return drop.isAccepted();
}

QStringList edgeList(const project::Project& p, const std::string& parent = "") {
  QStringList out;
  for (const graph::Edge& e : edits::graph_at(p, parent)->edges) out << QString::fromStdString(e.from.str() + "->" + e.to.str());
  return out;
}

QString expectedShape(const api::Design& d, const QString& path) {
  const graph::NodeReport* r = findReport(d, path);
  return r ? QString::fromStdString(graph::describe(r->output)) : QStringLiteral("<no report for %1>").arg(path);
}

// Pixels of the error red where `item` is drawn.
int redPixels(QGraphicsScene* scene, QGraphicsItem* item) {
  const QRectF r = item->sceneBoundingRect();
  QImage img(r.size().toSize() * 2, QImage::Format_ARGB32);
  img.fill(Qt::white);
  QPainter p(&img);
  scene->render(&p, QRectF(), r);
  p.end();
  int n = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      const QColor c = img.pixelColor(x, y);
      if (c.red() > 180 && c.green() < 100 && c.blue() < 100) ++n;
    }
  return n;
}

bool overlapping(const QList<QRectF>& rects) {
  for (int i = 0; i < rects.size(); ++i)
    for (int j = i + 1; j < rects.size(); ++j)
      if (rects[i].intersects(rects[j])) return true;
  return false;
}

QList<QRectF> topLevelRects(GraphScene* s) {
  QList<QRectF> out;
  for (NodeItem* n : s->nodes())
    if (!n->frame()) out << n->sceneBoundingRect().adjusted(1, 1, -1, -1);
  return out;
}

}  // namespace

class CanvasTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setStyle(QStyleFactory::create("Fusion"));
  }

  void everyExampleDrawsEveryNodeAndEdge() {
    const QFileInfoList files = QDir(SHARDLAB_SOURCE_DIR "/projects").entryInfoList({"*.shardlab.json"}, QDir::Files);
    QVERIFY(files.size() >= 4);
    for (const QFileInfo& f : files) {
      auto c = openCanvas(f.fileName().remove(".shardlab.json"));
      const project::Project& p = c->doc.project();
      // Show every block so its nodes are drawn too.
      // Names first: expanding a block is an edit, which may replace the project's node list.
      QStringList blocks;
      for (const graph::Node& n : p.graph.nodes)
        if (n.type == "Repeat") blocks << QString::fromStdString(n.name);
      for (const QString& b : blocks) QVERIFY(c->scene()->toggleExpanded(b));
      auto checkGraph = [&](const graph::Graph& g, const QString& parent) {
        QList<QRectF> rects;
        for (const graph::Node& n : g.nodes) {
          const QString path = joinPath(parent, QString::fromStdString(n.name));
          NodeItem* item = c->node(path);
          QVERIFY2(item && item->isVisible(), qPrintable(f.fileName() + ": no node " + path));
          rects << item->sceneBoundingRect().adjusted(1, 1, -1, -1);
          if (!parent.isEmpty()) QVERIFY(c->node(parent)->sceneBoundingRect().contains(item->sceneBoundingRect()));
        }
        QVERIFY2(!overlapping(rects), qPrintable(f.fileName() + ": nodes overlap in '" + parent + "'"));
        for (const graph::Edge& e : g.edges) {
          const QString to = joinPath(parent, QString::fromStdString(e.to.node));
          EdgeItem* edge = c->scene()->edgeInto(to, QString::fromStdString(e.to.port));
          QVERIFY2(edge, qPrintable(f.fileName() + ": no edge into " + to));
          QCOMPARE(edge->from()->node()->path(), joinPath(parent, QString::fromStdString(e.from.node)));
          // The automatic layout flows left to right, or on to the next row where a long chain folds.
          const NodeItem *source = edge->from()->node(), *target = edge->to()->node();
          QVERIFY2(edge->from()->scenePos().x() < edge->to()->scenePos().x() ||
                       target->scenePos().y() >= source->scenePos().y() + source->size().height() + layout::kRowGap - 1,
                   qPrintable(f.fileName() + ": " + source->path() + " -> " + target->path()));
          // Its shape label sits clear of every node.
          const QRectF label = edge->mapRectToScene(edge->labelRect());
          for (NodeItem* n : c->scene()->nodes())
            if (!n->spec().expanded)
              QVERIFY2(!label.intersects(n->sceneBoundingRect()),
                       qPrintable(QString("%1 at (%2, %3, %4 x %5) covers the label into %6 at (%7, %8, %9 x %10), from %11 at (%12, %13)")
                                      .arg(n->path()).arg(n->sceneBoundingRect().x()).arg(n->sceneBoundingRect().y())
                                      .arg(n->sceneBoundingRect().width()).arg(n->sceneBoundingRect().height()).arg(to)
                                      .arg(label.x()).arg(label.y()).arg(label.width()).arg(label.height())
                                      .arg(source->path()).arg(source->scenePos().x()).arg(source->scenePos().y())));
          if (e.from.node != graph::kCarryNode) QCOMPARE(edge->label(), expectedShape(c->doc.design(), edge->from()->node()->path()));
          else QVERIFY(edge->label().startsWith("(batch "));
        }
        int drawnEdges = 0;
        for (EdgeItem* e : c->scene()->edges()) drawnEdges += e->to()->graphParent() == parent;
        QCOMPARE(drawnEdges, int(g.edges.size()));
      };
      checkGraph(p.graph, "");
      for (const graph::Node& n : p.graph.nodes)
        if (n.body) checkGraph(*n.body, QString::fromStdString(n.name));
    }
  }

  void buildAGraphWithThePaletteAndTheMouse() {
    auto c = openCanvas("fashion-mlp");
    // Select dense1, relu and dense2 with Ctrl-clicks, then delete them the way the Delete action does.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->title("dense1"));
    QTest::mouseClick(c->viewport(), Qt::LeftButton, Qt::ControlModifier, c->title("relu"));
    QTest::mouseClick(c->viewport(), Qt::LeftButton, Qt::ControlModifier, c->title("dense2"));
    QCOMPARE(c->doc.selection(), QStringList({"dense1", "relu", "dense2"}));
    std::vector<std::string> doomed;
    for (const QString& s : c->doc.selection()) doomed.push_back(s.toStdString());
    QVERIFY(c->doc.edit("Delete", [&](project::Project& p) { edits::remove_nodes(p, doomed); }));
    QCOMPARE(c->scene()->nodes().size(), 2);
    QCOMPARE(c->scene()->edges().size(), 1);

    // Drop a Dense from the palette below the flatten node.
    LayerPalette palette(&c->doc);
    const QModelIndex dense = palette.proxy()->mapFromSource(palette.model()->indexOf("Dense"));
    QVERIFY(dense.isValid());
    std::unique_ptr<QMimeData> mime(palette.proxy()->mimeData({dense}));
    QVERIFY(mime && mime->hasFormat("application/x-shardlab-layer"));
    const QPointF dropScene = c->node("flatten")->sceneBoundingRect().bottomRight() + QPointF(200, 120);
    const QPoint dropAt = c->view.mapFromScene(dropScene);
    // Anything but a layer is left to the window (a project file dropped to open it).
    QMimeData text;
    text.setText("Dense");
    QVERIFY(!dropOn(c->viewport(), dropAt, &text));
    QCOMPARE(c->scene()->nodes().size(), 2);
    QVERIFY(dropOn(c->viewport(), dropAt, mime.get()));
    QVERIFY(c->node("dense"));
    QCOMPARE(c->doc.selection(), QStringList{"dense"});
    QVERIFY(c->node("dense")->isSelected());
    QVERIFY(c->node("dense")->sceneBoundingRect().adjusted(-3, -3, 3, 3).contains(dropScene));

    // Connect flatten.out to dense.in by dragging between the ports.
    drag(c->viewport(), c->port("flatten", "out"), c->port("dense", "in"));
    QVERIFY(edgeList(c->doc.project()).contains("flatten.out->dense.in"));
    EdgeItem* edge = c->scene()->edgeInto("dense", "in");
    QVERIFY(edge);
    QCOMPARE(edge->label(), QStringLiteral("(batch 128, embed 784)"));
    QCOMPARE(edge->label(), expectedShape(c->doc.design(), "flatten"));
    QCOMPARE(c->node("dense")->spec().params.size(), 2);
    QCOMPARE(c->node("dense")->spec().params[0].text, QStringLiteral("kernel (embed 784, mlp 128)"));

    // A ReLU, wired the other way round: from its input back to dense's output.
    const QPoint reluDrop = c->view.mapFromScene(c->node("dense")->sceneBoundingRect().topRight() + QPointF(250, 40));
    mime->setData("application/x-shardlab-layer", "ReLU");
    QVERIFY(dropOn(c->viewport(), reluDrop, mime.get()));
    QVERIFY(c->node("relu"));
    drag(c->viewport(), c->port("relu", "in"), c->port("dense", "out"));
    QVERIFY(edgeList(c->doc.project()).contains("dense.out->relu.in"));
    QCOMPARE(c->scene()->edgeInto("relu", "in")->label(), QStringLiteral("(batch 128, mlp 128)"));

    // Each step undoes and redoes, and the canvas follows.
    QUndoStack* undo = c->doc.undoStack();
    undo->undo();
    QVERIFY(!c->scene()->edgeInto("relu", "in"));
    QVERIFY(c->node("relu"));
    undo->undo();
    QVERIFY(!c->node("relu"));
    undo->undo();
    QVERIFY(!c->scene()->edgeInto("dense", "in"));
    undo->undo();
    QVERIFY(!c->node("dense"));
    for (int i = 0; i < 4; ++i) undo->redo();
    QVERIFY(c->node("relu") && c->node("dense"));
    QCOMPARE(c->scene()->edgeInto("relu", "in")->from()->node()->path(), QStringLiteral("dense"));
    QCOMPARE(c->scene()->edgeInto("dense", "in")->label(), QStringLiteral("(batch 128, embed 784)"));
  }

  // A layer dropped on an edge goes into it: the edge's source feeds it and it feeds what the edge
  // fed, in one undo step; dropped beside the edge, it lands unconnected.
  void droppingOnAnEdgeInsertsTheLayer() {
    auto c = openCanvas("fashion-mlp");
    LayerPalette palette(&c->doc);
    std::unique_ptr<QMimeData> mime(palette.proxy()->mimeData({palette.proxy()->mapFromSource(palette.model()->indexOf("Dropout"))}));
    QVERIFY(mime);
    EdgeItem* edge = c->scene()->edgeInto("relu", "in");
    QVERIFY(edge);
    const QPoint onEdge = c->at(edge, edge->path().pointAtPercent(0.5));
    const int before = c->doc.undoStack()->index();
    QVERIFY(dropOn(c->viewport(), onEdge, mime.get()));
    QVERIFY(c->node("dropout"));
    const QStringList edges = edgeList(c->doc.project());
    QVERIFY2(edges.contains("dense1.out->dropout.in") && edges.contains("dropout.out->relu.in"), qPrintable(edges.join(" ")));
    QVERIFY(!edges.contains("dense1.out->relu.in"));
    QCOMPARE(c->doc.undoStack()->index(), before + 1);
    QCOMPARE(c->doc.undoStack()->undoText(), QString("Insert Dropout"));
    QVERIFY(c->doc.design().ok());
    QCOMPARE(c->scene()->edgeInto("relu", "in")->label(), expectedShape(c->doc.design(), "dropout"));
    c->doc.undoStack()->undo();
    QVERIFY(edgeList(c->doc.project()).contains("dense1.out->relu.in"));
    QVERIFY(!c->node("dropout"));

    // Well clear of every edge: added, not wired.
    const QPoint clear = c->view.mapFromScene(c->node("dense2")->sceneBoundingRect().bottomRight() + QPointF(150, 200));
    QVERIFY(dropOn(c->viewport(), clear, mime.get()));
    QVERIFY(c->node("dropout"));
    QCOMPARE(c->doc.undoStack()->undoText(), QString("Add Dropout"));
    QVERIFY(edgeList(c->doc.project()).contains("dense1.out->relu.in"));
  }

  // A right-click offers what can be done to what is under it: a node (selected first), an edge,
  // or the empty canvas, where Add Layer puts the layer at the click.
  void contextMenusOnNodesEdgesAndTheCanvas() {
    auto c = openCanvas("fashion-mlp");
    QStringList shown;
    contextMenu(c->viewport(), c->title("relu"), "Delete", &shown);
    QCOMPARE(shown, (QStringList{"Show Output in Sharding", "Delete"}));
    QVERIFY(!c->node("relu"));
    QCOMPARE(c->doc.undoStack()->undoText(), QString("Delete relu"));
    c->doc.undoStack()->undo();
    QVERIFY(c->node("relu"));

    shown.clear();
    EdgeItem* edge = c->scene()->edgeInto("dense2", "in");
    contextMenu(c->viewport(), c->at(edge, edge->path().pointAtPercent(0.5)), "Disconnect", &shown);
    QCOMPARE(shown, (QStringList{"Show Array in Sharding", "Disconnect"}));
    QVERIFY(!c->scene()->edgeInto("dense2", "in"));
    QVERIFY(c->node("relu") && c->node("dense2"));
    c->doc.undoStack()->undo();

    // Show Array asks the sharding view for the edge's activation.
    QSignalSpy requested(&c->doc, &ProjectDocument::arrayRequested);
    shown.clear();
    edge = c->scene()->edgeInto("dense2", "in");
    contextMenu(c->viewport(), c->at(edge, edge->path().pointAtPercent(0.5)), "Show Array in Sharding", &shown);
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().first().toString(), QString("relu"));

    shown.clear();
    const QPointF empty = c->node("dense2")->sceneBoundingRect().bottomRight() + QPointF(200, 200);
    contextMenu(c->viewport(), c->view.mapFromScene(empty), "Add Layer/Core/Dense", &shown);
    QCOMPARE(shown, (QStringList{"Add Layer", "Select All", "Zoom to Fit", "Arrange Graph"}));
    QVERIFY(c->node("dense"));
    QVERIFY(c->node("dense")->sceneBoundingRect().adjusted(-3, -3, 3, 3).contains(empty));
    QCOMPARE(c->doc.selection(), QStringList{"dense"});

    // A Repeat's menu expands and collapses it; neither is an undo step.
    auto r = openCanvas("dot-relu-dot");
    const int steps = r->doc.undoStack()->count();
    shown.clear();
    contextMenu(r->viewport(), r->title("blocks"), "Expand Block", &shown);
    QVERIFY(shown.contains("Expand Block"));
    QVERIFY(edits::expanded(r->doc.project(), "blocks"));
    QCOMPARE(r->doc.undoStack()->count(), steps);
  }

  // Arrange Graph changes how the graph is laid out, not the model: no undo step, and a saved
  // project stays unmodified (the next save keeps the new places).
  void arrangingIsNotAnUndoStep() {
    auto c = openCanvas("fashion-mlp");
    drag(c->viewport(), c->title("dense2"), c->title("dense2") + QPoint(160, 140));
    QCOMPARE(c->doc.undoStack()->count(), 1);  // a move is an edit
    QTemporaryDir dir;
    c->doc.saveAs(dir.filePath("moved.shardlab.json"));
    QVERIFY(!c->doc.isModified());
    const QPointF moved = c->node("dense2")->storedPos();

    QStringList shown;
    const QPointF empty = c->scene()->graphRect().bottomRight() + QPointF(300, 300);
    contextMenu(c->viewport(), c->view.mapFromScene(empty), "Arrange Graph", &shown);
    QVERIFY(shown.contains("Arrange Graph"));
    QCOMPARE(c->doc.undoStack()->count(), 1);
    QVERIFY(!c->doc.isModified());
    const QHash<QString, QPointF> arranged = c->scene()->arrangedPositions();
    QVERIFY((c->node("dense2")->storedPos() - moved).manhattanLength() > 50);
    for (const QString& path : {QString("image"), QString("dense1"), QString("dense2")})
      QVERIFY2((c->node(path)->storedPos() - arranged.value(path)).manhattanLength() < 1, qPrintable(path));
  }

  // Two nodes closer than an edge's label: the label fits the gap, shortened in the middle, and
  // the whole shape stays in label() and the tooltip.
  void closeNodesShortenTheirEdgeLabel() {
    auto c = openCanvas("fashion-mlp");
    EdgeItem* edge = c->scene()->edgeInto("dense1", "in");
    QCOMPARE(edge->shownLabel(), edge->label());
    const QPointF out = c->node("flatten")->outputPort()->scenePos();
    QVERIFY(c->doc.edit("close", [&](project::Project& p) {
      // dense1's input port 30 px right of flatten's output.
      const QPointF in = c->node("dense1")->inputPort("in")->scenePos();
      const QPointF at = c->node("dense1")->storedPos() + (QPointF(out.x() + 30, out.y()) - in);
      edits::set_position(p, "dense1", at.x(), at.y());
    }));
    edge = c->scene()->edgeInto("dense1", "in");
    QCOMPARE(edge->label(), QStringLiteral("(batch 128, embed 784)"));
    QVERIFY2(edge->shownLabel() != edge->label() && edge->shownLabel().contains(QChar(0x2026)), qPrintable(edge->shownLabel()));
    VERIFY_CONTAINS(edge->toolTip(), "(batch 128, embed 784)");
  }

  // Fitted to a canvas the size a 1920x1080 window gives it, every node's name is drawn at least
  // 9 px tall on screen: zoomed out past the small print, nodes show only name and type, large.
  void fittedViewsStayLegible_data() {
    QTest::addColumn<QString>("project");
    QTest::newRow("deep-mlp") << "deep-mlp";
    QTest::newRow("vit-fashion") << "vit-fashion";
    QTest::newRow("30 nodes") << "";
  }
  void fittedViewsStayLegible() {
    QFETCH(QString, project);
    auto c = std::make_unique<Canvas>();
    if (project.isEmpty()) {
      c->doc.newBlank();
      QVERIFY(c->doc.edit("chain", [](project::Project& p) {
        std::string last = edits::add_node(p, "Input", "", 0, 0);
        for (int i = 0; i < 29; ++i) {
          const std::string next = edits::add_node(p, i % 2 ? "ReLU" : "Dense", "", 0, 0);
          edits::connect(p, "", {last, "out"}, {next, "in"});
          last = next;
        }
      }));
      c->scene()->arrange();
      project = "chain30";
    } else {
      c->doc.open(projectFile(project));
    }
    c->view.resize(1360, 480);
    c->view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c->view));
    c->view.zoomToFit();
    QApplication::processEvents();
    const double lod = c->view.transform().m11();
    const QFont base = c->scene()->font();
    for (NodeItem* n : c->scene()->nodes()) {
      if (n->frame()) continue;
      const double px = NodeItem::isFar(lod, base) ? QFontInfo(NodeItem::farFont(base, lod, n->size(), n->spec().name)).pixelSize() * lod
                                                   : QFontMetricsF(style::titleFont(base)).height() * lod;
      QVERIFY2(px >= 9, qPrintable(QString("%1: name %2 px tall at zoom %3").arg(n->path()).arg(px).arg(lod)));
    }
    QVERIFY(c->view.grab().save(QString(SHARDLAB_BINARY_DIR "/ui-screenshots/canvas-fit-%1.png").arg(project)));
  }

  void refusedConnectionsChangeNothing() {
    auto c = openCanvas("fashion-mlp");
    QSignalSpy refused(&c->doc, &ProjectDocument::editRefused);
    auto attempt = [&](const QString& fromPath, const QString& fromPort, const QString& toPath, const QString& toPort, const QString& why) {
      const std::string before = c->json();
      const int commands = c->doc.undoStack()->count();
      const int spied = int(refused.count());
      drag(c->viewport(), c->port(fromPath, fromPort), c->port(toPath, toPort));
      QCOMPARE(int(refused.count()), spied + 1);
      VERIFY_CONTAINS(refused.last().at(0).toString(), why);
      QVERIFY(c->json() == before);
      QCOMPARE(c->doc.undoStack()->count(), commands);
      QVERIFY(c->view.notice()->isVisible());
      VERIFY_CONTAINS(c->view.notice()->text(), why);
    };
    attempt("image", "out", "dense1", "in", "already fed");
    attempt("dense1", "out", "dense1", "in", "cannot feed itself");
    attempt("relu", "out", "dense2", "out", "both outputs");
    attempt("dense1", "in", "relu", "in", "both inputs");

    // Free flatten's input, then try to feed it from downstream: a cycle.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->edgeLabel(c->scene()->edgeInto("flatten", "in")));
    c->view.setFocus();
    QTest::keyClick(&c->view, Qt::Key_Delete);
    QVERIFY(!edgeList(c->doc.project()).contains("image.out->flatten.in"));
    attempt("dense2", "out", "flatten", "in", "cycle");
    // The rubber edge is gone after every attempt.
    for (QGraphicsItem* item : c->scene()->items()) QVERIFY(item->type() != QGraphicsPathItem::Type);
  }

  void clickingAnEdgeShowsItsArrayAndDeleteDisconnects() {
    auto c = openCanvas("fashion-mlp");
    c->view.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&c->view));
    // The window's Delete action, as MainWindow installs it on the canvas.
    QAction del(QStringLiteral("Delete"));
    del.setShortcut(QKeySequence::Delete);
    del.setShortcutContext(Qt::WidgetWithChildrenShortcut);
    c->view.addAction(&del);
    QSignalSpy deleteAction(&del, &QAction::triggered);
    QSignalSpy arrays(&c->doc, &ProjectDocument::arrayRequested);

    EdgeItem* edge = c->scene()->edgeInto("dense1", "in");
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->edgeLabel(edge));
    QCOMPARE(arrays.count(), 1);
    QCOMPARE(arrays.last().at(0).toString(), QStringLiteral("flatten"));
    QVERIFY(edge->isSelected());
    QVERIFY(c->doc.selection().isEmpty());

    c->view.setFocus();
    QTest::keyClick(&c->view, Qt::Key_Delete);
    QCOMPARE(deleteAction.count(), 0);  // the canvas took the key
    QVERIFY(!edgeList(c->doc.project()).contains("flatten.out->dense1.in"));
    QVERIFY(!c->scene()->edgeInto("dense1", "in"));
    c->doc.undoStack()->undo();
    QVERIFY(c->scene()->edgeInto("dense1", "in"));

    // With a node selected the key belongs to the window's action again.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->title("relu"));
    QCOMPARE(c->doc.selection(), QStringList{"relu"});
    QTest::keyClick(&c->view, Qt::Key_Delete);
    QCOMPARE(deleteAction.count(), 1);

    // A parameter line links to its array.
    NodeItem* dense1 = c->node("dense1");
    QCOMPARE(dense1->spec().params[0].text, QStringLiteral("kernel (embed 784, mlp 256)"));
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->at(dense1, dense1->paramRect(0).center()));
    QCOMPARE(arrays.last().at(0).toString(), QStringLiteral("dense1/kernel"));
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->at(dense1, dense1->paramRect(1).center()));
    QCOMPARE(arrays.last().at(0).toString(), QStringLiteral("dense1/bias"));
  }

  void nodesShowTheirErrors() {
    auto c = openCanvas("fashion-mlp");
    QVERIFY(c->node("dense2")->spec().error.isEmpty());
    QCOMPARE(redPixels(c->scene(), c->node("dense2")), 0);
    QVERIFY(c->doc.edit("axes", [](project::Project& p) { edits::set_output_axes(p, "dense2", {"classes"}); }));
    NodeItem* dense2 = c->node("dense2");
    VERIFY_CONTAINS(dense2->spec().error, "output_axes: 1 names for an output of rank 2");
    VERIFY_CONTAINS(dense2->toolTip(), "output_axes");
    QVERIFY(redPixels(c->scene(), dense2) > 200);
    QCOMPARE(redPixels(c->scene(), c->node("dense1")), 0);

    // A missing input is an error of the node, from the graph's error list.
    c->doc.undoStack()->undo();
    QVERIFY(c->doc.edit("cut", [](project::Project& p) { edits::disconnect(p, "", {"relu", "in"}); }));
    VERIFY_CONTAINS(c->node("relu")->spec().error, "missing input: port 'in' is not connected");
    QVERIFY(redPixels(c->scene(), c->node("relu")) > 200);

    // Inside a block: the Repeat reports it, and the block's node shows it when expanded.
    auto r = openCanvas("dot-relu-dot");
    QVERIFY(r->doc.edit("axes", [](project::Project& p) { edits::set_output_axes(p, "blocks/W1", {"hidden"}); }));
    VERIFY_CONTAINS(r->node("blocks")->spec().error, "node 'blocks/W1'");
    QVERIFY(r->scene()->toggleExpanded("blocks"));
    VERIFY_CONTAINS(r->node("blocks/W1")->spec().error, "output_axes: 1 names for an output of rank 2");
    QVERIFY(redPixels(r->scene(), r->node("blocks/W1")) > 200);
    QVERIFY(r->node("blocks/relu")->spec().error.isEmpty());
  }

  void repeatExpandsAndCollapses() {
    auto c = openCanvas("dot-relu-dot");
    QSignalSpy arrays(&c->doc, &ProjectDocument::arrayRequested);
    NodeItem* blocks = c->node("blocks");
    VERIFY_CONTAINS(blocks->spec().type, "× 4");
    QVERIFY(blocks->spec().notes.contains("params stacked on layer (4)"));
    QCOMPARE(blocks->spec().params[0].text, QStringLiteral("W1/kernel (layer 4, embed 1024, hidden 1024)"));
    QCOMPARE(blocks->spec().params[0].array, QStringLiteral("blocks/W1/kernel"));
    QVERIFY(!c->node("blocks/W1"));

    // The button on the title expands it.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->at(blocks, blocks->toggleRect().center()));
    QVERIFY(edits::expanded(c->doc.project(), "blocks"));
    blocks = c->node("blocks");
    for (const QString& body : {"blocks/@in", "blocks/W1", "blocks/relu", "blocks/W2"}) {
      QVERIFY2(c->node(body), qPrintable(body));
      QVERIFY(blocks->sceneBoundingRect().contains(c->node(body)->sceneBoundingRect()));
    }
    QVERIFY(c->node("blocks/W2")->spec().blockOutput);
    QVERIFY(!c->node("blocks/W1")->spec().blockOutput);
    QCOMPARE(c->scene()->edgeInto("blocks/W1", "in")->from()->node()->path(), QStringLiteral("blocks/@in"));
    QCOMPARE(c->scene()->edgeInto("blocks/W1", "in")->label(), QStringLiteral("(batch 8, embed 1024)"));
    QCOMPARE(c->scene()->edgeInto("blocks/W2", "in")->label(), QStringLiteral("(batch 8, hidden 1024)"));

    // Block nodes are clickable like any other.
    NodeItem* w1 = c->node("blocks/W1");
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->at(w1, w1->paramRect(0).center()));
    QCOMPARE(arrays.last().at(0).toString(), QStringLiteral("blocks/W1/kernel"));
    QCOMPARE(c->doc.selection(), QStringList{"blocks/W1"});
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->edgeLabel(c->scene()->edgeInto("blocks/W1", "in")));
    QCOMPARE(arrays.last().at(0).toString(), QStringLiteral("x"));  // layer 0's carried input is x

    // Expanding only changes the view: no undo step, nothing to save.
    QCOMPARE(c->doc.undoStack()->count(), 0);
    QVERIFY(!c->doc.isModified());

    // A double-click on the title collapses it.
    QTest::mouseDClick(c->viewport(), Qt::LeftButton, {}, c->title("blocks"));
    QVERIFY(!edits::expanded(c->doc.project(), "blocks"));
    QVERIFY(!c->node("blocks/W1"));
    QTest::mouseDClick(c->viewport(), Qt::LeftButton, {}, c->title("blocks"));
    QVERIFY(c->node("blocks/W1"));
  }

  void blockNodesAreEditable() {
    auto c = openCanvas("dot-relu-dot");
    QVERIFY(c->scene()->toggleExpanded("blocks"));
    QSignalSpy refused(&c->doc, &ProjectDocument::editRefused);

    // Disconnect relu -> W2 inside the block and connect it again by dragging.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->edgeLabel(c->scene()->edgeInto("blocks/W2", "in")));
    c->view.setFocus();
    QTest::keyClick(&c->view, Qt::Key_Delete);
    QVERIFY(!edgeList(c->doc.project(), "blocks").contains("relu.out->W2.in"));
    drag(c->viewport(), c->port("blocks/relu", "out"), c->port("blocks/W2", "in"));
    QVERIFY(edgeList(c->doc.project(), "blocks").contains("relu.out->W2.in"));

    // A block's node cannot connect outside it.
    const std::string before = c->json();
    drag(c->viewport(), c->port("x", "out"), c->port("blocks/W1", "in"));
    VERIFY_CONTAINS(refused.last().at(0).toString(), "different graphs");
    QVERIFY(c->json() == before);

    // Dropping into the block's area adds the layer to the block.
    NodeItem* w2 = c->node("blocks/W2");
    const QPointF inside = w2->sceneBoundingRect().bottomLeft() + QPointF(100, 30);
    QVERIFY(c->scene()->frameAt(inside));
    QMimeData mime;
    mime.setData("application/x-shardlab-layer", "GELU");
    QVERIFY(dropOn(c->viewport(), c->view.mapFromScene(inside), &mime));
    QVERIFY(edits::find_node(c->doc.project(), "blocks/gelu"));
    QCOMPARE(c->doc.selection(), QStringList{"blocks/gelu"});
    QVERIFY(c->node("blocks")->sceneBoundingRect().contains(c->node("blocks/gelu")->sceneBoundingRect()));

    // An Input cannot go into a block: refused, shown on the canvas, nothing added.
    mime.setData("application/x-shardlab-layer", "Input");
    const std::string withGelu = c->json();
    dropOn(c->viewport(), c->view.mapFromScene(inside), &mime);
    QVERIFY(c->json() == withGelu);
    VERIFY_CONTAINS(c->view.notice()->text(), "cannot go inside a block");
  }

  void movingANodeIsOneUndoStep() {
    auto c = openCanvas("fashion-mlp");
    NodeItem* dense1 = c->node("dense1");
    const QPointF before = dense1->pos();
    const QPointF reluBefore = c->node("relu")->pos();
    QVERIFY(!edits::position(c->doc.project(), "dense1"));
    const int commands = c->doc.undoStack()->count();
    const QPoint from = c->title("dense1");
    drag(c->viewport(), from, from + QPoint(120, 90));
    QCOMPARE(c->doc.undoStack()->count(), commands + 1);
    const auto stored = edits::position(c->doc.project(), "dense1");
    QVERIFY(stored);
    const double z = c->view.zoom();
    QVERIFY(std::abs(stored->first - (before.x() + 120 / z)) < 3);
    QVERIFY(std::abs(stored->second - (before.y() + 90 / z)) < 3);
    QCOMPARE(c->node("dense1")->pos(), QPointF(stored->first, stored->second));
    // The nodes placed automatically stay where they were.
    QCOMPARE(c->node("relu")->pos(), reluBefore);

    // A second drag is a second step; undo takes them back one at a time.
    drag(c->viewport(), c->title("dense1"), c->title("dense1") + QPoint(0, 60));
    QCOMPARE(c->doc.undoStack()->count(), commands + 2);
    c->doc.undoStack()->undo();
    QCOMPARE(c->node("dense1")->pos(), QPointF(stored->first, stored->second));
    c->doc.undoStack()->undo();
    QCOMPARE(c->node("dense1")->pos(), before);
    QVERIFY(!edits::position(c->doc.project(), "dense1"));

    // Dragging a block's node moves it inside its frame, which grows to keep it.
    auto r = openCanvas("dot-relu-dot");
    QVERIFY(r->scene()->toggleExpanded("blocks"));
    const double frameWidth = r->node("blocks")->size().width();
    drag(r->viewport(), r->title("blocks/W2"), r->title("blocks/W2") + QPoint(150, 40));
    NodeItem* w2 = r->node("blocks/W2");
    QVERIFY(r->node("blocks")->size().width() > frameWidth);
    QVERIFY(r->node("blocks")->sceneBoundingRect().contains(w2->sceneBoundingRect()));
    const auto w2Stored = edits::position(r->doc.project(), "blocks/W2");
    QVERIFY(w2Stored);
    QCOMPARE(QPointF(w2Stored->first, w2Stored->second), w2->storedPos());
  }

  void rubberBandSelects() {
    auto c = openCanvas("fashion-mlp");
    const QRectF image = c->node("image")->sceneBoundingRect(), flatten = c->node("flatten")->sceneBoundingRect();
    const QRectF dense1 = c->node("dense1")->sceneBoundingRect();
    const QPoint from = c->view.mapFromScene(image.topLeft() - QPointF(20, 20));
    const QPoint to = c->view.mapFromScene(QPointF((flatten.right() + dense1.left()) / 2, std::max(image.bottom(), flatten.bottom()) + 20));
    drag(c->viewport(), from, to);
    QCOMPARE(c->doc.selection(), QStringList({"image", "flatten"}));
    QVERIFY(c->node("image")->isSelected() && c->node("flatten")->isSelected() && !c->node("dense1")->isSelected());
    // A click on empty space clears it.
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, from);
    QVERIFY(c->doc.selection().isEmpty());
  }

  void selectionFollowsTheDocument() {
    auto c = openCanvas("fashion-mlp");
    c->doc.setSelection({"relu"});
    QVERIFY(c->node("relu")->isSelected());
    QVERIFY(!c->node("dense1")->isSelected());
    QTest::mouseClick(c->viewport(), Qt::LeftButton, {}, c->title("dense2"));
    QCOMPARE(c->doc.selection(), QStringList{"dense2"});
    QVERIFY(!c->node("relu")->isSelected());
    c->view.selectAll();
    QCOMPARE(c->doc.selection(), QStringList({"image", "flatten", "dense1", "relu", "dense2"}));
    // A rebuild keeps the selection.
    QVERIFY(c->doc.edit("field", [](project::Project& p) { edits::set_field(p, "dense1", "features", 300); }));
    QVERIFY(c->node("dense2")->isSelected() && c->node("image")->isSelected());
  }

  void autoLayoutSeparatesNodes() {
    auto c = openCanvas("fashion-mlp");
    QVERIFY(c->doc.edit("pile", [](project::Project& p) {
      for (const char* n : {"image", "flatten", "dense1", "relu", "dense2"}) edits::set_position(p, n, 0, 0);
    }));
    QVERIFY(overlapping(topLevelRects(c->scene())));
    const int commands = c->doc.undoStack()->count();
    c->view.autoLayout();
    QCOMPARE(c->doc.undoStack()->count(), commands);  // a view change (arrangingIsNotAnUndoStep)
    QVERIFY(!overlapping(topLevelRects(c->scene())));
    for (EdgeItem* e : c->scene()->edges()) QVERIFY(e->from()->scenePos().x() < e->to()->scenePos().x());

    // Blocks too: expanded or not, every node gets a place.
    auto r = openCanvas("dot-relu-dot");
    QVERIFY(r->doc.edit("pile", [](project::Project& p) {
      edits::set_expanded(p, "blocks", true);
      for (const char* n : {"blocks/W1", "blocks/relu", "blocks/W2", "blocks/@in", "x", "blocks"}) edits::set_position(p, n, 0, 0);
    }));
    r->view.autoLayout();
    QList<QRectF> body;
    for (const char* n : {"blocks/@in", "blocks/W1", "blocks/relu", "blocks/W2"}) body << r->node(n)->sceneBoundingRect().adjusted(1, 1, -1, -1);
    QVERIFY(!overlapping(body));
    QVERIFY(!overlapping(topLevelRects(r->scene())));
  }

  void alignLinesNodesUp() {
    auto c = openCanvas("fashion-mlp");
    drag(c->viewport(), c->title("relu"), c->title("relu") + QPoint(-40, 150));
    c->doc.setSelection({"dense1", "relu", "dense2"});
    const int commands = c->doc.undoStack()->count();
    c->view.alignTop();
    QCOMPARE(c->doc.undoStack()->count(), commands + 1);
    QCOMPARE(c->node("relu")->scenePos().y(), c->node("dense1")->scenePos().y());
    QCOMPARE(c->node("dense2")->scenePos().y(), c->node("dense1")->scenePos().y());
    c->view.alignLeft();
    QCOMPARE(c->node("relu")->scenePos().x(), c->node("dense1")->scenePos().x());
    QCOMPARE(c->node("dense2")->scenePos().x(), c->node("dense1")->scenePos().x());
    c->doc.undoStack()->undo();
    QVERIFY(c->node("dense2")->scenePos().x() > c->node("dense1")->scenePos().x());
    // One node has nothing to line up with.
    c->doc.setSelection({"relu"});
    c->view.alignLeft();
    QCOMPARE(c->doc.undoStack()->index(), commands + 1);
    QVERIFY(c->doc.undoStack()->canRedo());
  }

  void zoomAndPan() {
    auto c = openCanvas("fashion-mlp");
    // Fit shows every node.
    const QRectF visible = c->view.mapToScene(c->viewport()->rect()).boundingRect();
    for (NodeItem* n : c->scene()->nodes()) QVERIFY(visible.contains(n->sceneBoundingRect()));
    const double z = c->view.zoom();
    c->view.zoomIn();
    QVERIFY(std::abs(c->view.zoom() - z * 1.25) < 1e-6);
    c->view.zoomOut();
    QVERIFY(std::abs(c->view.zoom() - z) < 1e-6);

    // Ctrl+wheel zooms around the pointer; a plain wheel scrolls.
    const QPoint under = c->title("dense1");
    const QPointF sceneUnder = c->view.mapToScene(under);
    QWheelEvent zoomWheel(under, c->viewport()->mapToGlobal(under), {}, {0, 240}, Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(c->viewport(), &zoomWheel);
    QVERIFY(c->view.zoom() > z * 1.2);
    QVERIFY((c->view.mapFromScene(sceneUnder) - under).manhattanLength() <= 2);
    const double zoomed = c->view.zoom();
    QWheelEvent scrollWheel(under, c->viewport()->mapToGlobal(under), {}, {0, -120}, Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(c->viewport(), &scrollWheel);
    QCOMPARE(c->view.zoom(), zoomed);

    // Middle-button drag pans.
    const QPoint mid = c->viewport()->rect().center();
    const int h = c->view.horizontalScrollBar()->value(), v = c->view.verticalScrollBar()->value();
    drag(c->viewport(), mid, mid - QPoint(100, 50), Qt::MiddleButton);
    QCOMPARE(c->view.horizontalScrollBar()->value(), h + 100);
    QCOMPARE(c->view.verticalScrollBar()->value(), v + 50);
    // So does Space + drag, even starting on a node, which then does not move.
    const QPointF densePos = c->node("dense1")->pos();
    c->view.setFocus();
    QTest::keyPress(&c->view, Qt::Key_Space);
    drag(c->viewport(), c->title("dense1"), c->title("dense1") + QPoint(60, 0));
    QTest::keyRelease(&c->view, Qt::Key_Space);
    QCOMPARE(c->view.horizontalScrollBar()->value(), h + 40);
    QCOMPARE(c->node("dense1")->pos(), densePos);

    // An edit redraws without losing the zoom or the scroll position.
    const QPointF centre = c->view.mapToScene(c->viewport()->rect().center());
    QVERIFY(c->doc.edit("field", [](project::Project& p) { edits::set_field(p, "dense1", "features", 64); }));
    QCOMPARE(c->view.zoom(), zoomed);
    QVERIFY((c->view.mapToScene(c->viewport()->rect().center()) - centre).manhattanLength() < 2);
    VERIFY_CONTAINS(c->scene()->edgeInto("relu", "in")->label(), "64");
  }

  void fittedViewRefitsOnResizeUntilZoomed() {
    auto c = openCanvas("fashion-mlp");
    c->view.resize(700, 400);
    const double small = c->view.zoom();
    const QRectF visible = c->view.mapToScene(c->viewport()->rect()).boundingRect();
    for (NodeItem* n : c->scene()->nodes()) QVERIFY(visible.contains(n->sceneBoundingRect()));
    c->view.resize(1500, 900);
    QVERIFY(c->view.zoom() > small);
    c->view.zoomIn();
    const double chosen = c->view.zoom();
    c->view.resize(700, 400);
    QCOMPARE(c->view.zoom(), chosen);  // the user's zoom stays
  }

  void layoutCopesWithCyclesAndCrowds() {
    // a -> b -> c, and d <-> e on a cycle (a broken file): everyone gets a distinct, free place.
    const QVector<layout::Node> nodes = {{"a", {100, 50}}, {"b", {100, 80}}, {"c", {100, 50}}, {"d", {100, 50}}, {"e", {100, 50}}};
    const QVector<layout::Edge> edges = {{"a", "b", 200}, {"b", "c", 0}, {"d", "e", 0}, {"e", "d", 0}};
    const QHash<QString, QPointF> at = layout::layered(nodes, edges);
    QCOMPARE(at.size(), 5);
    QList<QRectF> rects;
    for (const layout::Node& n : nodes) rects << QRectF(at.value(n.id), n.size);
    QVERIFY(!overlapping(rects));
    QVERIFY(at["a"].x() < at["b"].x() && at["b"].x() < at["c"].x());
    // The wide label on a -> b widens the room after a's layer.
    QVERIFY(at["b"].x() - (at["a"].x() + 100) >= 200 + 2 * layout::kLabelMargin);
    const QRectF free = layout::freeSpot(QRectF(at["a"], QSizeF(100, 50)), rects);
    for (const QRectF& r : rects) QVERIFY(!free.intersects(r));
  }

  void layoutFoldsALongChainIntoRows() {
    // 46 layers in a chain, Dense and ReLU alternating, each edge with a shape label.
    QVector<layout::Node> nodes;
    QVector<layout::Edge> edges;
    for (int i = 0; i < 46; ++i) {
      nodes.push_back({QString("n%1").arg(i), i % 2 ? QSizeF(120, 58) : QSizeF(170, 76)});
      if (i > 0) edges.push_back({nodes[i - 1].id, nodes[i].id, 140});
    }
    const QHash<QString, QPointF> at = layout::layered(nodes, edges);
    QCOMPARE(at.size(), 46);
    QList<QRectF> rects;
    QRectF box;
    for (const layout::Node& n : nodes) {
      rects << QRectF(at.value(n.id), n.size);
      box = box.united(rects.last());
    }
    QVERIFY(!overlapping(rects));
    const double aspect = box.width() / box.height();
    QVERIFY2(aspect > 0.4 && aspect < 4, qPrintable(QString("aspect %1").arg(aspect)));
    QVERIFY(box.width() <= layout::kFoldWidth);
    // Read like text: each layer right of the one before it, or first on the next row down.
    int rows = 1;
    for (int i = 1; i < 46; ++i) {
      const QRectF& prev = rects[i - 1];
      const QRectF& next = rects[i];
      if (next.top() == prev.top()) {
        QVERIFY(next.left() >= prev.right() + layout::kLayerGap);
      } else {
        ++rows;
        QCOMPARE(next.left(), 0.0);
        QVERIFY(next.top() >= prev.bottom() + layout::kRowGap);
      }
    }
    QVERIFY(rows >= 3);

    // A short chain stays on one row.
    const QHash<QString, QPointF> few = layout::layered(nodes.mid(0, 5), edges.mid(0, 4));
    for (int i = 0; i < 5; ++i) QCOMPARE(few.value(nodes[i].id).y(), 0.0);
  }

  void foldedResidualBlocksStayReadable() {
    // 12 residual blocks: dense -> relu -> add(a: relu, b: the block's input).
    QVector<layout::Node> nodes{{"x", {120, 58}}};
    QVector<layout::Edge> edges;
    QString input = "x";
    for (int b = 0; b < 12; ++b) {
      const QString d = QString("dense%1").arg(b), r = QString("relu%1").arg(b), a = QString("add%1").arg(b);
      nodes << layout::Node{d, {170, 76}} << layout::Node{r, {120, 58}} << layout::Node{a, {120, 80}};
      edges << layout::Edge{input, d, 140} << layout::Edge{d, r, 140} << layout::Edge{r, a, 140} << layout::Edge{input, a, 140};
      input = a;
    }
    const QHash<QString, QPointF> at = layout::layered(nodes, edges);
    QList<QRectF> rects;
    QHash<QString, QRectF> rectOf;
    QRectF box;
    for (const layout::Node& n : nodes) {
      rects << QRectF(at.value(n.id), n.size);
      rectOf.insert(n.id, rects.last());
      box = box.united(rects.last());
    }
    QVERIFY(!overlapping(rects));
    QVERIFY(box.width() / box.height() > 0.4 && box.width() / box.height() < 4);
    // Every edge, the skip connections included, goes right on its row or down to a later row.
    for (const layout::Edge& e : edges) {
      const QRectF from = rectOf.value(e.from), to = rectOf.value(e.to);
      QVERIFY2(to.left() > from.right() || to.top() >= from.bottom() + layout::kRowGap, qPrintable(e.from + " -> " + e.to));
    }
  }

  void aFoldedProjectDrawsItsTurnsBetweenRows() {
    auto c = openCanvas("deep-mlp-small");
    QVERIFY(c->doc.edit("forget positions", [](project::Project& p) {
      for (const graph::Node& n : p.graph.nodes) edits::set_position(p, n.name, 0, 0);
    }));
    c->view.autoLayout();
    QVERIFY(!overlapping(topLevelRects(c->scene())));
    int turns = 0;
    for (EdgeItem* e : c->scene()->edges()) {
      const QRectF from = e->from()->node()->sceneBoundingRect(), to = e->to()->node()->sceneBoundingRect();
      if (to.left() > from.right()) continue;
      ++turns;
      // The turn's label sits in the room between the rows, clear of every node.
      const QRectF label = e->mapRectToScene(e->labelRect());
      QVERIFY(label.top() > from.bottom() && label.bottom() < to.top());
      for (NodeItem* n : c->scene()->nodes()) QVERIFY(!label.intersects(n->sceneBoundingRect()));
    }
    QVERIFY(turns >= 1);
    QVERIFY(QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots"));
    c->view.zoomToFit();
    QVERIFY(c->view.grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/canvas-deep-mlp-small.png"));
  }

  void findNodeRevealsANodeInsideACollapsedRepeat() {
    auto c = openCanvas("dot-relu-dot");
    QVERIFY(!edits::expanded(c->doc.project(), "blocks"));
    QVERIFY(!c->node("blocks/W1") || !c->node("blocks/W1")->isVisible());
    auto* bar = c->view.findChild<FindNodeBar*>("findNodeBar");
    QVERIFY(bar && !bar->isVisible());
    c->view.findNode();
    QVERIFY(bar->isVisible());
    auto* field = bar->findChild<QLineEdit*>("findNodeField");
    auto* matches = bar->findChild<QListWidget*>("findNodeMatches");
    // Typing filters; a block's nodes are listed by path.
    QTest::keyClicks(field, "w");
    QStringList shown;
    for (int i = 0; i < matches->count(); ++i) shown << matches->item(i)->text();
    QCOMPARE(shown, QStringList({"blocks/W1", "blocks/W2"}));
    QTest::keyClicks(field, "1");
    QCOMPARE(matches->count(), 1);
    QCOMPARE(matches->currentItem()->text(), QString("blocks/W1"));

    const int commands = c->doc.undoStack()->count();
    QTest::keyClick(field, Qt::Key_Return);
    // The block opened (a view change, no undo step, as its button), the node is selected, drawn and centred.
    QVERIFY(edits::expanded(c->doc.project(), "blocks"));
    QCOMPARE(c->doc.undoStack()->count(), commands);
    QCOMPARE(c->doc.selection(), QStringList({"blocks/W1"}));
    NodeItem* w1 = c->node("blocks/W1");
    QVERIFY(w1 && w1->isVisible() && w1->isSelected());
    const QRectF visible = c->view.mapToScene(c->viewport()->rect()).boundingRect();
    QVERIFY(visible.contains(w1->sceneBoundingRect()));
    QVERIFY((c->view.mapFromScene(w1->sceneBoundingRect().center()) - c->viewport()->rect().center()).manhattanLength() <= 3);
    QVERIFY(c->view.zoom() >= 0.8);
    QVERIFY(!bar->isVisible());

    // Nothing matches: no list, and Enter does nothing.
    c->view.findNode();
    QVERIFY(field->selectedText() == "w1");
    QTest::keyClicks(field, "nosuchnode");
    QCOMPARE(matches->count(), 0);
    QTest::keyClick(field, Qt::Key_Return);
    QCOMPARE(c->doc.selection(), QStringList({"blocks/W1"}));
    QTest::keyClick(field, Qt::Key_Escape);
    QVERIFY(!bar->isVisible());
  }

  void findNodeRanksPathsBeforeNames() {
    project::Project p = project::load_project((projectFile("deep-mlp")).toStdString());
    // "layers" is the Repeat itself, then paths starting so, then names starting so, then the rest.
    QCOMPARE(FindNodeBar::matchingPaths(p, "layers"), QStringList({"layers", "layers_0", "layers/dense", "layers/relu"}));
    QCOMPARE(FindNodeBar::matchingPaths(p, "RELU"), QStringList({"relu_0", "layers/relu"}));
    QCOMPARE(FindNodeBar::matchingPaths(p, "").size(), 7);
  }

  // An empty canvas has nothing to navigate: no minimap, not even an empty frame.
  void anEmptyCanvasHasNoMinimap() {
    auto c = std::make_unique<Canvas>();
    c->doc.newBlank();
    c->view.resize(800, 600);
    c->view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c->view));
    for (int i = 0; i < 3; ++i) c->view.zoomIn();
    QApplication::processEvents();
    QVERIFY(c->scene()->nodes().isEmpty());
    QVERIFY(!c->view.findChild<Minimap*>("canvasMinimap")->isVisible());
  }

  void minimapShowsTheViewAndPansIt() {
    auto c = openCanvas("deep-mlp-small");
    Minimap* map = c->view.findChild<Minimap*>("canvasMinimap");
    QVERIFY(map);
    // Everything in view: nothing to navigate to.
    QVERIFY(!map->isVisible());
    for (int i = 0; i < 4; ++i) c->view.zoomIn();
    QVERIFY(map->isVisible());
    QVERIFY(c->viewport()->rect().contains(map->geometry()));
    // In a corner, and where a corner leaves every node in view uncovered, on none of them.
    const QRect port = c->viewport()->rect(), m = map->geometry();
    QVERIFY((m.left() < port.width() / 2) != (m.right() > port.width() / 2) && (m.top() < port.height() / 2) != (m.bottom() > port.height() / 2));
    auto covers = [&](const QRect& r) {
      int n = 0;
      for (NodeItem* node : c->scene()->nodes())
        if (node->isVisible() && c->view.mapFromScene(node->sceneBoundingRect()).boundingRect().intersects(r)) ++n;
      return n;
    };
    int fewest = covers(m);
    for (QPoint at : {QPoint(10, 10), QPoint(port.width() - m.width() - 10, 10), QPoint(10, port.height() - m.height() - 10),
                      QPoint(port.width() - m.width() - 10, port.height() - m.height() - 10)})
      fewest = std::min(fewest, covers(QRect(at, m.size())));
    QCOMPARE(covers(m), fewest);

    // A click centres the view on the point clicked: here, on the last layer.
    const QPointF target = c->node("output_layer")->sceneBoundingRect().center();
    QVERIFY(!c->view.mapToScene(c->viewport()->rect()).boundingRect().contains(target));
    const QPoint click = map->toMap(target).toPoint();
    QTest::mouseClick(map, Qt::LeftButton, {}, click);
    const QPoint centre = c->viewport()->rect().center();
    QVERIFY((c->view.mapFromScene(map->toScene(click)) - centre).manhattanLength() <= 3);
    QVERIFY(c->view.mapToScene(c->viewport()->rect()).boundingRect().contains(target));

    // Dragging follows the pointer; the view keeps its zoom.
    const double zoom = c->view.zoom();
    const QPoint to = map->toMap(c->node("x")->sceneBoundingRect().center()).toPoint();
    drag(map, click, to);
    QVERIFY((c->view.mapFromScene(map->toScene(to)) - centre).manhattanLength() <= 3);
    QVERIFY(c->view.mapToScene(c->viewport()->rect()).boundingRect().contains(c->node("x")->sceneBoundingRect().center()));
    QCOMPARE(c->view.zoom(), zoom);

    // Fitting the view again hides it.
    c->view.zoomToFit();
    QVERIFY(!map->isVisible());
  }

  // A view that shows part of a graph, its last node in the bottom-right corner: the minimap
  // takes a corner no node is under rather than covering that node.
  void theMinimapTakesACornerNoNodeIsUnder() {
    auto c = openCanvas("fashion-mlp");
    Minimap* map = c->view.findChild<Minimap*>("canvasMinimap");
    c->view.resize(420, 300);
    QApplication::processEvents();
    for (int i = 0; i < 3; ++i) c->view.zoomIn();
    const QRectF last = c->node("dense2")->sceneBoundingRect();
    const QPoint corner(c->viewport()->width() - 40, c->viewport()->height() - 30);
    c->view.centerOn(c->view.mapToScene(c->view.mapFromScene(last.center()) - corner + c->viewport()->rect().center()));
    QApplication::processEvents();
    QVERIFY(map->isVisible());
    const QRect under = c->view.mapFromScene(last).boundingRect();
    QVERIFY2(under.intersects(QRect(c->viewport()->width() - map->width() - 10, c->viewport()->height() - map->height() - 10,
                                    map->width(), map->height())),
             "the last layer should be where a bottom-right minimap would cover it");
    for (NodeItem* n : c->scene()->nodes())
      QVERIFY2(!map->geometry().intersects(c->view.mapFromScene(n->sceneBoundingRect()).boundingRect()),
               qPrintable("the minimap covers " + n->path()));
  }

  void screenshots() {
    const QString dir = QStringLiteral(SHARDLAB_BINARY_DIR "/ui-screenshots");
    QVERIFY(QDir().mkpath(dir));
    auto c = openCanvas("dot-relu-dot");
    QVERIFY(c->scene()->toggleExpanded("blocks"));
    c->doc.setSelection({"blocks/W1"});
    c->view.zoomToFit();
    QVERIFY(c->view.grab().save(dir + "/canvas-dot-relu-dot.png"));

    // The dark theme: text stays readable because colours come from the palette.
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(45, 45, 48));
    dark.setColor(QPalette::Base, QColor(30, 30, 32));
    dark.setColor(QPalette::Text, QColor(220, 220, 220));
    dark.setColor(QPalette::WindowText, QColor(220, 220, 220));
    auto f = openCanvas("fashion-mlp");
    QVERIFY(f->doc.edit("axes", [](project::Project& p) { edits::set_output_axes(p, "dense2", {"classes"}); }));
    f->view.setPalette(dark);
    QCOMPARE(f->scene()->palette().color(QPalette::Text), QColor(220, 220, 220));
    QVERIFY(f->view.grab().save(dir + "/canvas-fashion-mlp-dark.png"));

    // Zoomed into a folded chain: the minimap, and Find Node listing what matches "relu_".
    auto m = openCanvas("deep-mlp-small");
    for (int i = 0; i < 3; ++i) m->view.zoomIn();
    m->view.findNode();
    QTest::keyClicks(m->view.findBar()->field(), "relu_");
    QVERIFY(m->view.grab().save(dir + "/canvas-deep-mlp-small-find.png"));
  }
};

QTEST_MAIN(CanvasTest)
#include "test_canvas.moc"
