// The Mesh & Rules tab used as a person would: edit the mesh and the rules of the dot-relu-dot
// project (seed 002's model) and watch the PartitionSpecs, per-device memory and problems follow;
// undo every step; apply presets; drag rules; and check every item model with Qt's tester.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTableView>
#include <QToolButton>
#include <QDialogButtonBox>
#include <QClipboard>
#include <QGuiApplication>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <memory>
#include <unistd.h>

#include "tests/engine/test_support.h"
#include "tests/ui/context_menu.h"
#include "ui/document/project_document.h"
#include "ui/mesh/device_grid.h"
#include "ui/mesh/format.h"
#include "ui/mesh/issues_list.h"
#include "ui/mesh/layout_advisor_dialog.h"
#include "ui/mesh/memory_bars.h"
#include "ui/mesh/mesh_axes_model.h"
#include "ui/mesh/mesh_editor.h"
#include "ui/mesh/mesh_rules_tab.h"
#include "ui/mesh/rules_editor.h"
#include "ui/mesh/rules_model.h"
#include "ui/mesh/rules_view.h"
#include "ui/mesh/spec_model.h"
#include "ui/mesh/spec_table.h"

using namespace shardlab;
using namespace shardlab::ui;

namespace {

QString projectPath(const char* name) {
  return QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/%1.shardlab.json").arg(name);
}

// One open project with the tab showing it.
struct Fixture {
  ProjectDocument doc;
  std::unique_ptr<MeshRulesTab> tab;

  explicit Fixture(const char* project = "dot-relu-dot") {
    doc.open(projectPath(project));
    tab = std::make_unique<MeshRulesTab>(&doc, nullptr);
    tab->resize(1400, 820);
    tab->show();
  }
  RulesModel* rules() const { return tab->rulesEditor()->model(); }
  MeshAxesModel* axes() const { return tab->meshEditor()->model(); }
  SpecModel* specs() const { return tab->specTable()->model(); }

  int ruleRow(const QString& logical) const {
    for (int r = 0; r < rules()->rowCount(); ++r)
      if (rules()->index(r, RulesModel::LogicalColumn).data().toString() == logical) return r;
    return -1;
  }
  int axisRow(const QString& name) const {
    for (int r = 0; r < axes()->rowCount(); ++r)
      if (axes()->index(r, MeshAxesModel::NameColumn).data().toString() == name) return r;
    return -1;
  }
  // What the spec table shows for an array in a column.
  QString spec(const QString& array, int column = SpecModel::SpecColumn) const {
    const int row = specs()->rowOf(array);
    return row < 0 ? QStringLiteral("<no row for %1>").arg(array) : specs()->index(row, column).data().toString();
  }
  QStringList ruleTexts() const {
    QStringList out;
    for (int r = 0; r < rules()->rowCount(); ++r)
      out << rules()->index(r, RulesModel::LogicalColumn).data().toString() + "=" +
                 rules()->index(r, RulesModel::MeshColumn).data().toString();
    return out;
  }
  QStringList issueTexts() const {
    QStringList out;
    for (int i = 0; i < tab->issues()->count(); ++i) out << tab->issues()->item(i)->text();
    return out;
  }
  QString meshText() const { return QString::fromStdString(doc.project().mesh.dump()); }
  QSpinBox* sizeSpin(const QString& axis) const {
    return qobject_cast<QSpinBox*>(
        tab->meshEditor()->axesView()->indexWidget(axes()->index(axisRow(axis), MeshAxesModel::SizeColumn)));
  }
};

// Types into the editor the view opens on `index` and presses Enter, as a person does.
void typeIntoCell(QTableView* view, const QModelIndex& index, const QString& text) {
  view->setCurrentIndex(index);
  view->edit(index);
  auto* editor = qobject_cast<QLineEdit*>(view->indexWidget(index));
  QVERIFY2(editor, "the cell opened no line editor");
  editor->selectAll();
  QTest::keyClicks(editor, text);
  QTest::keyClick(editor, Qt::Key_Return);
  // The delegate commits and closes the editor from a queued call.
  const QPointer<QLineEdit> open(editor);
  QTRY_VERIFY(open.isNull());
}

// Opens the mesh-axes list the view offers on `index` and clicks `text` in it, as a person does.
void pickInCell(QTableView* view, const QModelIndex& index, const QString& text) {
  view->setCurrentIndex(index);
  view->edit(index);
  auto* combo = qobject_cast<QComboBox*>(view->indexWidget(index));
  QVERIFY2(combo, "the cell opened no list of mesh axes");
  const int at = combo->findText(text);
  QVERIFY2(at >= 0, qPrintable("the list has no '" + text + "'"));
  combo->showPopup();
  QAbstractItemView* list = combo->view();
  QTRY_VERIFY(list->isVisible());
  const QRect item = list->visualRect(list->model()->index(at, 0));
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, item.center());
  const QPointer<QComboBox> open(combo);
  QTRY_VERIFY(open.isNull());
}

}  // namespace

class TestMeshRules : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots");
  }

  void opensWithTheProjectsMeshRulesAndSpecs() {
    Fixture f;
    QCOMPARE(f.axes()->rowCount(), 2);
    QCOMPARE(f.axes()->index(0, 0).data().toString(), QString("data"));
    QCOMPARE(f.axes()->index(1, 1).data().toLongLong(), 4LL);
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "hidden=model", "embed=None", "layer=None"}));
    // Seed 002: W1 is (layer, embed, hidden) with hidden over 'model'.
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, 'model')"));
    // Its gradient is a partial sum over 'data' until the update's reduction, as `shard` says: it
    // must not read as replicated there.
    QCOMPARE(f.spec("d_blocks/W1/kernel"), QString("PartitionSpec(None, None, 'model') +sum(data)"));
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::ShardColumn), QString("4 × 1024 × 256"));
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::BytesColumn), bytesText(4.0 * 1024 * 256 * 4));
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::LogicalColumn), QString("layer, embed, hidden"));
    QVERIFY(f.specs()->rowOf("d_blocks/W1/kernel") >= 0);   // gradient
    QVERIFY(f.specs()->rowOf("blocks/W1/kernel/mu") >= 0);  // Adam state
    QCOMPARE(f.tab->issues()->errorCount(), 0);
    QCOMPARE(f.tab->meshEditor()->deviceCountLabel()->text(), QString("8 devices = data 2 × model 4"));
  }

  void everyModelPassesTheTesterThroughEdits() {
    Fixture f;
    using Mode = QAbstractItemModelTester::FailureReportingMode;
    QAbstractItemModelTester t1(f.rules(), Mode::QtTest);
    QAbstractItemModelTester t2(f.axes(), Mode::QtTest);
    QAbstractItemModelTester t3(f.specs(), Mode::QtTest);
    QAbstractItemModelTester t4(f.tab->specTable()->filter(), Mode::QtTest);
    QVERIFY(f.rules()->setData(f.rules()->index(1, RulesModel::MeshColumn), "None"));
    QVERIFY(f.rules()->insertRows(1, 1));
    QVERIFY(f.rules()->moveRows({}, 0, 1, {}, 3));
    QVERIFY(f.rules()->removeRows(2, 1));
    QVERIFY(f.axes()->setData(f.axes()->index(1, MeshAxesModel::SizeColumn), 3));
    QVERIFY(f.axes()->insertRows(2, 1));
    QVERIFY(f.axes()->removeRows(0, 1));
    QVERIFY(f.tab->rulesEditor()->applyPreset("megatron"));
    f.tab->specTable()->kindButton(int(sharding::ArrayKind::Gradient))->click();
    f.tab->specTable()->view()->sortByColumn(SpecModel::BytesColumn, Qt::DescendingOrder);
    while (f.doc.undoStack()->canUndo()) f.doc.undoStack()->undo();
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "hidden=model", "embed=None", "layer=None"}));
    f.doc.open(projectPath("fashion-mlp"));  // a different project: every model resets
    QCOMPARE(f.axes()->rowCount(), 0);
  }

  void editingARuleInItsCellChangesThePartitionSpec() {
    Fixture f;
    RulesView* view = f.tab->rulesEditor()->view();
    const int hidden = f.ruleRow("hidden");
    QVERIFY(hidden >= 0);
    pickInCell(view, f.rules()->index(hidden, RulesModel::MeshColumn), "None");
    QCOMPARE(f.rules()->index(hidden, RulesModel::MeshColumn).data().toString(), QString("None"));
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, None)"));
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::ShardColumn), QString("4 × 1024 × 1024"));
    QCOMPARE(QString::fromStdString(f.doc.project().logical_axis_rules.dump()),
             QString(R"([["batch","data"],["hidden",null],["embed",null],["layer",null]])"));
    // Nothing shards over 'model' now: the check says so.
    VERIFY_CONTAINS(f.issueTexts().join('\n'), "mesh axis 'model' (size 4) shards no array");

    // Two axes at once, written data+model: the hidden dimension splits 8 ways.
    pickInCell(view, f.rules()->index(hidden, RulesModel::MeshColumn), "data+model");
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, ('data', 'model'))"));
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::ShardColumn), QString("4 × 1024 × 128"));

    f.doc.undoStack()->undo();
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, None)"));
    f.doc.undoStack()->undo();
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, 'model')"));
  }

  // A rule's mesh axes are picked from the mesh: None, its axes and their ordered pairs, nothing else.
  void meshAxesArePickedFromTheMesh() {
    Fixture f;
    QCOMPARE(f.rules()->meshAxisChoices(),
             (QStringList{"None", "data", "model", "data+model", "model+data"}));
    QVERIFY(f.axes()->insertRows(2, 1));
    QVERIFY(f.axes()->setData(f.axes()->index(2, MeshAxesModel::NameColumn), "stage"));
    QVERIFY(f.rules()->meshAxisChoices().contains("stage"));
    QVERIFY(f.rules()->meshAxisChoices().contains("data+stage"));
  }

  // The Arrays list's rows have the same right-click menu as the Sharding tab's.
  void arrayRowsHaveAContextMenu() {
    Fixture f;
    QTableView* view = f.tab->specTable()->view();
    const QModelIndex row = f.tab->specTable()->filter()->mapFromSource(f.specs()->index(f.specs()->rowOf("blocks/W1/kernel"), 0));
    QVERIFY(row.isValid());
    view->scrollTo(row);
    QStringList shown;
    shardlab::testing::contextMenu(view->viewport(), view->visualRect(row).center(), "Copy PartitionSpec", &shown);
    QVERIFY2(shown.contains("Copy Name"), qPrintable(shown.join(", ")));
    QCOMPARE(QGuiApplication::clipboard()->text(), QString("PartitionSpec(None, None, 'model')"));
  }

  // Suggest ranks the layouts off the UI thread; Apply sets the chosen mesh and rules as one undo step.
  void aSuggestedLayoutAppliesAsOneUndoStep() {
    Fixture f;
    const QString before = f.meshText();
    QTest::mouseClick(f.tab->rulesEditor()->suggestButton(), Qt::LeftButton);
    LayoutAdvisorDialog* dlg = f.tab->rulesEditor()->advisorDialog();
    QVERIFY(dlg);
    QCOMPARE(dlg->devicesSpin()->value(), 8);  // the project's own device count
    QTRY_VERIFY_WITH_TIMEOUT(!dlg->busy(), 60000);
    QVERIFY2(dlg->table()->rowCount() >= 4, qPrintable(dlg->statusLabel()->text()));
    int row = -1;
    for (int r = 0; r < int(dlg->candidates().size()) && row < 0; ++r)
      if (dlg->candidates()[size_t(r)].runs() && dlg->candidates()[size_t(r)].mesh == "data=8") row = r;
    QVERIFY2(row >= 0, "no runnable data=8 layout");
    dlg->grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/layout_advisor.png");
    const advisor::Candidate chosen = dlg->candidates()[size_t(row)];
    // The search ran beside the named strategies, and says what it did.
    VERIFY_CONTAINS(dlg->statusLabel()->text(), "Searching batch");
    VERIFY_CONTAINS(dlg->statusLabel()->toolTip(), "pruned");
    dlg->table()->scrollToItem(dlg->table()->item(row, 1));
    QTest::mouseClick(dlg->table()->viewport(), Qt::LeftButton, {},
                      dlg->table()->visualItemRect(dlg->table()->item(row, 1)).center());
    QVERIFY(dlg->applyButton()->isEnabled());
    // The column shows what the layout splits; below the table, why it is what it is and the whole rules.
    VERIFY_CONTAINS(dlg->detailLabel()->text(), "--rules " + QString::fromStdString(chosen.rules));
    VERIFY_CONTAINS(dlg->detailLabel()->text(), "splits batch 8-way over data");
    VERIFY_CONTAINS(dlg->detailLabel()->text(), "bound by");
    // A layout only the search found is listed as such, and explained the same way.
    int found = -1;
    for (int r = 0; r < int(dlg->candidates().size()) && found < 0; ++r)
      if (dlg->candidates()[size_t(r)].strategy == "searched") found = r;
    QVERIFY2(found >= 0, "the search listed nothing");
    dlg->table()->scrollToItem(dlg->table()->item(found, 1));
    QTest::mouseClick(dlg->table()->viewport(), Qt::LeftButton, {},
                      dlg->table()->visualItemRect(dlg->table()->item(found, 1)).center());
    VERIFY_CONTAINS(dlg->detailLabel()->text(), "searched on " + QString::fromStdString(dlg->candidates()[size_t(found)].mesh));
    dlg->table()->scrollToItem(dlg->table()->item(row, 1));
    QTest::mouseClick(dlg->table()->viewport(), Qt::LeftButton, {},
                      dlg->table()->visualItemRect(dlg->table()->item(row, 1)).center());
    VERIFY_LACKS(dlg->table()->item(row, dlg->table()->columnCount() - 1)->text(), "=none");
    const int steps = f.doc.undoStack()->count();
    QTest::mouseClick(dlg->applyButton(), Qt::LeftButton);
    QCOMPARE(f.doc.undoStack()->count(), steps + 1);
    QCOMPARE(sharding::project_mesh(f.doc.project()).str(), chosen.mesh);
    QCOMPARE(sharding::rules_str(sharding::project_rules(f.doc.project())), chosen.rules);
    QVERIFY(f.doc.design().ok());
    f.doc.undoStack()->undo();
    QCOMPARE(f.meshText(), before);

    // A pipeline over the Repeat's layers comes with its microbatches, which Apply sets as well.
    int pipe = -1;
    for (int r = 0; r < int(dlg->candidates().size()) && pipe < 0; ++r)
      if (dlg->candidates()[size_t(r)].runs() && dlg->candidates()[size_t(r)].mesh == "stage=2,data=4") pipe = r;
    QVERIFY2(pipe >= 0, "no runnable stage=2,data=4 pipeline");
    const advisor::Candidate piped = dlg->candidates()[size_t(pipe)];
    QVERIFY(piped.microbatches >= 2);
    VERIFY_CONTAINS(dlg->table()->item(pipe, dlg->table()->columnCount() - 1)->text(),
                    QString("%1 microbatches").arg(piped.microbatches));
    const int64_t accumulate = f.doc.project().training.accumulate;
    QVERIFY(dlg->applyRow(pipe));
    QCOMPARE(f.doc.undoStack()->count(), steps + 1);
    QCOMPARE(sharding::project_mesh(f.doc.project()).str(), piped.mesh);
    QCOMPARE(f.doc.project().training.accumulate, piped.microbatches);
    QVERIFY(f.doc.design().ok());
    QCOMPARE(f.doc.design().sharding.stages.size(), size_t(2));
    f.doc.undoStack()->undo();
    QCOMPARE(f.doc.project().training.accumulate, accumulate);
    QCOMPARE(f.meshText(), before);

    // On a written profile: every device of an H100 node holds 80 GB.
    const int h100 = dlg->hardwareCombo()->findData("h100-sxm-node");
    QVERIFY(h100 > 0);
    dlg->hardwareCombo()->setCurrentIndex(h100);
    QTest::mouseClick(dlg->suggestButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!dlg->busy(), 60000);
    VERIFY_CONTAINS(dlg->statusLabel()->text(), "h100-sxm-node");
    QCOMPARE(dlg->candidates().front().capacity_bytes, 85899345920.0);
    // Its Close button closes it (no title bar needed).
    QVERIFY(dlg->isVisible());
    auto* buttons = dlg->findChild<QDialogButtonBox*>("advisorButtons");
    QVERIFY(buttons);
    QTest::mouseClick(buttons->button(QDialogButtonBox::Close), Qt::LeftButton);
    QVERIFY(!dlg->isVisible());
  }

  void badRuleTextIsRefusedAndUnknownAxesAreFlagged() {
    Fixture f;
    const int hidden = f.ruleRow("hidden");
    const int steps = f.doc.undoStack()->count();
    QSignalSpy refused(f.rules(), &RulesModel::refused);
    QSignalSpy logged(&f.doc, &ProjectDocument::message);
    QVERIFY(!f.rules()->setData(f.rules()->index(hidden, RulesModel::MeshColumn), "data++model"));
    QCOMPARE(refused.count(), 1);
    VERIFY_CONTAINS(refused.last().at(0).toString(), "rule 'hidden'");
    QCOMPARE(logged.count(), 1);
    VERIFY_CONTAINS(logged.last().at(1).toString(), "Rule edit refused: " + refused.last().at(0).toString());
    QVERIFY(!f.rules()->setData(f.rules()->index(hidden, RulesModel::LogicalColumn), "two words"));
    VERIFY_CONTAINS(f.tab->rulesEditor()->errorLabel()->text(), "logical axis");
    QVERIFY(f.tab->rulesEditor()->errorLabel()->isVisibleTo(f.tab.get()));
    QCOMPARE(f.doc.undoStack()->count(), steps);

    // An axis the mesh lacks is kept, flagged in the table, and the arrays it touches fail.
    QVERIFY(f.rules()->setData(f.rules()->index(hidden, RulesModel::MeshColumn), "tensor"));
    QVERIFY(f.rules()->index(hidden, 0).data(RulesModel::ProblemRole).toBool());
    VERIFY_CONTAINS(f.rules()->index(hidden, RulesModel::StatusColumn).data().toString(), "no axis 'tensor'");
    QVERIFY(!f.rules()->index(f.ruleRow("batch"), 0).data(RulesModel::ProblemRole).toBool());
    VERIFY_CONTAINS(f.spec("blocks/W1/kernel", SpecModel::ErrorColumn), "tensor");
    // Adding the axis to the mesh clears the flag.
    QVERIFY(f.axes()->insertRows(2, 1));
    QVERIFY(f.axes()->setData(f.axes()->index(2, MeshAxesModel::NameColumn), "tensor"));
    QVERIFY(!f.rules()->index(hidden, 0).data(RulesModel::ProblemRole).toBool());
    QCOMPARE(f.spec("blocks/W1/kernel", SpecModel::ErrorColumn), QString());
  }

  void anIndivisibleMeshSizeNamesTheArray() {
    Fixture f;
    QSpinBox* spin = f.sizeSpin("model");
    QVERIFY2(spin, "no spin box on model's size");
    QCOMPARE(spin->value(), 4);
    const int steps = f.doc.undoStack()->count();
    spin->setFocus();
    spin->selectAll();
    QTest::keyClicks(spin, "3");
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"model":3}})"));
    // 1024 does not split 3 ways: the error names the array and the dimension.
    VERIFY_CONTAINS(f.spec("blocks/W1/kernel", SpecModel::ErrorColumn), "blocks/W1/kernel");
    VERIFY_CONTAINS(f.spec("blocks/W1/kernel", SpecModel::ErrorColumn), "not divisible by 3");
    // The list has one problem for the one cause, naming the arrays and the sizes that divide.
    const QStringList problems = f.issueTexts().filter("mesh axis model (3)");
    QCOMPARE(problems.size(), 1);
    VERIFY_CONTAINS(problems[0], "'blocks/W1/kernel' dimension 2 (1024)");
    VERIFY_CONTAINS(problems[0], "sizes of model nearest 3 that divide them all: 2 or 4");
    VERIFY_CONTAINS(problems[0], "Fix: set mesh axis 'model' to 2 or 4");
    QVERIFY(f.tab->issues()->errorCount() > 0);
    QCOMPARE(f.tab->meshEditor()->deviceGrid()->deviceCount(), 6);
    QCOMPARE(f.tab->memoryBars()->barCount(), 6);
    VERIFY_CONTAINS(f.tab->meshEditor()->deviceCountLabel()->text(), "6 devices");

    // Spinning on is the same field: still one undo step, which restores model=4.
    QTest::keyClick(spin, Qt::Key_Up);
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"model":4}})"));
    QTest::keyClick(spin, Qt::Key_Up);
    QCOMPARE(f.doc.undoStack()->count(), steps + 1);
    f.doc.undoStack()->undo();
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"model":4}})"));
    QCOMPARE(f.sizeSpin("model")->value(), 4);
    QCOMPARE(f.tab->issues()->errorCount(), 0);
    QCOMPARE(f.tab->memoryBars()->barCount(), 8);
  }

  void invalidMeshNamesAreRefusedWithTheReason() {
    Fixture f;
    const QString before = f.meshText();
    QTableView* view = f.tab->meshEditor()->axesView();
    QSignalSpy logged(&f.doc, &ProjectDocument::message);
    typeIntoCell(view, f.axes()->index(f.axisRow("model"), MeshAxesModel::NameColumn), "data");
    QCOMPARE(f.meshText(), before);
    // Every refusal reaches the Log as well as the line under the table.
    QCOMPARE(logged.count(), 1);
    QCOMPARE(logged.last().at(0).toString(), QString("warning"));
    VERIFY_CONTAINS(logged.last().at(1).toString(), "Mesh edit refused: ");
    VERIFY_CONTAINS(logged.last().at(1).toString(), "'data' appears twice");
    QLabel* error = f.tab->meshEditor()->errorLabel();
    QVERIFY(error->isVisibleTo(f.tab.get()));
    VERIFY_CONTAINS(error->text(), "'data' appears twice");
    QVERIFY(!f.axes()->setData(f.axes()->index(0, MeshAxesModel::NameColumn), "none"));
    VERIFY_CONTAINS(error->text(), "replicated");
    QVERIFY(!f.axes()->setData(f.axes()->index(0, MeshAxesModel::NameColumn), ""));
    VERIFY_CONTAINS(error->text(), "empty");
    QVERIFY(!f.axes()->setData(f.axes()->index(0, MeshAxesModel::SizeColumn), 0));
    VERIFY_CONTAINS(error->text(), "size 0");
    QVERIFY(!f.axes()->setData(f.axes()->index(0, MeshAxesModel::SizeColumn), 4096));
    VERIFY_CONTAINS(error->text(), "at most 1024");
    QCOMPARE(f.meshText(), before);
    QCOMPARE(f.doc.undoStack()->count(), 0);

    // A good rename is applied, takes the rules with it, and undoes in one step.
    typeIntoCell(view, f.axes()->index(f.axisRow("model"), MeshAxesModel::NameColumn), "tensor");
    QVERIFY(!error->isVisibleTo(f.tab.get()));
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"tensor":4}})"));
    QCOMPARE(f.ruleTexts().at(f.ruleRow("hidden")), QString("hidden=tensor"));
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, 'tensor')"));
    f.doc.undoStack()->undo();
    QCOMPARE(f.meshText(), before);
    QCOMPARE(f.ruleTexts().at(f.ruleRow("hidden")), QString("hidden=model"));
  }

  void addAndRemoveMeshAxesWithTheButtons() {
    Fixture f;
    MeshEditor* m = f.tab->meshEditor();
    QTest::mouseClick(m->addButton(), Qt::LeftButton);
    QCOMPARE(f.axes()->rowCount(), 3);
    QCOMPARE(f.axes()->index(2, 0).data().toString(), QString("axis2"));
    QVERIFY(f.sizeSpin("axis2"));  // the new row has its spin box too
    QCOMPARE(f.tab->meshEditor()->deviceGrid()->deviceCount(), 8);
    m->axesView()->setCurrentIndex(f.axes()->index(0, 0));
    QTest::mouseClick(m->removeButton(), Qt::LeftButton);
    QCOMPARE(f.meshText(), QString(R"({"axes":{"model":4,"axis2":1}})"));
    // The rule batch -> data now names a missing axis.
    QVERIFY(f.rules()->index(f.ruleRow("batch"), 0).data(RulesModel::ProblemRole).toBool());
    QCOMPARE(f.tab->memoryBars()->barCount(), 4);
    f.doc.undoStack()->undo();
    f.doc.undoStack()->undo();
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"model":4}})"));
    QCOMPARE(f.axes()->rowCount(), 2);
    QCOMPARE(f.sizeSpin("model")->value(), 4);
  }

  void addRemoveAndReorderRulesUndoEachStep() {
    Fixture f;
    RulesEditor* e = f.tab->rulesEditor();
    const QStringList original = f.ruleTexts();
    QUndoStack* undo = f.doc.undoStack();

    // Add after the selected rule: a new rule, one step, undone.
    e->view()->setCurrentIndex(f.rules()->index(0, 0));
    QTest::mouseClick(e->addButton(), Qt::LeftButton);
    QCOMPARE(f.rules()->rowCount(), 5);
    QCOMPARE(f.ruleTexts().at(1), QString("axis=None"));  // every used name already has a rule
    QCOMPARE(undo->count(), 1);
    undo->undo();
    QCOMPARE(f.ruleTexts(), original);

    // Remove the selected rule: 'hidden' loses its rule and the check reports it.
    e->view()->setCurrentIndex(f.rules()->index(f.ruleRow("hidden"), 0));
    QTest::mouseClick(e->removeButton(), Qt::LeftButton);
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "embed=None", "layer=None"}));
    VERIFY_CONTAINS(f.issueTexts().join('\n'), "logical axis 'hidden' has no rule");
    undo->undo();
    QCOMPARE(f.ruleTexts(), original);

    // Up and down buttons; the selection follows the moved rule.
    e->view()->setCurrentIndex(f.rules()->index(2, 0));
    QTest::mouseClick(e->upButton(), Qt::LeftButton);
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "embed=None", "hidden=model", "layer=None"}));
    QCOMPARE(e->view()->currentIndex().row(), 1);
    QTest::mouseClick(e->upButton(), Qt::LeftButton);
    QCOMPARE(f.ruleTexts(), QStringList({"embed=None", "batch=data", "hidden=model", "layer=None"}));
    QVERIFY(!e->upButton()->isEnabled());
    QCOMPARE(undo->undoText(), QString("Move rule 'embed' up"));
    undo->undo();
    undo->undo();
    QCOMPARE(f.ruleTexts(), original);
    e->view()->setCurrentIndex(f.rules()->index(0, 0));
    QTest::mouseClick(e->downButton(), Qt::LeftButton);
    QCOMPARE(f.ruleTexts(), QStringList({"hidden=model", "batch=data", "embed=None", "layer=None"}));
    undo->undo();
    QCOMPARE(f.ruleTexts(), original);
  }

  void orderDecidesWhoGetsAMeshAxis() {
    // Flax semantics: with both batch and hidden on 'data', the earlier rule wins the axis in an
    // activation that has both; dragging the later rule first flips the winner.
    Fixture f;
    QVERIFY(f.rules()->setData(f.rules()->index(f.ruleRow("hidden"), RulesModel::MeshColumn), "data"));
    QCOMPARE(f.spec("blocks/W1"), QString("PartitionSpec('data', None)"));
    RulesView* view = f.tab->rulesEditor()->view();
    std::unique_ptr<QMimeData> mime(f.rules()->mimeData({f.rules()->index(f.ruleRow("hidden"), 0)}));
    // Drag onto the upper half of the first row: the dragged rule goes in front of it.
    const QRect first = view->visualRect(f.rules()->index(0, 0));
    const QPoint top(first.center().x(), first.top() + 2);
    QDragEnterEvent enter(top, Qt::MoveAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(view->viewport(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(top, Qt::MoveAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(view->viewport(), &drop);
    QVERIFY(drop.isAccepted());
    QCOMPARE(f.ruleTexts(), QStringList({"hidden=data", "batch=data", "embed=None", "layer=None"}));
    QCOMPARE(f.spec("blocks/W1"), QString("PartitionSpec(None, 'data')"));
    QCOMPARE(f.doc.undoStack()->undoText(), QString("Move rule 'hidden' up"));
    // Drop below the last row: to the end.
    std::unique_ptr<QMimeData> again(f.rules()->mimeData({f.rules()->index(0, 1)}));
    const QPoint bottom(first.center().x(), view->viewport()->height() - 2);
    QDragEnterEvent enterAgain(bottom, Qt::MoveAction, again.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(view->viewport(), &enterAgain);
    QDropEvent toEnd(bottom, Qt::MoveAction, again.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(view->viewport(), &toEnd);
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "embed=None", "layer=None", "hidden=data"}));
    f.doc.undoStack()->undo();
    f.doc.undoStack()->undo();
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "hidden=data", "embed=None", "layer=None"}));
    QCOMPARE(f.spec("blocks/W1"), QString("PartitionSpec('data', None)"));
    // Data that is not this model's rows is not a move.
    QMimeData foreign;
    foreign.setData(RulesModel::kMimeType, QByteArray("junk"));
    QVERIFY(!f.rules()->canDropMimeData(&foreign, Qt::MoveAction, 0, 0, {}));
  }

  void aPresetIsOneUndoStep() {
    Fixture f;
    const QString meshBefore = f.meshText();
    const QStringList rulesBefore = f.ruleTexts();
    QToolButton* presets = f.tab->rulesEditor()->presetsButton();
    QAction* fsdp = presets->menu()->findChild<QAction*>("preset_fsdp");
    QVERIFY(fsdp);
    fsdp->trigger();
    QCOMPARE(f.doc.undoStack()->count(), 1);
    QCOMPARE(f.doc.undoStack()->undoText(), QString("Apply preset FSDP"));
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":8}})"));
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "embed=data", "layer=None", "hidden=None"}));
    // Parameters are now split along data (FSDP); activations along the batch.
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, 'data', None)"));
    QCOMPARE(f.spec("blocks/W1/kernel/mu"), QString("PartitionSpec(None, 'data', None)"));
    QCOMPARE(f.spec("blocks/W2"), QString("PartitionSpec('data', None)"));
    QCOMPARE(f.tab->meshEditor()->deviceGrid()->rows(), 8);
    QCOMPARE(f.tab->meshEditor()->deviceGrid()->columns(), 1);
    f.doc.undoStack()->undo();
    QCOMPARE(f.meshText(), meshBefore);
    QCOMPARE(f.ruleTexts(), rulesBefore);

    presets->menu()->findChild<QAction*>("preset_data_parallel")->trigger();
    QCOMPARE(f.ruleTexts(), QStringList({"batch=data", "embed=None", "layer=None", "hidden=None"}));
    QCOMPARE(f.spec("blocks/W1/kernel"), QString("PartitionSpec(None, None, None)"));
    f.doc.undoStack()->undo();
    QCOMPARE(f.ruleTexts(), rulesBefore);
  }

  void presetsUseTheProjectsOwnNames() {
    // fashion-mlp has no mesh and names its Dense axes embed/mlp and classes: Megatron shards mlp
    // over 'model' on the 2 x 4 mesh and leaves no name without a rule.
    Fixture f("fashion-mlp");
    QCOMPARE(f.axes()->rowCount(), 0);
    QCOMPARE(f.tab->meshEditor()->deviceGrid()->deviceCount(), 1);
    QVERIFY(f.tab->rulesEditor()->applyPreset("megatron"));
    QCOMPARE(f.meshText(), QString(R"({"axes":{"data":2,"model":4}})"));
    const QStringList rules = f.ruleTexts();
    QVERIFY2(rules.contains("mlp=model") && rules.contains("batch=data") && rules.contains("embed=None"),
             qPrintable(rules.join(',')));
    QVERIFY2(!rules.contains("heads=model") && !rules.contains("hidden=model"), qPrintable(rules.join(',')));
    VERIFY_LACKS(f.issueTexts().join('\n'), "has no rule");
    QCOMPARE(f.spec("dense2/kernel"), QString("PartitionSpec('model', None)"));
    QVERIFY(!f.tab->rulesEditor()->applyPreset("no_such_preset"));
    VERIFY_CONTAINS(f.tab->rulesEditor()->errorLabel()->text(), "no_such_preset");
    QCOMPARE(f.doc.undoStack()->count(), 1);
  }

  // More virtual devices than cores is legal (it checks a layout) but they take turns on the
  // cores: the issues list says so, and stops saying it once the mesh fits the machine.
  void moreDevicesThanCoresIsAWarning() {
    Fixture f;
    const int cores = int(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
    int model = 1;  // a power of two, so it divides the model's 1024 on any machine
    while (model < cores) model *= 2;
    f.sizeSpin("model")->setValue(model);  // data 2 x model: more devices than cores
    auto warned = [&] { return f.issueTexts().filter("virtual devices share this machine's").size(); };
    QCOMPARE(warned(), 1);
    VERIFY_CONTAINS(f.issueTexts().filter("virtual devices").join('\n'), QString::number(2 * model) + " virtual devices");
    QCOMPARE(f.tab->issues()->errorCount(), 0);
    f.sizeSpin("model")->setValue(1);
    f.sizeSpin("data")->setValue(1);
    QCOMPARE(warned(), 0);
  }

  void deviceGridAndMemoryBarsFollowTheMesh() {
    Fixture f;
    DeviceGrid* grid = f.tab->meshEditor()->deviceGrid();
    QCOMPARE(grid->deviceCount(), 8);
    QCOMPARE(grid->rows(), 2);
    QCOMPARE(grid->columns(), 4);
    QCOMPARE(grid->deviceAt(1, 2), 6);  // row-major, as jax's create_device_mesh
    // Cells are laid out as numbered: device 5 is below device 1, right of device 4.
    QCOMPARE(grid->cellRect(5).left(), grid->cellRect(1).left());
    QVERIFY(grid->cellRect(5).top() > grid->cellRect(1).top());
    QVERIFY(grid->cellRect(5).left() > grid->cellRect(4).left());
    MemoryBars* bars = f.tab->memoryBars();
    QCOMPARE(bars->barCount(), grid->deviceCount());
    QCOMPARE(bars->capacity(), f.doc.design().device_capacity_bytes);
    QVERIFY(!bars->overCapacity(0));

    QComboBox* kind = f.tab->meshEditor()->deviceKind();
    QCOMPARE(kind->currentText(), QString("CPU (virtual devices)"));
    auto* items = qobject_cast<QStandardItemModel*>(kind->model());
    QVERIFY(items);
    QVERIFY(!items->item(1)->isEnabled());
    QCOMPARE(items->item(1)->toolTip(), QString("needs the CUDA backend"));
  }

  // The grid's captions are never cut short ("8 devices" once read "devic" over a grid one cell
  // wide): each caption's rectangle is at least its text's width, inside the widget, for a mesh of
  // one device, one axis of eight, two axes, and a long axis name, at the tab's normal size.
  void deviceGridCaptionsAreNotClipped_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("caption");
    QTest::newRow("one device") << "null" << "1 device";
    QTest::newRow("one axis") << R"({"axes": {"data": 8}})" << "8 devices";
    QTest::newRow("two axes") << R"({"axes": {"data": 2, "model": 4}})" << "model";
    QTest::newRow("long names") << R"({"axes": {"replica_groups": 8, "tensor_parallel": 1}})" << "tensor_parallel";
  }
  void deviceGridCaptionsAreNotClipped() {
    QFETCH(QString, mesh);
    QFETCH(QString, caption);
    Fixture f;
    QVERIFY(f.doc.edit("Mesh", [&](project::Project& p) { p.mesh = graph::Json::parse(mesh.toStdString()); }));
    DeviceGrid* grid = f.tab->meshEditor()->deviceGrid();
    QVERIFY(QTest::qWaitForWindowExposed(f.tab.get()));
    QCOMPARE(grid->columnCaption(), caption);
    const QFontMetrics bold(grid->captionFont());
    const QRect top = grid->columnCaptionRect();
    QVERIFY2(top.width() >= bold.horizontalAdvance(caption),
             qPrintable(QString("%1 px for %2 px of text").arg(top.width()).arg(bold.horizontalAdvance(caption))));
    QVERIFY2(grid->rect().contains(top), qPrintable(QString("caption at x %1..%2 in a grid %3 wide").arg(top.left()).arg(top.right()).arg(grid->width())));
    if (!grid->rowCaption().isEmpty()) {
      QVERIFY(grid->rowCaptionLength() >= bold.horizontalAdvance(grid->rowCaption()));
      QVERIFY(grid->rowCaptionLength() <= grid->height());
    }
  }

  void overCapacityBarsAreRed() {
    MemoryBars bars;
    bars.resize(400, 200);
    sharding::DeviceMemory fits{10, 10, 20}, over{100, 50, 90};
    bars.setMemory({fits, over}, 100);
    QVERIFY(!bars.overCapacity(0));
    QVERIFY(bars.overCapacity(1));
    const QImage img = bars.grab().toImage();
    const QRect slot = bars.barRect(1);
    const QColor c = img.pixelColor(slot.center().x(), slot.bottom() - 3);
    QVERIFY2(c.red() > c.green() + 60 && c.red() > c.blue() + 40, qPrintable(c.name()));
    const QColor ok = img.pixelColor(bars.barRect(0).center().x(), slot.bottom() - 3);
    QVERIFY2(ok.blue() > ok.red(), qPrintable(ok.name()));  // the parameters' blue, unwashed
    // The bar past capacity reaches above the capacity line.
    QVERIFY(bars.barLength(1) > bars.capacityLevel());
  }

  // Where a device uses a tiny part of its memory (3.6 MiB of 50 GiB), the scale reaches the
  // largest bar instead, and the caption says the capacity: bars a pixel high said nothing.
  void memoryBarsOfATinyModelAreScaledToItself() {
    MemoryBars bars;
    bars.resize(480, 220);
    const double MiB = 1024.0 * 1024, GiB = 1024 * MiB;
    bars.setMemory({sharding::DeviceMemory{1 * MiB, 2 * MiB, 0.6 * MiB}}, 50 * GiB);
    QVERIFY2(bars.scaleMax() < 10 * MiB, qPrintable(bytesText(bars.scaleMax())));
    QCOMPARE(bars.capacityLevel(), -1);
    QVERIFY(bars.barLength(0) > bars.barRect(0).height() / 2);
    VERIFY_CONTAINS(bars.tickLabels().join(' '), "MiB");
  }

  // Squeezed to its least height (a 1280x720 window's Memory panel), the chart labels only ticks
  // whose labels do not overlap, keeping the top value: "5.00 MiB" over "0 B" read as neither.
  void aShortMemoryChartDrawsNoLabelOverAnother() {
    MemoryBars bars;
    const double MiB = 1024.0 * 1024;
    bars.setMemory({sharding::DeviceMemory{1 * MiB, 2 * MiB, 1.5 * MiB}, sharding::DeviceMemory{1 * MiB, 1 * MiB, 1 * MiB}}, 0);
    const int line = QFontMetrics(bars.font()).height();
    for (int height : {bars.minimumSizeHint().height(), 6 * line, 8 * line, 220}) {
      bars.resize(480, height);
      const QList<double> labelled = bars.labelledTicks();
      QVERIFY2(!labelled.isEmpty() && labelled.last() == bars.scaleMax(), qPrintable(QString::number(height)));
      // Pixel rows of neighbouring labels are a line apart or more.
      const int full = bars.barRect(0).height();
      for (int i = 1; i < labelled.size(); ++i) {
        const double dy = full * (labelled[i] - labelled[i - 1]) / bars.scaleMax();
        QVERIFY2(dy >= line - 1, qPrintable(QString("%1 px tall: labels %2 px apart").arg(height).arg(dy)));
      }
    }
    bars.resize(480, 220);
    QCOMPARE(bars.labelledTicks(), bars.ticks());  // room for every label
  }

  // The bars stand on a byte scale whose labels are the engine's byte format and which reaches
  // the capacity once a device uses a twentieth of it: a bar's length is its total against the
  // scale's top, so a device using a sliver of its memory draws a sliver (it used to fill the chart
  // at "0.0% used").
  void memoryBarsAreToScaleWithTheCapacityMarked() {
    MemoryBars bars;
    bars.resize(480, 220);
    const double GiB = 1024.0 * 1024 * 1024;
    sharding::DeviceMemory small{0.02 * GiB, 0.04 * GiB, 0.04 * GiB}, half{2 * GiB, 2 * GiB, 4 * GiB};
    bars.setMemory({small, half}, 16 * GiB);
    QVERIFY(bars.scaleMax() >= 16 * GiB);
    const QList<double> ticks = bars.ticks();
    QVERIFY(ticks.size() >= 3);
    QCOMPARE(ticks.first(), 0.0);
    QCOMPARE(ticks.last(), bars.scaleMax());
    const QStringList labels = bars.tickLabels();
    QCOMPARE(labels.size(), ticks.size());
    for (int i = 0; i < ticks.size(); ++i) QCOMPARE(labels[i], bytesText(ticks[i]));
    QVERIFY2(labels.join(' ').contains("GiB"), qPrintable(labels.join(", ")));
    const int full = bars.barRect(0).height();
    QVERIFY(full > 50);
    for (int i = 0; i < bars.barCount(); ++i) {
      const double total = i == 0 ? small.total() : half.total();
      QVERIFY2(std::abs(bars.barLength(i) - full * total / bars.scaleMax()) <= 1.0, qPrintable(QString::number(i)));
    }
    QVERIFY(bars.barLength(0) <= full / 50 + 1);  // 100 MiB of 16 GiB: a sliver
    QVERIFY(std::abs(bars.capacityLevel() - full * 16 * GiB / bars.scaleMax()) <= 1.0);
    QVERIFY(bars.barLength(1) < bars.capacityLevel());
    // Drawn so: the small bar's slot is background at three eighths of the height (between grid
    // lines); the other bar is coloured at half its length and background just above its top.
    const QImage img = bars.grab().toImage();
    const QRect slot0 = bars.barRect(0), slot1 = bars.barRect(1);
    const QColor bg = bars.palette().color(QPalette::Window);
    const int base = slot0.bottom() + 1;
    QCOMPARE(img.pixelColor(slot0.center().x(), base - full * 3 / 8), bg);
    QVERIFY(img.pixelColor(slot1.center().x(), base - bars.barLength(1) / 2) != bg);
    QCOMPARE(img.pixelColor(slot1.center().x(), base - bars.barLength(1) - 3), bg);
  }

  void clickingAnArrayRowRequestsIt() {
    Fixture f;
    QSignalSpy requested(&f.doc, &ProjectDocument::arrayRequested);
    SpecTable* t = f.tab->specTable();
    const QModelIndex at = t->filter()->mapFromSource(f.specs()->index(f.specs()->rowOf("blocks/W1/kernel"), 0));
    t->view()->scrollTo(at);
    QTest::mouseClick(t->view()->viewport(), Qt::LeftButton, {}, t->view()->visualRect(at).center());
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.at(0).at(0).toString(), QString("blocks/W1/kernel"));
    // A request from elsewhere selects the row here.
    f.doc.requestArray("blocks/W2/kernel");
    QCOMPARE(t->view()->currentIndex().data().toString(), QString("blocks/W2/kernel"));
  }

  void kindTogglesFilterTheTable() {
    Fixture f;
    SpecTable* t = f.tab->specTable();
    auto count = [&](sharding::ArrayKind k) {
      int n = 0;
      for (int r = 0; r < t->filter()->rowCount(); ++r)
        n += t->filter()->index(r, 0).data(SpecModel::KindRole).toInt() == int(k);
      return n;
    };
    const int all = t->filter()->rowCount();
    QCOMPARE(count(sharding::ArrayKind::Gradient), 2);
    QCOMPARE(count(sharding::ArrayKind::OptimizerState), 4);  // Adam: mu and nu per kernel
    QTest::mouseClick(t->kindButton(int(sharding::ArrayKind::Gradient)), Qt::LeftButton);
    QCOMPARE(count(sharding::ArrayKind::Gradient), 0);
    QCOMPARE(t->filter()->rowCount(), all - 2);
    QTest::mouseClick(t->kindButton(int(sharding::ArrayKind::OptimizerState)), Qt::LeftButton);
    QCOMPARE(t->filter()->rowCount(), all - 6);
    QTest::mouseClick(t->kindButton(int(sharding::ArrayKind::Gradient)), Qt::LeftButton);
    QCOMPARE(count(sharding::ArrayKind::Gradient), 2);
  }

  void fallbackComboWritesTheProject() {
    Fixture f;
    QComboBox* combo = f.tab->rulesEditor()->fallbackCombo();
    QCOMPARE(combo->currentIndex(), 0);
    combo->setFocus();
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(f.doc.project().constraint_fallback, std::string("error"));
    f.doc.undoStack()->undo();
    QCOMPARE(f.doc.project().constraint_fallback, std::string());
    QCOMPARE(combo->currentIndex(), 0);
  }

  void screenshot() {
    Fixture f;
    f.tab->specTable()->view()->setCurrentIndex(f.tab->specTable()->filter()->index(0, 0));
    QVERIFY(QTest::qWaitForWindowExposed(f.tab.get()));
    const QString path = SHARDLAB_BINARY_DIR "/ui-screenshots/mesh_rules.png";
    QVERIFY(f.tab->grab().save(path));
    // The file shows the tab as a person sees it: the first array's row marked selected, the
    // second not.
    const QImage image = QImage(path).convertToFormat(QImage::Format_RGB32);
    QCOMPARE(image.size(), f.tab->size() * f.tab->devicePixelRatio());
    QTableView* view = f.tab->specTable()->view();
    auto highlighted = [&](int row) {
      const QModelIndex cell = view->model()->index(row, 0);
      const QRect r(view->viewport()->mapTo(f.tab.get(), view->visualRect(cell).topLeft()), view->visualRect(cell).size());
      int n = 0;
      for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) {
          const QColor c = image.pixelColor(QPoint(x, y) * f.tab->devicePixelRatio());
          n += c == view->palette().color(QPalette::Active, QPalette::Highlight) || c == view->palette().color(QPalette::Inactive, QPalette::Highlight);
        }
      return double(n) / std::max(1, r.width() * r.height());
    };
    QVERIFY2(highlighted(0) > 0.3, qPrintable(QString("row 0: %1 of its cell highlighted").arg(highlighted(0))));
    QVERIFY2(highlighted(1) < 0.05, qPrintable(QString("row 1: %1 of its cell highlighted").arg(highlighted(1))));
  }
};

QTEST_MAIN(TestMeshRules)
#include "test_mesh_rules.moc"
