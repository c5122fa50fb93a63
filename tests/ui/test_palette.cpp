// The layer palette as a person uses it: searching by typing, reading summaries, double-clicking or
// pressing Enter to add a layer, and the drag data it hands to the canvas.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTreeView>
#include <QUndoStack>
#include <QtTest>

#include "tests/engine/test_support.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/palette/layer_model.h"
#include "ui/palette/layer_palette.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

QString projectFile(const QString& name) { return QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/") + name + ".shardlab.json"; }

// The layer types the palette shows right now, in order.
QStringList visibleLayers(const LayerPalette& p) {
  QStringList out;
  QAbstractItemModel* m = p.proxy();
  for (int g = 0; g < m->rowCount(); ++g) {
    const QModelIndex group = m->index(g, 0);
    for (int r = 0; r < m->rowCount(group); ++r) out << m->index(r, 0, group).data(LayerModel::TypeRole).toString();
  }
  return out;
}

QModelIndex visibleIndex(const LayerPalette& p, const QString& type) {
  return p.proxy()->mapFromSource(p.model()->indexOf(type));
}

}  // namespace

class PaletteTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void listsEveryLayerByCategory() {
    ProjectDocument doc;
    LayerPalette palette(&doc);
    QAbstractItemModelTester modelTester(palette.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester proxyTester(palette.proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const std::vector<graph::LayerInfo> catalog = graph::layer_catalog();
    QStringList expected;
    for (const graph::LayerInfo& info : catalog) expected << QString::fromStdString(info.type);
    QStringList shown = visibleLayers(palette);
    QCOMPARE(shown.size(), expected.size());
    std::sort(shown.begin(), shown.end());
    std::sort(expected.begin(), expected.end());
    QCOMPARE(shown, expected);
    for (const graph::LayerInfo& info : catalog) {
      const QModelIndex i = palette.model()->indexOf(QString::fromStdString(info.type));
      QVERIFY(i.isValid());
      QCOMPARE(i.parent().data().toString(), QString::fromStdString(info.category));
      VERIFY_CONTAINS(i.data(Qt::ToolTipRole).toString(), QString::fromStdString(info.summary));
      QVERIFY(i.flags() & Qt::ItemIsDragEnabled);
      QVERIFY(!(i.parent().flags() & Qt::ItemIsDragEnabled));
    }
    VERIFY_CONTAINS(palette.model()->indexOf("Add").data(Qt::ToolTipRole).toString(), "inputs: a, b");
    VERIFY_CONTAINS(palette.model()->indexOf("Input").data(Qt::ToolTipRole).toString(), "no inputs");
  }

  void typingFilters() {
    ProjectDocument doc;
    LayerPalette palette(&doc);
    QAbstractItemModelTester proxyTester(palette.proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    palette.show();
    QTest::keyClicks(palette.filterEdit(), "norm");
    // (the ready-made transformer block's summary names its LayerNorms)
    QCOMPARE(visibleLayers(palette), QStringList({"LayerNorm", "RMSNorm", "GroupNorm", "TransformerBlock"}));
    QCOMPARE(palette.view()->currentIndex().data(LayerModel::TypeRole).toString(), QStringLiteral("LayerNorm"));
    palette.filterEdit()->clear();
    QCOMPARE(visibleLayers(palette).size(), int(graph::layer_catalog().size()));
    // A category name keeps its whole group; a summary word finds its layer.
    // "activation" names a group and is a word of Dropout's summary.
    QTest::keyClicks(palette.filterEdit(), "activation");
    QCOMPARE(visibleLayers(palette), QStringList({"ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax", "Dropout"}));
    palette.filterEdit()->clear();
    QTest::keyClicks(palette.filterEdit(), "residual");
    QCOMPARE(visibleLayers(palette), QStringList({"Add", "TransformerBlock"}));
    palette.filterEdit()->clear();
    QTest::keyClicks(palette.filterEdit(), "zzz");
    QVERIFY(visibleLayers(palette).isEmpty());
  }

  void dragCarriesTheLayerType() {
    ProjectDocument doc;
    LayerPalette palette(&doc);
    QVERIFY(palette.proxy()->mimeTypes().contains("application/x-shardlab-layer"));
    std::unique_ptr<QMimeData> mime(palette.proxy()->mimeData({visibleIndex(palette, "Dense")}));
    QVERIFY(mime);
    QCOMPARE(QString::fromUtf8(mime->data("application/x-shardlab-layer")), QStringLiteral("Dense"));
    // Groups are not layers.
    QVERIFY(!palette.proxy()->mimeData({visibleIndex(palette, "Dense").parent()}));
  }

  void doubleClickAndEnterAddBesideTheGraph() {
    ProjectDocument doc;
    doc.open(projectFile("fashion-mlp"));
    GraphView canvas(&doc);  // to see where the canvas draws everything
    LayerPalette palette(&doc);
    palette.resize(260, 500);
    palette.show();
    QVERIFY(QTest::qWaitForWindowExposed(&palette));

    const QModelIndex dense = visibleIndex(palette, "Dense");
    const QPoint at = palette.view()->visualRect(dense).center();
    QTest::mouseClick(palette.view()->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(palette.view()->viewport(), Qt::LeftButton, {}, at);
    QVERIFY(edits::find_node(doc.project(), "dense"));
    QCOMPARE(doc.selection(), QStringList{"dense"});
    QCOMPARE(doc.undoStack()->count(), 1);
    // Right of every node the canvas shows, covering none.
    const QRectF added = canvas.graphScene()->node("dense")->sceneBoundingRect();
    for (NodeItem* n : canvas.graphScene()->nodes())
      if (n->path() != "dense") QVERIFY2(n->sceneBoundingRect().right() < added.left(), qPrintable(n->path()));

    // Enter on the current row adds another, again right of everything.
    palette.view()->setFocus();
    palette.view()->setCurrentIndex(visibleIndex(palette, "ReLU"));
    QTest::keyClick(palette.view(), Qt::Key_Return);
    QVERIFY(edits::find_node(doc.project(), "relu2"));
    QCOMPARE(doc.selection(), QStringList{"relu2"});
    QVERIFY(canvas.graphScene()->node("relu2")->sceneBoundingRect().left() > added.right());

    // Search, then Enter in the search field adds the first match.
    QTest::keyClicks(palette.filterEdit(), "gelu");
    QTest::keyClick(palette.filterEdit(), Qt::Key_Return);
    QVERIFY(edits::find_node(doc.project(), "gelu"));
    QCOMPARE(doc.undoStack()->count(), 3);
    doc.undoStack()->undo();
    QVERIFY(!edits::find_node(doc.project(), "gelu"));

    // A double-click on a group adds nothing.
    palette.filterEdit()->clear();
    const QPoint group = palette.view()->visualRect(visibleIndex(palette, "Dense").parent()).center();
    QTest::mouseClick(palette.view()->viewport(), Qt::LeftButton, {}, group);
    QTest::mouseDClick(palette.view()->viewport(), Qt::LeftButton, {}, group);
    QCOMPARE(doc.undoStack()->index(), 2);
    QVERIFY(doc.undoStack()->canRedo());
  }

  void intoAnEmptyGraph() {
    ProjectDocument doc;
    doc.open(projectFile("fashion-mlp"));
    QVERIFY(doc.edit("clear", [](project::Project& p) { edits::remove_nodes(p, {"image", "flatten", "dense1", "relu", "dense2"}); }));
    LayerPalette palette(&doc);
    QCOMPARE(palette.addLayer("Input"), QStringLiteral("input"));
    const auto xy = edits::position(doc.project(), "input");
    QVERIFY(xy && xy->first == 0 && xy->second == 0);
    QCOMPARE(palette.addLayer("Dense"), QStringLiteral("dense"));
    QVERIFY(edits::position(doc.project(), "dense")->first > 0);
    // An unknown type is refused with a reason, and nothing changes.
    QSignalSpy refused(&doc, &ProjectDocument::editRefused);
    QVERIFY(palette.addLayer("Conv9").isEmpty());
    QCOMPARE(refused.count(), 1);
    VERIFY_CONTAINS(refused.last().at(0).toString(), "unknown layer type 'Conv9'");
  }

  void screenshot() {
    const QString dir = QStringLiteral(SHARDLAB_BINARY_DIR "/ui-screenshots");
    QVERIFY(QDir().mkpath(dir));
    ProjectDocument doc;
    LayerPalette palette(&doc);
    palette.resize(240, 420);
    palette.show();
    QVERIFY(QTest::qWaitForWindowExposed(&palette));
    palette.view()->setCurrentIndex(visibleIndex(palette, "Dense"));
    VERIFY_CONTAINS(palette.findChild<QLabel*>("layerHelp")->text(), "flax.linen.Dense");
    QApplication::processEvents();  // the layout settles around the new summary
    QVERIFY(palette.grab().save(dir + "/palette.png"));
  }
};

QTEST_MAIN(PaletteTest)
#include "test_palette.moc"
