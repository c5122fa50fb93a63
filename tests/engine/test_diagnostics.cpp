// The design check's problems as data (engine/api/design.h): each names its code, nodes, arrays,
// field and fix, one per cause, and the plain message lists are exactly their sentences; so the
// editor marks nodes from the data, and rewording a message cannot break a mark.
#include <QtTest>

#include "engine/data/data_spec.h"

#include <algorithm>

#include "engine/api/design.h"
#include "engine/project/project.h"
#include "tests/engine/test_support.h"

using namespace shardlab;

namespace {

const std::string kSource = SHARDLAB_SOURCE_DIR;

// A small MLP on synthetic data; `nodes` and `edges` are spliced in so each test breaks it its own way.
std::string project_json(const std::string& nodes, const std::string& edges, const std::string& extra = "") {
  return R"({"format": "shardlab.project", "version": 1,
    "graph": {"nodes": [)" + nodes + R"(], "edges": [)" + edges + R"(]},
    "loss": {"type": "mean_squared_error", "output": "out"},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {"type": "synthetic", "kind": "normal", "feature_shape": [12], "target_shape": [6], "examples": 32},
    "training": {"batch_size": 32, "steps": 4})" + extra + "}";
}

const std::string kNodes = R"({"name": "x", "type": "Input", "params": {"shape": [12]}},
    {"name": "h", "type": "Dense", "params": {"features": 24}}, {"name": "r", "type": "ReLU"},
    {"name": "out", "type": "Dense", "params": {"features": 6}})";
const std::string kEdges = R"({"from": "x.out", "to": "h.in"}, {"from": "h.out", "to": "r.in"}, {"from": "r.out", "to": "out.in"})";

api::Design check(const std::string& json) {
  return api::check_design(project::parse_project(json, "p.shardlab.json", project::Validation::Structure));
}

const Diagnostic* with_code(const api::Design& d, const std::string& code) {
  for (const Diagnostic& x : d.diagnostics)
    if (x.code == code) return &x;
  return nullptr;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

class TestDiagnostics : public QObject {
  Q_OBJECT
 private slots:
  void aProjectThatTrainsHasNone() {
    const api::Design d = check(project_json(kNodes, kEdges));
    QVERIFY2(d.ok(), d.errors.empty() ? "" : d.errors.front().c_str());
    for (const Diagnostic& x : d.diagnostics) QVERIFY(x.severity == Severity::Warning);
  }
  void aNodesFieldErrorNamesTheNode() {
    std::string nodes = kNodes;
    nodes.replace(nodes.find(R"("features": 24)"), 14, R"("features": -3)");
    const api::Design d = check(project_json(nodes, kEdges));
    const Diagnostic* x = with_code(d, "graph.node");
    QVERIFY(x);
    QCOMPARE(x->nodes, std::vector<std::string>{"h"});
    QCOMPARE(x->field, std::string("graph"));
    QVERIFY(x->message.find(x->reason) != std::string::npos);
    QCOMPARE(api::diagnostics_of_node(d, "h").size(), size_t(1));
    QVERIFY(api::diagnostics_of_node(d, "r").empty());  // waiting on h is not an error of r's
  }
  void aCycleListsEveryNodeOnIt() {
    const api::Design d =
        check(project_json(kNodes + R"(, {"name": "a", "type": "Add"})",
                           kEdges + R"(, {"from": "a.out", "to": "a.a"}, {"from": "x.out", "to": "a.b"})"));
    const Diagnostic* x = with_code(d, "graph.cycle");
    QVERIFY(x);
    QVERIFY(has(x->nodes, "a"));
  }
  // A block whose inner node fails is one problem naming both the Repeat and the inner node.
  void aBlocksInnerErrorNamesTheInnerNode() {
    project::Project p = project::load_project(kSource + "/projects/dot-relu-dot.shardlab.json");
    p.graph.nodes[1].body->nodes[0].params["features"] = 0;
    const api::Design d = api::check_design(p);
    const Diagnostic* x = with_code(d, "graph.node");
    QVERIFY(x);
    QCOMPARE(x->nodes.front(), std::string("blocks"));
    QVERIFY2(has(x->nodes, "blocks/W1"), x->message.c_str());
  }
  void theLossOutputUnsetIsAFieldProblemWithAFix() {
    std::string json = project_json(kNodes, kEdges);
    json.replace(json.find(R"("output": "out")"), 15, R"("output": "")");
    const api::Design d = check(json);
    const Diagnostic* x = with_code(d, "loss.output");
    QVERIFY(x);
    QCOMPARE(x->field, std::string("loss.output"));
    QVERIFY(!x->fix.empty());
    // One cause, one problem: the loss's unset output is said once, not once per check that meets it.
    QStringList errors;
    for (const Diagnostic& e : d.diagnostics) errors << QString::fromStdString(e.code + "/" + e.field + ": " + e.message);
    QVERIFY2(d.errors.size() == 1, qPrintable(errors.join(" | ")));
  }

  // A rule naming an axis the mesh lacks is one problem, on its rule.
  void aRuleOnAMissingAxisIsOneProblem() {
    const api::Design d = check(project_json(kNodes, kEdges, R"(, "mesh": {"axes": {"data": 2}},
      "logical_axis_rules": [["batch", "data"], ["mlp", "nosuch"]])"));
    QStringList errors;
    for (const Diagnostic& e : d.diagnostics) errors << QString::fromStdString(e.code + "/" + e.field + ": " + e.message);
    QVERIFY2(d.errors.size() == 1, qPrintable(errors.join(" | ")));
    VERIFY_CONTAINS(errors.front(), "nosuch");
  }
  // Seed 001's data fed to an Input that expects (784,): the design check says so before Start,
  // on the Input node.
  void dataThatDoesNotFitTheInputIsAnErrorOnTheInputNode() {
    project::Project p = project::load_project(kSource + "/projects/fashion-mlp.shardlab.json");
    const std::string input = p.graph.nodes[0].name;
    QCOMPARE(p.graph.nodes[0].type, std::string("Input"));
    // The Input then takes (784,) while the images are (28, 28).
    p.graph.nodes[0].params = nlohmann::ordered_json{{"shape", {784}}};
    const api::Design d = api::check_design(p);
    const Diagnostic* x = with_code(d, "data");
    if (!x) QSKIP("the Fashion-MNIST data set is not installed here (dataset-fashion-mnist)");
    QCOMPARE(x->field, std::string("data"));
    QVERIFY(has(x->nodes, input));
    QVERIFY(!d.ok());
  }
  // A project that has no file nor name yet (File > New) is "untitled project" in what it says: no
  // message starts with a bare ": ".
  void anUntitledProjectsProblemsSayUntitled() {
    project::Project p = project::parse_project(project_json(kNodes, kEdges), "p.shardlab.json", project::Validation::Structure);
    p.file.clear();
    p.name.clear();
    // Targets of 4 where the model gives 6: a data-fit problem, which names the project.
    const nlohmann::ordered_json data =
        nlohmann::ordered_json::parse(R"({"type": "synthetic", "kind": "normal", "feature_shape": [12], "target_shape": [4], "examples": 32})");
    p.data = data::parse_data_spec(data, "data");
    p.data_json = data;
    const api::Design d = api::check_design(p);
    const Diagnostic* x = with_code(d, "data");
    QVERIFY(x);
    QVERIFY2(x->message.rfind("untitled project: data", 0) == 0, x->message.c_str());
  }
  // One indivisible mesh axis is one problem, naming the arrays' nodes and the mesh sizes that divide.
  void aSizeThreeMeshAxisIsOneProblemWithTheSizesThatDivide() {
    const api::Design d = check(project_json(kNodes, kEdges, R"(, "mesh": {"axes": {"data": 3}},
        "logical_axis_rules": [["batch", "data"]])"));
    int errors = 0;
    for (const Diagnostic& x : d.diagnostics) errors += x.severity == Severity::Error;
    QCOMPARE(errors, 1);
    const Diagnostic* x = with_code(d, "layout.indivisible");
    QVERIFY(x);
    QCOMPARE(x->fix, std::string("set mesh axis 'data' to 2 or 4"));
    QVERIFY(has(x->nodes, "x"));
    QVERIFY(has(x->nodes, "h"));
  }
  // The plain lists are the diagnostics' sentences, errors and warnings apart, each once.
  void theMessageListsAreTheDiagnostics() {
    const api::Design d = check(project_json(kNodes, kEdges, R"(, "mesh": {"axes": {"data": 2, "modle": 2}},
        "logical_axis_rules": [["batch", "data"], ["mlp", "model"]])"));
    std::vector<std::string> errors, warnings;
    for (const Diagnostic& x : d.diagnostics) (x.severity == Severity::Error ? errors : warnings).push_back(x.message);
    QCOMPARE(d.errors, errors);
    QCOMPARE(d.warnings, warnings);
    QVERIFY(!errors.empty());
    const Diagnostic* typo = with_code(d, "rules.unknown_axis");
    QVERIFY(typo);
    VERIFY_CONTAINS(QString::fromStdString(typo->message), "did you mean 'modle'");
  }
};

QTEST_APPLESS_MAIN(TestDiagnostics)
#include "test_diagnostics.moc"
