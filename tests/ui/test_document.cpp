// The document every panel shares: opening (a graph with errors opens; a broken file does not and
// leaves the open project alone), edits as undo commands (refused edits change nothing, typing
// merges), the graph edits themselves (add, connect, cycles, rename, remove, copy/paste), and
// saving back byte-exact.
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "tests/engine/test_support.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"

using namespace shardlab;
using namespace shardlab::ui;
using shardlab::testing::error_of;

namespace {

QString example(const char* name) { return QString(SHARDLAB_SOURCE_DIR "/projects/") + name + ".shardlab.json"; }

std::string read(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has_edge(const project::Project& p, const std::string& from, const std::string& to) {
  for (const auto& e : p.graph.edges)
    if (e.from.str() == from && e.to.str() == to) return true;
  return false;
}

}  // namespace

class TestDocument : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void opensAProjectAndChecksIt() {
    ProjectDocument doc;
    QSignalSpy opened(&doc, &ProjectDocument::opened);
    doc.open(example("fashion-mlp"));
    QCOMPARE(opened.count(), 1);
    QCOMPARE(doc.displayName(), QString("fashion-mlp.shardlab.json"));
    QVERIFY(!doc.isModified());
    QVERIFY(doc.design().ok());
    QVERIFY(doc.design().sharding_ok);
    QVERIFY(doc.design().sharding.find("dense1/kernel"));
    QVERIFY(doc.design().device_capacity_bytes > 0);
  }

  void aBrokenFileDoesNotReplaceTheOpenProject() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.shardlab.json");
    std::ofstream(bad.toStdString()) << "{\"format\": \"shardlab.project\", \"version\": 1, oops}";
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    VERIFY_CONTAINS(error_of([&] { doc.open(bad); }), "bad.shardlab.json: malformed JSON at line 1");
    QCOMPARE(doc.displayName(), QString("fashion-mlp.shardlab.json"));
    QVERIFY(doc.project().graph.find("dense1"));
  }

  void aGraphWithShapeErrorsOpensAndShowsThem() {
    QTemporaryDir dir;
    project::Project p = project::load_project(example("fashion-mlp").toStdString());
    std::erase_if(p.graph.edges, [](const graph::Edge& e) { return e.to.node == "dense2"; });
    const QString path = dir.filePath("half.shardlab.json");
    project::save_project(p, path.toStdString());
    ProjectDocument doc;
    doc.open(path);
    QVERIFY(!doc.design().ok());
    const graph::NodeReport* n = doc.design().graph.find("dense2");
    QVERIFY(n);
    VERIFY_CONTAINS(QString::fromStdString(n->error), "missing input: port 'in' is not connected");
  }

  void templatesOpenUntitledAndUnmodified() {
    ProjectDocument doc;
    doc.openTemplate(example("deep-mlp-small"));
    QVERIFY(doc.path().isEmpty());
    QCOMPARE(doc.displayName(), QString("untitled"));
    QVERIFY(!doc.isModified());
  }

  // A check that takes longer than a frame runs on a worker: the edit returns at once with the
  // previous design shown and isChecking() set, and the new design lands later with changed(). Edits
  // made while one runs are checked once, the newest; undo to a project checked before is at once.
  void aSlowCheckRunsOffTheWindowThread() {
    ProjectDocument doc;
    doc.open(example("dot-relu-dot"));
    QVERIFY(!doc.isChecking());
    doc.setInlineCheckBudgetMs(0);  // as if every check were slow: each new one goes to the worker
    auto layers = [&] {
      const sharding::ArraySharding* a = doc.design().sharding.find("blocks/W1/kernel");
      return a ? a->shape.at(0) : int64_t(-1);
    };
    auto set_count = [&](int count) {
      return doc.edit("count", [count](project::Project& p) { p.graph.find("blocks")->params["count"] = count; }, "count");
    };
    QCOMPARE(layers(), int64_t(4));
    QSignalSpy checking(&doc, &ProjectDocument::checkingChanged);
    QSignalSpy changed(&doc, &ProjectDocument::changed);
    QVERIFY(set_count(8));
    QVERIFY(doc.isChecking());
    QCOMPARE(checking.count(), 1);
    QCOMPARE(changed.count(), 1);  // the edit itself, drawn with the previous check
    QCOMPARE(layers(), int64_t(4));
    QTRY_VERIFY_WITH_TIMEOUT(!doc.isChecking(), 30000);
    QCOMPARE(changed.count(), 2);  // and again when its check landed
    QCOMPARE(layers(), int64_t(8));
    // Two edits while a check runs: the window ends on the newest, checked.
    QVERIFY(doc.edit("count", [](project::Project& p) { p.graph.find("blocks")->params["count"] = 12; }));
    QVERIFY(doc.edit("count", [](project::Project& p) { p.graph.find("blocks")->params["count"] = 16; }));
    QVERIFY(doc.isChecking());
    QTRY_VERIFY_WITH_TIMEOUT(!doc.isChecking(), 30000);
    QCOMPARE(layers(), int64_t(16));
    QVERIFY(doc.design().ok());
    // Back to 12 and to 8: checked before, shown at once.
    doc.undoStack()->undo();
    QVERIFY(!doc.isChecking());
    QCOMPARE(layers(), int64_t(12));
    doc.undoStack()->undo();
    QCOMPARE(layers(), int64_t(8));
    // A broken edit's errors arrive the same way.
    QVERIFY(doc.edit("count", [](project::Project& p) { p.graph.find("blocks")->params["count"] = 3; }));
    QTRY_VERIFY_WITH_TIMEOUT(!doc.isChecking(), 30000);
    QCOMPARE(layers(), int64_t(3));
    // With the default budget a small model's check is inline again once one was quick.
    doc.setInlineCheckBudgetMs(ProjectDocument::kInlineCheckBudgetMs);
    QVERIFY(set_count(4));
    QVERIFY(!doc.isChecking() || QTest::qWaitFor([&] { return !doc.isChecking(); }, 30000));
    QVERIFY(set_count(2));
    QVERIFY2(!doc.isChecking(), "a check of a 2-layer model did not run inline");
    QCOMPARE(layers(), int64_t(2));
  }

  void editsUndoAndRedoExactly() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    const std::string original = project::to_json_string(doc.project());
    QSignalSpy modified(&doc, &ProjectDocument::modifiedChanged);
    QVERIFY(doc.edit("Features", [](project::Project& p) { ui::edits::set_field(p, "dense1", "features", 64); }));
    QVERIFY(doc.isModified());
    QCOMPARE(modified.count(), 1);
    QCOMPARE(doc.design().graph.find("dense1")->output.shape.back(), int64_t(64));
    doc.undoStack()->undo();
    QCOMPARE(project::to_json_string(doc.project()), original);
    QVERIFY(!doc.isModified());
    doc.undoStack()->redo();
    QCOMPARE(doc.design().graph.find("dense1")->output.shape.back(), int64_t(64));
  }

  void typingInOneFieldIsOneUndoStep() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    for (int v : {1, 12, 128, 1280}) doc.edit("Features", [v](project::Project& p) { ui::edits::set_field(p, "dense1", "features", v); }, "field:dense1.features");
    QCOMPARE(doc.undoStack()->count(), 1);
    QCOMPARE(doc.design().graph.find("dense1")->output.shape.back(), int64_t(1280));
    doc.undoStack()->undo();
    QCOMPARE(doc.project().graph.find("dense1")->params["features"].get<int>(), 256);
  }

  void aRefusedEditChangesNothingAndSaysWhy() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    const std::string before = project::to_json_string(doc.project());
    QSignalSpy refused(&doc, &ProjectDocument::editRefused);
    // dense2 -> dense1 closes a loop through relu.
    QVERIFY(!doc.edit("Connect", [](project::Project& p) { ui::edits::connect(p, "", {"dense2", "out"}, {"dense1", "in"}); }));
    QCOMPARE(refused.count(), 1);
    VERIFY_CONTAINS(refused.first().first().toString(), "already fed");
    QVERIFY(!doc.edit("Rename", [](project::Project& p) { ui::edits::rename_node(p, "dense1", "dense2"); }));
    VERIFY_CONTAINS(doc.lastError(), "a node named 'dense2' already exists");
    QCOMPARE(project::to_json_string(doc.project()), before);
    QCOMPARE(doc.undoStack()->count(), 0);
  }

  void buildAGraphEditByEdit() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    std::string added;
    QVERIFY(doc.edit("Add", [&](project::Project& p) { added = ui::edits::add_node(p, "Dense", "", 500, 80); }));
    QCOMPARE(added, std::string("dense"));
    QVERIFY(!doc.design().ok());  // the new node has no input yet
    VERIFY_CONTAINS(QString::fromStdString(doc.design().graph.find("dense")->error), "missing input: port 'in' is not connected");
    QVERIFY(doc.edit("Connect", [](project::Project& p) { ui::edits::connect(p, "", {"relu", "out"}, {"dense", "in"}); }));
    QVERIFY(doc.design().ok());
    QCOMPARE(QString::fromStdString(graph::describe(doc.design().graph.find("dense")->output)), QString("(batch 128, mlp 128)"));
    auto xy = ui::edits::position(doc.project(), "dense");
    QVERIFY(xy && xy->first == 500 && xy->second == 80);
    // A cycle is refused with its reason.
    QVERIFY(!doc.edit("Connect", [](project::Project& p) { ui::edits::connect(p, "", {"dense", "out"}, {"dense2", "in"}); }));
    QVERIFY(!doc.edit("Connect", [](project::Project& p) { ui::edits::disconnect(p, "", {"dense1", "in"}); ui::edits::connect(p, "", {"dense", "out"}, {"dense1", "in"}); }));
    VERIFY_CONTAINS(doc.lastError(), "would close a cycle");
    QVERIFY(!doc.edit("Connect", [](project::Project& p) { ui::edits::connect(p, "", {"dense", "out"}, {"image", "in"}); }));
    VERIFY_CONTAINS(doc.lastError(), "takes no input");
    // Undo all the way back.
    while (doc.undoStack()->canUndo()) doc.undoStack()->undo();
    QVERIFY(!doc.project().graph.find("dense"));
    QVERIFY(!doc.isModified());
  }

  void renameCarriesEdgesLossAndPositions() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    doc.edit("Place", [](project::Project& p) { ui::edits::set_position(p, "dense2", 10, 20); });
    QVERIFY(doc.edit("Rename", [](project::Project& p) { ui::edits::rename_node(p, "dense2", "logits"); }));
    QCOMPARE(doc.project().loss.output, std::string("logits"));
    QVERIFY(has_edge(doc.project(), "relu.out", "logits.in"));
    QVERIFY(ui::edits::position(doc.project(), "logits"));
    QVERIFY(!ui::edits::position(doc.project(), "dense2"));
    QVERIFY(doc.design().ok());
    QVERIFY(!doc.edit("Rename", [](project::Project& p) { ui::edits::rename_node(p, "logits", "a b"); }));
    VERIFY_CONTAINS(doc.lastError(), "'a b' is not a valid name");
  }

  void removeTakesEdgesAndKeepsSelectionHonest() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    doc.setSelection({"relu", "dense2"});
    QSignalSpy sel(&doc, &ProjectDocument::selectionChanged);
    QVERIFY(doc.edit("Delete", [](project::Project& p) { ui::edits::remove_nodes(p, {"relu"}); }));
    QVERIFY(!has_edge(doc.project(), "relu.out", "dense2.in"));
    QCOMPARE(doc.selection(), QStringList{"dense2"});
    QCOMPARE(sel.count(), 1);
    doc.undoStack()->undo();
    QVERIFY(has_edge(doc.project(), "relu.out", "dense2.in"));
  }

  void insideARepeatBlock() {
    ProjectDocument doc;
    doc.open(example("dot-relu-dot"));
    std::string added;
    QVERIFY(doc.edit("Add", [&](project::Project& p) { added = ui::edits::add_node(p, "LayerNorm", "blocks", 0, 0); }));
    QCOMPARE(added, std::string("blocks/layernorm"));
    QVERIFY(doc.edit("Connect", [](project::Project& p) { ui::edits::connect(p, "blocks", {"@in", "out"}, {"layernorm", "in"}); }));
    QVERIFY(doc.design().ok());
    QVERIFY(doc.design().sharding.find("blocks/layernorm/scale"));
    QVERIFY(!doc.edit("Add", [&](project::Project& p) { ui::edits::add_node(p, "Input", "blocks", 0, 0); }));
    VERIFY_CONTAINS(doc.lastError(), "an Input cannot go inside a block");
    QVERIFY(!doc.edit("Delete", [](project::Project& p) { ui::edits::remove_nodes(p, {"blocks/W2"}); }));
    VERIFY_CONTAINS(doc.lastError(), "is its block's output");
    QVERIFY(doc.edit("Expand", [](project::Project& p) { ui::edits::set_expanded(p, "blocks", true); }));
    QVERIFY(ui::edits::expanded(doc.project(), "blocks"));
  }

  void axisNamesEditTheSharding() {
    ProjectDocument doc;
    doc.open(example("dot-relu-dot"));
    const auto* before = doc.design().sharding.find("blocks/W1/kernel");
    QVERIFY(before);
    const std::string spec = before->spec.str();
    QVERIFY(doc.edit("Axes", [](project::Project& p) { ui::edits::set_param_axes(p, "blocks/W1", "kernel", {"hidden", "embed"}); }));
    QVERIFY(doc.design().sharding.find("blocks/W1/kernel")->spec.str() != spec);
    QVERIFY(doc.edit("Axes", [](project::Project& p) { ui::edits::set_param_axes(p, "blocks/W1", "kernel", {}); }));
    QCOMPARE(doc.design().sharding.find("blocks/W1/kernel")->logical, (std::vector<std::string>{"layer", "embed", "mlp"}));
  }

  void copyAndPasteRenamesAndKeepsInnerEdges() {
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    const graph::Json clip = ui::edits::copy_nodes(doc.project(), {"dense1", "relu"});
    QCOMPARE(clip["edges"].size(), size_t(1));  // dense1 -> relu, not flatten -> dense1
    std::vector<std::string> pasted;
    QVERIFY(doc.edit("Paste", [&](project::Project& p) { pasted = ui::edits::paste_nodes(p, clip, "", 40, 40); }));
    QCOMPARE(pasted, (std::vector<std::string>{"dense3", "relu2"}));
    QVERIFY(has_edge(doc.project(), "dense3.out", "relu2.in"));
    QVERIFY(!doc.edit("Paste", [&](project::Project& p) { ui::edits::paste_nodes(p, graph::Json::object(), "", 0, 0); }));
    VERIFY_CONTAINS(doc.lastError(), "the clipboard holds no Shardlab nodes");
  }

  void saveWritesBackWhatWasReadAndClearsTheMark() {
    QTemporaryDir dir;
    for (const char* name : {"fashion-mlp", "dot-relu-dot", "deep-mlp", "deep-mlp-small"}) {
      ProjectDocument doc;
      doc.open(example(name));
      doc.edit("Features", [](project::Project& p) { p.description += "!"; });
      QVERIFY(doc.isModified());
      const QString out = dir.filePath(QString(name) + ".shardlab.json");
      doc.saveAs(out);
      QVERIFY(!doc.isModified());
      QCOMPARE(doc.path(), out);
      doc.undoStack()->undo();
      doc.saveAs(out);
      QCOMPARE(read(out), read(example(name)));
    }
  }

  void aFailedSaveKeepsTheMarkAndTheFile() {
    QTemporaryDir dir;
    ProjectDocument doc;
    doc.open(example("fashion-mlp"));
    doc.edit("Name", [](project::Project& p) { p.name = "changed"; });
    VERIFY_CONTAINS(error_of([&] { doc.saveAs(dir.filePath("missing/dir/x.shardlab.json")); }), "missing/dir");
    QVERIFY(doc.isModified());
    QCOMPARE(doc.displayName(), QString("fashion-mlp.shardlab.json"));
  }
};

QTEST_MAIN(TestDocument)
#include "test_document.moc"
