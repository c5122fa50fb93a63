// The Sharding tab as a user meets it: the array tree and its filter, the painted grid of blocks
// checked against the engine's own block owners, the dimension pickers, redraws after edits and
// undo, the per-device reverse view and its memory total (per pipeline stage too), tooltips,
// colours in light and dark palettes, and a one-device project.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QHelpEvent>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolTip>
#include <QTreeView>
#include <QClipboard>
#include <QGuiApplication>
#include <QtTest>
#include <map>
#include <memory>
#include <set>

#include "tests/engine/test_support.h"
#include "tests/ui/context_menu.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/sharding/array_tree_model.h"
#include "ui/sharding/device_blocks_model.h"
#include "ui/sharding/device_picker.h"
#include "ui/sharding/device_view.h"
#include "ui/sharding/sharding_format.h"
#include "ui/sharding/sharding_grid.h"
#include "ui/sharding/sharding_tab.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

QString projectPath(const char* name) { return QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/") + name; }

// What the grid should hold, straight from the engine: for every (row block, column block) of the
// two drawn dimensions, "CPU " and the devices of every block that falls there.
std::map<std::pair<int64_t, int64_t>, QString> engineCells(const sharding::ArraySharding& a, const sharding::Mesh& mesh,
                                                           int rd, int cd) {
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> devices;
  for (const sharding::BlockOwners& o : sharding::block_owners(a.spec, a.shape, mesh))
    devices[{rd >= 0 ? o.block.index[size_t(rd)] : 0, cd >= 0 ? o.block.index[size_t(cd)] : 0}].insert(
        o.devices.begin(), o.devices.end());
  std::map<std::pair<int64_t, int64_t>, QString> out;
  for (const auto& [rc, devs] : devices) {
    QStringList ids;
    for (int64_t d : devs) ids << QString::number(d);
    out[rc] = "CPU " + ids.join(',');
  }
  return out;
}

// Every array name reachable in a tree model, walking it as a view would.
QStringList treeArrays(const QAbstractItemModel* m, const QModelIndex& parent = {}) {
  QStringList out;
  for (int r = 0; r < m->rowCount(parent); ++r) {
    const QModelIndex i = m->index(r, 0, parent);
    const QString name = i.data(ArrayTreeModel::ArrayNameRole).toString();
    if (!name.isEmpty()) out << name;
    out << treeArrays(m, i);
  }
  return out;
}

QPalette darkPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(45, 45, 48));
  p.setColor(QPalette::WindowText, QColor(220, 220, 220));
  p.setColor(QPalette::Base, QColor(30, 30, 32));
  p.setColor(QPalette::Text, QColor(220, 220, 220));
  p.setColor(QPalette::AlternateBase, QColor(45, 45, 48));
  p.setColor(QPalette::Button, QColor(45, 45, 48));
  p.setColor(QPalette::ButtonText, QColor(220, 220, 220));
  p.setColor(QPalette::Highlight, QColor(42, 130, 218));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(140, 140, 140));
  return p;
}

}  // namespace

class TestShardingView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void init();
  void cleanup();

  void treeListsEveryArrayByKind();
  void clickingARowDrawsIt();
  void rightClickingARowOffersItsCommands();
  void filterNarrowsTheTreeAndARequestClearsIt();
  void requestedArrayIsDrawnAsTheEngineSplitsIt();
  void combosPickTheDrawnDimensions();
  void twoSplitDimensionsGiveAFullGrid();
  void editingTheRulesRedrawsAndUndoRestores();
  void indivisibleDimensionShowsTheErrorInstead();
  void reverseViewListsEveryBlockOfDevice3();
  void pickerCellAndRowClicksLinkTheViews();
  void hoverShowsShardShapeAndBytes();
  void coloursAreStableDistinctAndReadable();
  void oneDeviceProjectDrawsOneCell();
  void unknownArrayAndBrokenMeshAreExplained();
  void processesNameWhoHoldsEachBlock();
  void pipelineStagesShowTheirLayersArenaAndBubble();
  void screenshot();

 private:
  const sharding::ArraySharding& array(const char* name) {
    const sharding::ArraySharding* a = doc_->design().sharding.find(name);
    if (!a) qFatal("no array %s in the design", name);
    return *a;
  }

  std::unique_ptr<ProjectDocument> doc_;
  std::unique_ptr<ShardingTab> tab_;
  std::vector<std::unique_ptr<QAbstractItemModelTester>> testers_;
};

void TestShardingView::init() {
  doc_ = std::make_unique<ProjectDocument>();
  tab_ = std::make_unique<ShardingTab>(doc_.get());
  // Testers watch every model from before the first project opens, so its resets are checked too.
  auto watch = [this](QAbstractItemModel* m) {
    testers_.push_back(
        std::make_unique<QAbstractItemModelTester>(m, QAbstractItemModelTester::FailureReportingMode::QtTest));
  };
  watch(tab_->arrayModel());
  watch(tab_->tree()->model());
  watch(tab_->deviceView()->blocksModel());
  watch(tab_->deviceView()->table()->model());
  tab_->resize(1300, 820);
  tab_->show();
  QVERIFY(QTest::qWaitForWindowExposed(tab_.get()));
  doc_->open(projectPath("dot-relu-dot.shardlab.json"));
  QVERIFY(doc_->design().sharding_ok);
}

void TestShardingView::cleanup() {
  testers_.clear();
  tab_.reset();
  doc_.reset();
}

void TestShardingView::treeListsEveryArrayByKind() {
  const auto& arrays = doc_->design().sharding.arrays;
  ArrayTreeModel* m = tab_->arrayModel();
  QCOMPARE(m->arrayCount(), int(arrays.size()));
  QCOMPARE(treeArrays(m).size(), int(arrays.size()));
  // Kind headings in order, each with its count.
  QStringList headings;
  for (int r = 0; r < m->rowCount(); ++r) headings << m->index(r, 0).data().toString();
  QCOMPARE(headings,
           QStringList({"Parameters (2)", "Optimizer state (4)", "Gradients (2)", "Activations (4)", "Inputs (1)"}));
  for (const sharding::ArraySharding& a : arrays) {
    const QModelIndex i = m->indexOfArray(QString::fromStdString(a.name));
    QVERIFY2(i.isValid(), a.name.c_str());
    QModelIndex top = i;
    while (top.parent().isValid()) top = top.parent();
    VERIFY_CONTAINS(top.data().toString(), shardfmt::kindGroupName(a.kind));
    QCOMPARE(m->indexOfArray(QString::fromStdString(a.name), ArrayTreeModel::ShapeColumn).data().toString(),
             QString::fromStdString(shape_str(a.shape)));
    // The column holds the spec's arguments: "(None, None, 'model')", and a gradient's pending
    // sum: "(None, None, 'model') +sum(data)".
    QCOMPARE(
        "PartitionSpec" + m->indexOfArray(QString::fromStdString(a.name), ArrayTreeModel::SpecColumn).data().toString(),
        QString::fromStdString(a.spec_text()));
    if (a.kind == sharding::ArrayKind::Gradient && !a.pending_sum.empty())
      VERIFY_CONTAINS(m->indexOfArray(QString::fromStdString(a.name), ArrayTreeModel::SpecColumn).data().toString(), "+sum(");
  }
  // Parameters sit under their node's path, the gradient and Adam state beside them.
  const QModelIndex kernel = m->indexOfArray("blocks/W1/kernel");
  QCOMPARE(kernel.data().toString(), QString("kernel"));
  QCOMPARE(kernel.parent().data().toString(), QString("blocks/W1"));
  QCOMPARE(m->indexOfArray("blocks/W1/kernel/mu").data().toString(), QString("kernel/mu"));
  QCOMPARE(m->indexOfArray("blocks/W1/kernel/mu").parent().data().toString(), QString("blocks/W1"));
  QCOMPARE(m->indexOfArray("d_blocks/W2/kernel").parent().data().toString(), QString("blocks/W2"));
  QCOMPARE(m->indexOfArray("blocks/relu").data().toString(), QString("blocks/relu"));
  // Groups cannot be drawn; arrays can.
  QVERIFY(!(m->flags(kernel.parent()) & Qt::ItemIsSelectable));
  QVERIFY(m->flags(kernel) & Qt::ItemIsSelectable);
}

void TestShardingView::clickingARowDrawsIt() {
  auto* proxy = qobject_cast<QSortFilterProxyModel*>(tab_->tree()->model());
  QVERIFY(proxy);
  const QModelIndex row = proxy->mapFromSource(tab_->arrayModel()->indexOfArray("blocks/W2/kernel"));
  QVERIFY(row.isValid());
  tab_->tree()->scrollTo(row);
  QTest::mouseClick(tab_->tree()->viewport(), Qt::LeftButton, {}, tab_->tree()->visualRect(row).center());
  QCOMPARE(tab_->currentArray(), QString("blocks/W2/kernel"));
  QCOMPARE(tab_->grid()->array().name, std::string("blocks/W2/kernel"));
  VERIFY_CONTAINS(tab_->headingText(), "PartitionSpec(None, 'model', None)");
  // Its split dimension (1, hidden) and the trailing one are drawn.
  QCOMPARE(tab_->grid()->rowDim(), 1);
  QCOMPARE(tab_->grid()->colDim(), 2);
  QCOMPARE(tab_->grid()->rowCount(), 4);
  QCOMPARE(tab_->grid()->columnCount(), 1);
}

// A right-click on an array's row: copy its PartitionSpec as `shard` prints it, select its node.
void TestShardingView::rightClickingARowOffersItsCommands() {
  auto* proxy = qobject_cast<QSortFilterProxyModel*>(tab_->tree()->model());
  const QModelIndex row = proxy->mapFromSource(tab_->arrayModel()->indexOfArray("d_blocks/W1/kernel"));
  QVERIFY(row.isValid());
  tab_->tree()->scrollTo(row);
  const QPoint at = tab_->tree()->visualRect(row).center();
  QStringList shown;
  shardlab::testing::contextMenu(tab_->tree()->viewport(), at, "Copy PartitionSpec", &shown);
  QCOMPARE(shown, (QStringList{"Show in Sharding", "Select Node 'blocks'", "Copy Name", "Copy PartitionSpec"}));
  QCOMPARE(QGuiApplication::clipboard()->text(), QString("PartitionSpec(None, None, 'model') +sum(data)"));
  shown.clear();
  shardlab::testing::contextMenu(tab_->tree()->viewport(), at, "Select Node 'blocks'", &shown);
  QCOMPARE(doc_->selection(), QStringList{"blocks"});
  // A group row has no menu.
  shown.clear();
  const QModelIndex group = row.parent();
  QVERIFY(group.isValid());
  tab_->tree()->scrollTo(group);
  bool opened = false;
  QTimer::singleShot(200, [&opened] {
    if (auto* m = qobject_cast<QMenu*>(QApplication::activePopupWidget())) opened = true, m->close();
  });
  QContextMenuEvent onGroup(QContextMenuEvent::Mouse, tab_->tree()->visualRect(group).center(),
                            tab_->tree()->viewport()->mapToGlobal(tab_->tree()->visualRect(group).center()));
  QApplication::sendEvent(tab_->tree()->viewport(), &onGroup);
  QTest::qWait(300);
  QVERIFY(!opened);
}

void TestShardingView::filterNarrowsTheTreeAndARequestClearsIt() {
  doc_->requestArray("blocks/W1/kernel");
  QTest::keyClicks(tab_->filterEdit(), "w2");
  const QStringList shown = treeArrays(tab_->tree()->model());
  int expected = 0;
  for (const auto& a : doc_->design().sharding.arrays)
    expected += QString::fromStdString(a.name).contains("W2") ? 1 : 0;
  QCOMPARE(shown.size(), expected);
  for (const QString& n : shown) VERIFY_CONTAINS(n, "W2");
  // The canvas asks for an array the filter hides: the filter gives way.
  doc_->requestArray("blocks/W1/kernel/nu");
  QCOMPARE(tab_->filterEdit()->text(), QString());
  QCOMPARE(treeArrays(tab_->tree()->model()).size(), int(doc_->design().sharding.arrays.size()));
  QCOMPARE(tab_->tree()->currentIndex().data(ArrayTreeModel::ArrayNameRole).toString(), QString("blocks/W1/kernel/nu"));
  QCOMPARE(tab_->currentArray(), QString("blocks/W1/kernel/nu"));
}

void TestShardingView::requestedArrayIsDrawnAsTheEngineSplitsIt() {
  doc_->requestArray("blocks/W1/kernel");
  QCOMPARE(tab_->currentArray(), QString("blocks/W1/kernel"));
  QCOMPARE(tab_->tree()->currentIndex().data(ArrayTreeModel::ArrayNameRole).toString(), QString("blocks/W1/kernel"));
  const sharding::ArraySharding& a = array("blocks/W1/kernel");
  const sharding::Mesh& mesh = doc_->design().sharding.mesh;
  QCOMPARE(a.shape, Shape({4, 1024, 1024}));
  ShardingGrid* g = tab_->grid();
  // The split dimension (hidden) and the other trailing one are drawn by default.
  QCOMPARE(g->rowDim(), 1);
  QCOMPARE(g->colDim(), 2);
  const auto expected = engineCells(a, mesh, 1, 2);
  QCOMPARE(g->cells().size(), expected.size());
  QCOMPARE(g->rowCount() * g->columnCount(), int64_t(expected.size()));
  for (const ShardingGrid::Cell& c : g->cells()) QCOMPARE(c.label, expected.at({c.row, c.col}));
  QCOMPARE(g->cellLabel(0, 0), QString("CPU 0,4"));
  QCOMPARE(g->cellLabel(0, 3), QString("CPU 3,7"));
  // The same labels the engine's text picture prints.
  const QString text = QString::fromStdString(sharding::render_sharding(a.spec, a.shape, mesh, 1, 2));
  for (const ShardingGrid::Cell& c : g->cells()) VERIFY_CONTAINS(text, c.label);
  // Edges name the mesh axes, the legend everything else.
  VERIFY_CONTAINS(g->columnCaption(), "model →");
  VERIFY_CONTAINS(g->columnCaption(), "dim 2 (hidden, 1024)");
  VERIFY_CONTAINS(g->rowCaption(), "not split ↓");
  const QString heading = tab_->headingText();
  for (const char* part :
       {"blocks/W1/kernel", "(4, 1024, 1024)", "(layer, embed, hidden)", "PartitionSpec(None, None, 'model')",
        "shard shape (4, 1024, 256)", "4.00 MiB per device", "data=2,model=4"})
    VERIFY_CONTAINS(heading, part);
  VERIFY_CONTAINS(tab_->notesText(), "dim 0 (layer, 4): not split, each cell holds all of it");
  // Cells split the grid evenly: equal blocks, equal widths.
  const int w0 = g->cellRect(0).width();
  for (int i = 1; i < int(g->cells().size()); ++i) QVERIFY(std::abs(g->cellRect(i).width() - w0) <= 1);
  QVERIFY(!g->cellRect(0).isEmpty());
}

void TestShardingView::combosPickTheDrawnDimensions() {
  doc_->requestArray("blocks/W1/kernel");
  QComboBox* rows = tab_->rowDimCombo();
  QComboBox* cols = tab_->columnDimCombo();
  QVERIFY(rows->isVisible());
  QCOMPARE(rows->count(), 3);
  QCOMPARE(rows->currentIndex(), 1);
  QCOMPARE(cols->currentIndex(), 2);
  const sharding::ArraySharding& a = array("blocks/W1/kernel");
  const sharding::Mesh& mesh = doc_->design().sharding.mesh;

  rows->setFocus();
  QTest::keyClick(rows, Qt::Key_Up);  // rows: dim 0 (layer)
  QCOMPARE(tab_->grid()->rowDim(), 0);
  QCOMPARE(tab_->grid()->colDim(), 2);
  auto expected = engineCells(a, mesh, 0, 2);
  QCOMPARE(tab_->grid()->cells().size(), expected.size());
  for (const ShardingGrid::Cell& c : tab_->grid()->cells()) QCOMPARE(c.label, expected.at({c.row, c.col}));
  VERIFY_CONTAINS(tab_->notesText(), "dim 1 (embed, 1024)");
  VERIFY_LACKS(tab_->notesText(), "dim 0");

  // Columns onto the rows' dimension: the two swap.
  cols->setCurrentIndex(0);
  QCOMPARE(tab_->grid()->rowDim(), 2);
  QCOMPARE(tab_->grid()->colDim(), 0);
  QCOMPARE(rows->currentIndex(), 2);
  QCOMPARE(tab_->grid()->rowCount(), 4);
  QCOMPARE(tab_->grid()->columnCount(), 1);
  VERIFY_CONTAINS(tab_->grid()->rowCaption(), "model ↓");
  expected = engineCells(a, mesh, 2, 0);
  for (const ShardingGrid::Cell& c : tab_->grid()->cells()) QCOMPARE(c.label, expected.at({c.row, c.col}));
  // The choice survives a redraw of the same array after an unrelated edit.
  QVERIFY(doc_->edit("rename", [](project::Project& p) { p.description = "changed"; }));
  QCOMPARE(tab_->grid()->rowDim(), 2);
  QCOMPARE(tab_->grid()->colDim(), 0);
}

void TestShardingView::twoSplitDimensionsGiveAFullGrid() {
  doc_->requestArray("blocks/W1");  // the activation (batch, hidden) -> ('data', 'model')
  ShardingGrid* g = tab_->grid();
  QCOMPARE(g->rowCount(), 2);
  QCOMPARE(g->columnCount(), 4);
  QCOMPARE(g->cells().size(), size_t(8));
  const auto expected = engineCells(array("blocks/W1"), doc_->design().sharding.mesh, 0, 1);
  for (const ShardingGrid::Cell& c : g->cells()) {
    QCOMPARE(c.label, expected.at({c.row, c.col}));
    QCOMPARE(c.label, QString("CPU %1").arg(c.row * 4 + c.col));  // row-major devices over (data, model)
  }
  VERIFY_CONTAINS(g->rowCaption(), "data ↓");
  VERIFY_CONTAINS(g->columnCaption(), "model →");
  QVERIFY(tab_->notesText().isEmpty());
  // A wide (8, 1024) array is drawn wider than tall.
  const QRect all = g->cellRect(0).united(g->cellRect(7));
  QVERIFY2(all.width() > all.height(), qPrintable(QString("%1x%2").arg(all.width()).arg(all.height())));
}

void TestShardingView::editingTheRulesRedrawsAndUndoRestores() {
  doc_->requestArray("blocks/W1/kernel");
  QCOMPARE(tab_->grid()->cells().size(), size_t(4));
  QSignalSpy changed(doc_.get(), &ProjectDocument::changed);
  QVERIFY(doc_->edit("hidden -> none", [](project::Project& p) {
    for (auto& rule : p.logical_axis_rules)
      if (rule[0] == "hidden") rule[1] = nullptr;
  }));
  QCOMPARE(changed.count(), 1);
  const sharding::ArraySharding& a = array("blocks/W1/kernel");
  QVERIFY(a.spec.replicated());
  // Same array, kept selected, drawn anew: one cell held by all eight devices.
  QCOMPARE(tab_->currentArray(), QString("blocks/W1/kernel"));
  QCOMPARE(tab_->tree()->currentIndex().data(ArrayTreeModel::ArrayNameRole).toString(), QString("blocks/W1/kernel"));
  VERIFY_CONTAINS(tab_->headingText(), QString::fromStdString(a.spec.str()));
  VERIFY_LACKS(tab_->headingText(), "'model'");
  QCOMPARE(tab_->grid()->cells().size(), size_t(1));
  QCOMPARE(tab_->grid()->cellLabel(0, 0), QString("CPU 0,1,2,3,4,5,6,7"));
  QCOMPARE("PartitionSpec" +
               tab_->arrayModel()->indexOfArray("blocks/W1/kernel", ArrayTreeModel::SpecColumn).data().toString(),
           QString::fromStdString(a.spec.str()));
  VERIFY_CONTAINS(tab_->grid()->columnCaption(), "not split");

  doc_->undoStack()->undo();
  QCOMPARE(tab_->currentArray(), QString("blocks/W1/kernel"));
  QCOMPARE(tab_->grid()->cells().size(), size_t(4));
  VERIFY_CONTAINS(tab_->headingText(), "PartitionSpec(None, None, 'model')");
}

void TestShardingView::indivisibleDimensionShowsTheErrorInstead() {
  doc_->requestArray("blocks/W1/kernel");
  QVERIFY(doc_->edit("model=3", [](project::Project& p) { p.mesh = {{"axes", {{"data", 2}, {"model", 3}}}}; }));
  const sharding::ArraySharding& a = array("blocks/W1/kernel");
  QVERIFY(!a.error.empty());
  QCOMPARE(tab_->currentArray(), QString("blocks/W1/kernel"));
  VERIFY_CONTAINS(tab_->arrayErrorText(), QString::fromStdString(a.error));
  VERIFY_CONTAINS(tab_->arrayErrorText(), "not divisible");
  QVERIFY(tab_->findChild<QLabel*>("arrayError")->isVisible());
  QVERIFY(!tab_->grid()->isVisible());
  QVERIFY(!tab_->grid()->hasArray());
  QVERIFY(!tab_->rowDimCombo()->isVisible());
  QCOMPARE(tab_->arrayModel()->indexOfArray("blocks/W1/kernel", ArrayTreeModel::SpecColumn).data().toString(),
           QString("invalid"));
  // A valid array of the same project still draws, over six devices.
  doc_->requestArray("x");
  QVERIFY(tab_->grid()->isVisible());
  QCOMPARE(tab_->grid()->cells().size(), size_t(2));
  QCOMPARE(tab_->grid()->cellLabel(1, 0), QString("CPU 3,4,5"));
  QCOMPARE(tab_->deviceView()->deviceCombo()->count(), 6);
}

void TestShardingView::reverseViewListsEveryBlockOfDevice3() {
  DeviceView* dv = tab_->deviceView();
  QCOMPARE(dv->deviceCombo()->count(), 8);
  dv->deviceCombo()->setCurrentIndex(3);
  QCOMPARE(dv->device(), int64_t(3));
  DeviceBlocksModel* m = dv->blocksModel();
  QCOMPARE(m->device(), int64_t(3));
  const auto& d = doc_->design();
  QCOMPARE(m->rowCount(), int(d.sharding.arrays.size()));
  for (const sharding::ArraySharding& a : d.sharding.arrays) {
    const int r = m->rowOfArray(QString::fromStdString(a.name));
    QVERIFY2(r >= 0, a.name.c_str());
    QCOMPARE(m->index(r, DeviceBlocksModel::ShardColumn).data().toString(), QString::fromStdString(shape_str(a.shard)));
    const sharding::Block b = sharding::device_block(a.spec, a.shape, d.sharding.mesh, 3);
    QStringList range;
    for (size_t i = 0; i < a.shape.size(); ++i) range << QString("%1:%2").arg(b.start[i]).arg(b.start[i] + a.shard[i]);
    QCOMPARE(m->index(r, DeviceBlocksModel::RangeColumn).data().toString(), range.join(", "));
    QCOMPARE(m->index(r, DeviceBlocksModel::BytesColumn).data(DeviceBlocksModel::SortRole).toDouble(),
             a.bytes_per_device);
  }
  // Device 3 is (data 0, model 3): the last quarter of W1's hidden columns, the first half of the batch.
  QCOMPARE(m->index(m->rowOfArray("blocks/W1/kernel"), DeviceBlocksModel::RangeColumn).data().toString(),
           QString("0:4, 0:1024, 768:1024"));
  QCOMPARE(m->index(m->rowOfArray("x"), DeviceBlocksModel::RangeColumn).data().toString(), QString("0:4, 0:1024"));
  // Activations inside the Repeat are kept once per layer.
  QCOMPARE(m->index(m->rowOfArray("blocks/W1"), DeviceBlocksModel::CopiesColumn).data().toString(), QString("×4"));
  QCOMPARE(m->index(m->rowOfArray("blocks"), DeviceBlocksModel::CopiesColumn).data().toString(), QString("×1"));
  // The persistent rows add up to what the step's plan keeps across steps; the rest lives in its
  // arena, which reuses buffers as the step runs.
  double params = 0, state = 0;
  for (const sharding::ArraySharding& a : d.sharding.arrays) {
    const double held = m->index(m->rowOfArray(QString::fromStdString(a.name)), DeviceBlocksModel::HeldColumn)
                            .data(DeviceBlocksModel::SortRole)
                            .toDouble();
    if (a.kind == sharding::ArrayKind::Parameter) params += held;
    if (a.kind == sharding::ArrayKind::OptimizerState) state += held;
  }
  QCOMPARE(params, d.sharding.devices[3].params);
  QCOMPARE(state, d.sharding.devices[3].opt_state);
  const QString summary = dv->memorySummary();
  VERIFY_CONTAINS(summary, "Device 3 holds " + shardfmt::bytesText(d.sharding.devices[3].total()));
  VERIFY_CONTAINS(summary, "optimizer state " + shardfmt::bytesText(d.sharding.devices[3].opt_state));
  VERIFY_CONTAINS(tab_->findChild<QLabel*>("deviceMemory")->text(), shardfmt::bytesText(d.sharding.devices[3].total()));
}

void TestShardingView::pickerCellAndRowClicksLinkTheViews() {
  doc_->requestArray("blocks/W1/kernel");
  DeviceView* dv = tab_->deviceView();
  QSignalSpy deviceChanged(dv, &DeviceView::deviceChanged);
  // A device clicked in the mesh picture.
  DevicePicker* picker = dv->picker();
  QTest::mouseClick(picker, Qt::LeftButton, {}, picker->deviceRect(5).center());
  QCOMPARE(dv->device(), int64_t(5));
  QCOMPARE(dv->deviceCombo()->currentIndex(), 5);
  QCOMPARE(deviceChanged.count(), 1);
  QCOMPARE(tab_->grid()->highlightDevice(), int64_t(5));
  // A grid cell clicked: its first device becomes the one listed.
  ShardingGrid* g = tab_->grid();
  const int cell = g->cellOfDevice(2);
  QTest::mouseClick(g, Qt::LeftButton, {}, g->cellRect(cell).center());
  QCOMPARE(dv->device(), int64_t(2));
  QCOMPARE(g->highlightDevice(), int64_t(2));
  // Device 3, then a row of its table: that array is drawn with device 3's cell outlined.
  dv->deviceCombo()->setCurrentIndex(3);
  QTableView* table = dv->table();
  const QModelIndex row = table->model()->index(dv->blocksModel()->rowOfArray("blocks/W2/kernel"), 0);
  table->scrollTo(row);
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(row).center());
  QCOMPARE(tab_->currentArray(), QString("blocks/W2/kernel"));
  QCOMPARE(tab_->tree()->currentIndex().data(ArrayTreeModel::ArrayNameRole).toString(), QString("blocks/W2/kernel"));
  QCOMPARE(g->highlightDevice(), int64_t(3));
  const int held = g->cellOfDevice(3);
  QVERIFY(held >= 0);
  QCOMPARE(g->cells()[size_t(held)].label, QString("CPU 3,7"));
}

void TestShardingView::hoverShowsShardShapeAndBytes() {
  doc_->requestArray("blocks/W1/kernel");
  ShardingGrid* g = tab_->grid();
  const int cell = g->cellOfDevice(1);  // columns 256:512
  const QPoint at = g->cellRect(cell).center();
  QTest::mouseMove(g, at);
  QHelpEvent help(QEvent::ToolTip, at, g->mapToGlobal(at));
  QApplication::sendEvent(g, &help);
  QTRY_VERIFY(QToolTip::isVisible());
  const QString tip = QToolTip::text();
  QCOMPARE(tip, g->cellToolTip(cell));
  VERIFY_CONTAINS(tip, "CPU 1,5 (2 devices)");
  VERIFY_CONTAINS(tip, "shard shape (4, 1024, 256)");
  VERIFY_CONTAINS(tip, "4.00 MiB (4,194,304 bytes) per device");
  VERIFY_CONTAINS(tip, "columns: dim 2 (hidden, 1024), elements 256:512");
  VERIFY_CONTAINS(tip, "rows: dim 1 (embed, 1024), elements 0:1024");
  QToolTip::hideText();
  // Between cells (the caption band) there is nothing to explain.
  QCOMPARE(g->cellAt(QPoint(1, 1)), -1);
  QVERIFY(g->cellToolTip(-1).isEmpty());
}

void TestShardingView::coloursAreStableDistinctAndReadable() {
  doc_->requestArray("blocks/W1");
  ShardingGrid* g = tab_->grid();
  for (bool dark : {false, true}) {
    tab_->setPalette(dark ? darkPalette() : QApplication::style()->standardPalette());
    QCOMPARE(g->palette().color(QPalette::Window).lightness() < 128, dark);
    std::set<QRgb> fills;
    for (int i = 0; i < int(g->cells().size()); ++i) {
      fills.insert(g->cellFill(i).rgb());
      const double ratio = shardfmt::contrastRatio(g->cellFill(i), g->cellTextColor(i));
      QVERIFY2(ratio >= 4.5, qPrintable(QString("cell %1 contrast %2 (dark %3)").arg(i).arg(ratio).arg(dark)));
    }
    QCOMPARE(fills.size(), g->cells().size());  // eight device sets, eight colours
  }
  tab_->setPalette(QApplication::style()->standardPalette());
  // The same device set gets the same colour in another array: {0,4} in W1's kernel and W2's.
  doc_->requestArray("blocks/W1/kernel");
  const QColor w1 = g->cellFill(g->cellOfDevice(0));
  QCOMPARE(g->cells()[size_t(g->cellOfDevice(0))].label, QString("CPU 0,4"));
  doc_->requestArray("blocks/W2/kernel");
  QCOMPARE(g->cells()[size_t(g->cellOfDevice(0))].label, QString("CPU 0,4"));
  QCOMPARE(g->cellFill(g->cellOfDevice(0)), w1);
  QVERIFY(g->cellFill(g->cellOfDevice(1)) != w1);
}

void TestShardingView::oneDeviceProjectDrawsOneCell() {
  doc_->open(projectPath("fashion-mlp.shardlab.json"));
  QVERIFY(doc_->design().sharding_ok);
  // A new project starts on its first array.
  QCOMPARE(tab_->currentArray(), QString::fromStdString(doc_->design().sharding.arrays.front().name));
  doc_->requestArray("dense1/kernel");
  QCOMPARE(tab_->grid()->cells().size(), size_t(1));
  QCOMPARE(tab_->grid()->cellLabel(0, 0), QString("CPU 0"));
  VERIFY_CONTAINS(tab_->headingText(), "(784, 256)");
  // A vector is one row.
  doc_->requestArray("dense1/bias");
  QCOMPARE(tab_->grid()->rowDim(), -1);
  QCOMPARE(tab_->grid()->colDim(), 0);
  QCOMPARE(tab_->grid()->cells().size(), size_t(1));
  QCOMPARE(tab_->grid()->cellLabel(0, 0), QString("CPU 0"));
  QVERIFY(!tab_->rowDimCombo()->isVisible());
  DeviceView* dv = tab_->deviceView();
  QCOMPARE(dv->deviceCombo()->count(), 1);
  QCOMPARE(dv->blocksModel()->rowCount(), int(doc_->design().sharding.arrays.size()));
  const sharding::DeviceMemory& m = doc_->design().sharding.devices[0];
  QCOMPARE(dv->blocksModel()->heldBytes() > m.params + m.opt_state, true);
  VERIFY_CONTAINS(dv->memorySummary(), "step arena " + shardfmt::bytesText(m.arena));
  VERIFY_LACKS(dv->memorySummary(), "microbatches");

  // Gradient accumulation: the view shows one microbatch's activations and its plan, and says so.
  QVERIFY(doc_->edit("microbatches", [](project::Project& p) { p.training_json["accumulate"] = 4; }));
  QVERIFY(doc_->design().sharding_ok);
  VERIFY_CONTAINS(dv->memorySummary(), "each step runs 4 microbatches");
  VERIFY_CONTAINS(dv->memorySummary(), "step arena " + shardfmt::bytesText(doc_->design().sharding.devices[0].arena));
  doc_->requestArray("relu");
  VERIFY_CONTAINS(tab_->headingText(), "(32, 256)");
  doc_->undoStack()->undo();
  VERIFY_LACKS(dv->memorySummary(), "microbatches");
}

void TestShardingView::unknownArrayAndBrokenMeshAreExplained() {
  doc_->requestArray("blocks/W1/kernel");
  QVERIFY(!tab_->showArray("nowhere/kernel"));
  VERIFY_CONTAINS(tab_->headingText(), "There is no array 'nowhere/kernel'");
  // A renamed node's arrays are gone: the tab falls back to the project's first array.
  doc_->requestArray("blocks/W2/kernel");
  QVERIFY(doc_->edit("rename", [](project::Project& p) { edits::rename_node(p, "blocks/W2", "W3"); }));
  QVERIFY(tab_->arrayModel()->indexOfArray("blocks/W3/kernel").isValid());
  QCOMPARE(tab_->currentArray(), QString::fromStdString(doc_->design().sharding.arrays.front().name));
  doc_->undoStack()->undo();
  // A graph that does not check out: no sharding at all, and the banner says why.
  QVERIFY(doc_->edit("bad width", [](project::Project& p) { edits::set_field(p, "blocks/W2", "features", 512); }));
  QVERIFY(!doc_->design().sharding_ok);
  const QString banner = tab_->bannerText();
  VERIFY_CONTAINS(banner, "No sharding to show");
  VERIFY_CONTAINS(banner, QString::fromStdString(doc_->design().errors.front()));
  QCOMPARE(tab_->arrayModel()->rowCount(), 0);
  QVERIFY(!tab_->grid()->hasArray());
  QCOMPARE(tab_->deviceView()->deviceCombo()->count(), 0);
  VERIFY_CONTAINS(tab_->deviceView()->memorySummary(), "No per-device memory");
  // Fixed again: the banner goes, and an array is drawn.
  doc_->undoStack()->undo();
  QVERIFY(tab_->bannerText().isEmpty());
  QVERIFY(tab_->grid()->hasArray());
  QCOMPARE(tab_->deviceView()->deviceCombo()->count(), 8);
}

void TestShardingView::processesNameWhoHoldsEachBlock() {
  doc_->open(projectPath("fashion-mlp.shardlab.json"));
  QVERIFY(doc_->edit("mesh 2x2", [](project::Project& p) {
    p.mesh = {{"axes", {{"data", 2}, {"model", 2}}}};
    p.logical_axis_rules = graph::Json::parse(R"([["batch", "data"], ["mlp", "model"]])");
  }));
  QVERIFY(doc_->design().sharding_ok);
  QCOMPARE(doc_->design().sharding.mesh.device_count(), int64_t(4));
  QSpinBox* spin = tab_->processesSpin();
  QCOMPARE(spin->value(), 1);
  QCOMPARE(spin->minimum(), 1);
  QCOMPARE(spin->maximum(), 64);
  VERIFY_CONTAINS(spin->toolTip(), "mpirun -np K");
  ShardingGrid* g = tab_->grid();
  DeviceView* dv = tab_->deviceView();
  auto anyProcessLabel = [&] {
    for (const ShardingGrid::Cell& c : g->cells())
      if (c.label.contains("process")) return true;
    for (int i = 0; i < dv->deviceCombo()->count(); ++i)
      if (dv->deviceCombo()->itemText(i).contains("process")) return true;
    for (int64_t d = 0; d < 4; ++d)
      if (dv->picker()->deviceToolTip(d).contains("process")) return true;
    return dv->memorySummary().contains("process");
  };
  doc_->requestArray("dense1/kernel");
  QVERIFY(!anyProcessLabel());

  // Two processes: process 0 holds devices 0-1, process 1 devices 2-3.
  spin->setFocus();
  QTest::keyClick(spin, Qt::Key_Up);
  QCOMPARE(spin->value(), 2);
  QCOMPARE(tab_->effectiveProcesses(), 2);
  QVERIFY(tab_->processesMessageText().isEmpty());
  const sharding::Mesh& mesh = doc_->design().sharding.mesh;
  // The parameter split on model: each column block sits on one device of each process.
  const sharding::ArraySharding& kernel = array("dense1/kernel");
  QCOMPARE(kernel.spec.str(), std::string("PartitionSpec(None, 'model')"));
  QCOMPARE(g->cells().size(), size_t(2));
  QCOMPARE(g->cellLabel(0, 0), QString("CPU 0,2 (processes 0,1)"));
  QCOMPARE(g->cellLabel(0, 1), QString("CPU 1,3 (processes 0,1)"));
  const QString text = QString::fromStdString(
      sharding::render_sharding(kernel.spec, kernel.shape, mesh, g->rowDim(), g->colDim(), "CPU", 2));
  for (const ShardingGrid::Cell& c : g->cells()) VERIFY_CONTAINS(text, c.label);
  // The activation split on batch: the top rows on process 0, the bottom ones on process 1.
  doc_->requestArray("relu");
  QCOMPARE(array("relu").spec.str(), std::string("PartitionSpec('data', 'model')"));
  QCOMPARE(g->cellLabel(0, 0), QString("CPU 0 (process 0)"));
  QCOMPARE(g->cellLabel(0, 1), QString("CPU 1 (process 0)"));
  QCOMPARE(g->cellLabel(1, 0), QString("CPU 2 (process 1)"));
  QCOMPARE(g->cellLabel(1, 1), QString("CPU 3 (process 1)"));
  VERIFY_CONTAINS(g->cellToolTip(g->cellOfDevice(3)), "CPU 3 (process 1)");
  // Every device says which process holds it.
  QCOMPARE(dv->deviceCombo()->count(), 4);
  VERIFY_CONTAINS(dv->deviceCombo()->itemText(1), "Device 1 (data 0, model 1) — process 0");
  VERIFY_CONTAINS(dv->deviceCombo()->itemText(3), "Device 3 (data 1, model 1) — process 1");
  QCOMPARE(dv->picker()->deviceToolTip(2), QString("Device 2 (data 1, model 0) — process 1"));
  dv->deviceCombo()->setCurrentIndex(3);
  VERIFY_CONTAINS(dv->memorySummary(), "process 1");
  // The choice survives a redraw after an edit.
  QVERIFY(doc_->edit("rename", [](project::Project& p) { p.description = "changed"; }));
  QCOMPARE(g->cellLabel(1, 0), QString("CPU 2 (process 1)"));

  // Three processes cannot share four devices: the tab says so and draws one process.
  spin->setValue(3);
  QCOMPARE(tab_->effectiveProcesses(), 1);
  const QString message = tab_->processesMessageText();
  VERIFY_CONTAINS(message, "4 devices");
  VERIFY_CONTAINS(message, "3 processes");
  QVERIFY(tab_->findChild<QLabel*>("processesMessage")->isVisible());
  QCOMPARE(g->cellLabel(1, 0), QString("CPU 2"));
  QVERIFY(!anyProcessLabel());
  // A mesh that does divide again lifts the message: six devices over three processes.
  QVERIFY(doc_->edit("model=3", [](project::Project& p) { p.mesh = {{"axes", {{"data", 2}, {"model", 3}}}}; }));
  QVERIFY(tab_->processesMessageText().isEmpty());
  QCOMPARE(tab_->effectiveProcesses(), 3);
  QCOMPARE(dv->picker()->deviceToolTip(5), QString("Device 5 (data 1, model 2) — process 2"));
  doc_->undoStack()->undo();
  VERIFY_CONTAINS(tab_->processesMessageText(), "4 devices");

  // Back to one process: no process is named anywhere.
  spin->setValue(1);
  QVERIFY(tab_->processesMessageText().isEmpty());
  QVERIFY(!tab_->findChild<QLabel*>("processesMessage")->isVisible());
  QCOMPARE(g->cellLabel(0, 0), QString("CPU 0"));
  QCOMPARE(dv->deviceCombo()->itemText(3), QString("Device 3 (data 1, model 1)"));
  QVERIFY(!anyProcessLabel());
}

// With pipeline stages each device's summary lists every stage's layers and step arena (marking its
// own stage) and says how much of the step each stage idles under the schedule; without, nothing.
void TestShardingView::pipelineStagesShowTheirLayersArenaAndBubble() {
  DeviceView* dv = tab_->deviceView();
  // dot-relu-dot has a Repeat but no layer=<axis> rule: no stages.
  QVERIFY(doc_->design().sharding.stages.empty());
  VERIFY_LACKS(dv->memorySummary(), "stage 0");
  VERIFY_LACKS(dv->memorySummary(), "fills and drains");

  // Two stages (mesh stage=2, rule layer=stage), 4 microbatches, GPipe.
  doc_->open(QStringLiteral(SHARDLAB_SOURCE_DIR "/tests/data/pipeline.shardlab.json"));
  QVERIFY2(doc_->design().ok(), doc_->design().errors.empty() ? "" : doc_->design().errors.front().c_str());
  const sharding::ShardingReport& r = doc_->design().sharding;
  QCOMPARE(r.stages.size(), size_t(2));
  const QString arena0 = shardfmt::bytesText(r.stages[0].arena), arena1 = shardfmt::bytesText(r.stages[1].arena);
  QCOMPARE(dv->device(), int64_t(0));
  QString summary = dv->memorySummary();
  VERIFY_CONTAINS(summary, "\nstage 0 (this device): layers embed, blocks[0:4], step arena " + arena0 + " per device\n");
  VERIFY_CONTAINS(summary, "\nstage 1: layers blocks[4:8], head, step arena " + arena1 + " per device\n");
  // (S-1)/(M+S-1) = 1/5 with 2 stages and 4 microbatches.
  VERIFY_CONTAINS(summary, "GPipe schedule over mesh axis 'stage', 4 microbatches: each stage idles 20.0% of the step "
                           "while the pipeline fills and drains");
  // Device 1 is stage 1.
  dv->deviceCombo()->setCurrentIndex(1);
  summary = dv->memorySummary();
  VERIFY_CONTAINS(summary, "\nstage 0: layers embed, blocks[0:4]");
  VERIFY_CONTAINS(summary, "\nstage 1 (this device): layers blocks[4:8], head");
  VERIFY_CONTAINS(dv->findChild<QLabel*>("deviceMemory")->text(), "stage 1 (this device)");

  // The schedule and the microbatches follow the project.
  QVERIFY(doc_->edit("1f1b", [](project::Project& p) {
    p.training_json["pipeline_schedule"] = "1f1b";
    p.training_json["accumulate"] = 8;
  }));
  VERIFY_CONTAINS(dv->memorySummary(), "1F1B schedule over mesh axis 'stage', 8 microbatches: each stage idles 11.1% of the step");
  doc_->undoStack()->undo();
  VERIFY_CONTAINS(dv->memorySummary(), "GPipe schedule over mesh axis 'stage', 4 microbatches");

  // The same mesh used for data parallelism instead: no pipeline, no stage lines.
  QVERIFY(doc_->edit("data parallel", [](project::Project& p) {
    p.logical_axis_rules = graph::Json::parse(R"([["batch", "stage"]])");
  }));
  QVERIFY(doc_->design().sharding_ok);
  QVERIFY(doc_->design().sharding.stages.empty());
  VERIFY_LACKS(dv->memorySummary(), "stage 0");
  VERIFY_LACKS(dv->memorySummary(), "fills and drains");
}

void TestShardingView::screenshot() {
  doc_->requestArray("blocks/W1/kernel");
  tab_->deviceView()->deviceCombo()->setCurrentIndex(3);
  const QString dir = QStringLiteral(SHARDLAB_BINARY_DIR "/ui-screenshots");
  QVERIFY(QDir().mkpath(dir));
  QCoreApplication::processEvents();  // let the layouts settle (the banner hid when the project opened)
  const QImage shot = tab_->grab().toImage();
  QVERIFY(!shot.isNull());
  QVERIFY(shot.save(dir + "/sharding.png"));
  // The same tab in a dark palette, on an activation split both ways.
  tab_->setPalette(darkPalette());
  doc_->requestArray("blocks/W1");
  QCoreApplication::processEvents();
  QVERIFY(tab_->grab().toImage().save(dir + "/sharding-dark.png"));
}

QTEST_MAIN(TestShardingView)
#include "test_sharding_view.moc"
