// The project file: parsing and validation (every error names the file, the node or field, and the
// reason), the canonical round trip of the shipped projects, atomic saving, and shape analysis.
#include <QtTest>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/util/error.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

using shardlab::testing::error_of;

namespace {

const char* const kFile = "small.shardlab.json";

// A small valid project: x (Input 16) -> hidden (Dense 32) -> drop (Dropout) -> out (Dense 10), MSE.
// Tests mutate a copy and check the error it gives.
Json small_project() {
  return Json::parse(R"({
    "format": "shardlab.project",
    "version": 1,
    "name": "small",
    "graph": {
      "nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [16]}},
        {"name": "hidden", "type": "Dense", "params": {"features": 32}},
        {"name": "drop", "type": "Dropout", "params": {"rate": 0.1}},
        {"name": "out", "type": "Dense", "params": {"features": 10}}
      ],
      "edges": [
        {"from": "x.out", "to": "hidden.in"},
        {"from": "hidden.out", "to": "drop.in"},
        {"from": "drop.out", "to": "out.in"}
      ]
    },
    "loss": {"type": "mean_squared_error", "output": "out"},
    "optimizer": {"type": "adam", "learning_rate": 0.01},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 5}
  })");
}

Json node(const std::string& name, const std::string& type, Json params = Json::object()) {
  Json n = {{"name", name}, {"type", type}};
  if (!params.empty()) n["params"] = params;
  return n;
}

Json edge(const std::string& from, const std::string& to) { return {{"from", from}, {"to", to}}; }

// A project with the given graph on the small project's loss, optimizer, data and training.
Json with_graph(Json nodes, Json edges, const std::string& loss_output) {
  Json j = small_project();
  j["graph"]["nodes"] = std::move(nodes);
  j["graph"]["edges"] = std::move(edges);
  j["loss"]["output"] = loss_output;
  return j;
}

QString parse_error(const std::string& text) {
  return error_of([&] { project::parse_project(text, kFile); });
}
QString parse_error(const Json& j) { return parse_error(j.dump(2)); }

// The lines of a multi-error message that contain `needle`.
QStringList lines_with(const QString& msg, const QString& needle) {
  QStringList out;
  for (const QString& l : msg.split('\n'))
    if (l.contains(needle)) out << l;
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

fs::path projects_dir() { return fs::path(SHARDLAB_SOURCE_DIR) / "projects"; }

std::vector<fs::path> project_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(projects_dir()))
    if (e.path().string().ends_with(".shardlab.json")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

const graph::ParamInfo* find_param(const graph::NodeReport& n, const std::string& name) {
  for (const auto& p : n.params)
    if (p.name == name) return &p;
  return nullptr;
}

using Shape_ = std::vector<int64_t>;
using Axes = std::vector<std::string>;

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("shardlab-test-project-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

}  // namespace

class TestProject : public QObject {
  Q_OBJECT

 private slots:
  // ---- what a hostile file cannot do ---------------------------------------------------------

  // Nesting is refused before parsing, however deep (the parser would overflow the stack), with a
  // short message; a project's real depth (a Repeat inside a Repeat) stays far below the limit.
  void deepNestingIsRefusedBeforeParsing() {
    for (const std::string& value : {std::string(100000, '[') + std::string(100000, ']'),
                                     std::string(300, '{') + std::string(300, '}')}) {
      const std::string text = R"({"format": "shardlab.project", "version": 1, "name": )" + value + "}";
      const QString err = testing::error_of([&] { project::parse_project(text, kFile); });
      VERIFY_CONTAINS(err, QString::fromStdString(kFile) + ": JSON nested deeper than 256 levels");
      QVERIFY2(err.size() < 200, qPrintable(err.left(400)));
    }
  }

  // An unterminated string of a megabyte: nlohmann's message quotes the whole token; ours a piece.
  void aMalformedHugeValueIsQuotedShort() {
    const std::string text = "{\"format\": \"shardlab.project\", \"version\": 1, \"name\": \"" + std::string(1 << 20, 'n');
    const QString err = parse_error(text);
    VERIFY_CONTAINS(err, QString::fromStdString(kFile) + ": malformed JSON at line 1");
    VERIFY_CONTAINS(err, "bytes)");
    QVERIFY2(err.size() < 400, qPrintable(err.left(600)));
  }

  // A key given twice in one object is refused, naming it and where it is (nlohmann would keep one
  // of the two in silence); and 700,000 keys parse in time linear in the text (an ordered object
  // searched every key it already had: minutes).
  void aKeyGivenTwiceIsRefused() {
    const std::string text = small_project().dump(2);
    std::string twice = text;
    twice.insert(twice.find("\"training\": {") + 13, "\"seed\": 1, \"seed\": 2, ");
    VERIFY_CONTAINS(parse_error(twice), QString::fromStdString(kFile) + ": duplicate key \"seed\" in training");
    // Written as text: building it as an ordered_json would itself search every key.
    std::string many = text.substr(0, text.rfind('}'));
    for (int i = 0; i < 700000; ++i) many += ", \"k" + std::to_string(i) + "\": " + std::to_string(i);
    many += "}";
    VERIFY_CONTAINS(parse_error(many), QString::fromStdString(kFile) + ": k0: unknown field");
  }

  // The documented limits (README, "Projects"): a string of 64 KiB at most (a description of a
  // megabyte, one unbroken word, is refused naming where it is), and 100,000 nodes.
  void projectsHaveLimits() {
    Json big = small_project();
    big["description"] = std::string(1 << 20, 'w');
    VERIFY_CONTAINS(parse_error(big), QString::fromStdString(kFile) + ": a string of 1048576 bytes at description (at most 65536)");
    big["description"] = std::string(65536, 'w');
    QVERIFY(parse_error(big).isEmpty());
    // 100,001 nodes, written as text (an ordered_json would search every key it builds).
    std::string nodes = "[{\"name\": \"x\", \"type\": \"Input\", \"params\": {\"shape\": [4]}}";
    for (int i = 0; i < 100000; ++i) nodes += ", {\"name\": \"r" + std::to_string(i) + "\", \"type\": \"ReLU\"}";
    nodes += "]";
    Json many = small_project();
    many["graph"]["nodes"] = "NODES";
    std::string text = many.dump();
    text.replace(text.find("\"NODES\""), 7, nodes);
    VERIFY_CONTAINS(parse_error(text), QString::fromStdString(kFile) + ": graph: 100001 nodes (at most 100000)");
  }

  // A FIFO in place of the project is refused at once (reading it would wait for a writer).
  void aFifoIsRefusedNotWaitedOn() {
    QTemporaryDir dir;
    const fs::path fifo = fs::path(dir.path().toStdString()) / "fifo.shardlab.json";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const QString err = error_of([&] { project::load_project(fifo); });
    VERIFY_CONTAINS(err, QString::fromStdString(fifo.string()) + ": is a FIFO");
  }

  // Every file of the project fuzzer's corpus (tests/fuzz/corpus/project, seeds and findings alike)
  // loaded from its path: a valid-* file loads, a bad-* file is refused with an Error naming it, any
  // other either; nothing else escapes. (CTest's project_corpus runs the same files through the
  // fuzzer's own checks; this one keeps the seeds meaning what their names say.)
  void fuzzCorpusIsAcceptedOrRejectedCleanly() {
    const fs::path corpus = fs::path(SHARDLAB_SOURCE_DIR) / "tests/fuzz/corpus/project";
    QVERIFY2(fs::is_directory(corpus), corpus.c_str());
    int accepted = 0, rejected = 0;
    for (const auto& e : fs::directory_iterator(corpus)) {
      const std::string name = e.path().filename().string();
      const QString err = error_of([&] { project::load_project(e.path()); });
      if (!err.isEmpty()) VERIFY_CONTAINS(err, QString::fromStdString(e.path().string()) + ": ");
      if (name.rfind("valid-", 0) == 0) QVERIFY2(err.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + err));
      if (name.rfind("bad-", 0) == 0) QVERIFY2(!err.isEmpty(), qPrintable(QString::fromStdString(name) + " was accepted"));
      ++(err.isEmpty() ? accepted : rejected);
    }
    QVERIFY(accepted >= 10);
    QVERIFY(rejected >= 10);
  }

  // ---- what an editor needs ---------------------------------------------------------------------

  void editorSectionIsKeptAsWritten() {
    Json j = small_project();
    j["editor"] = Json::parse(R"({"positions": {"x": [0, 0], "out": [300, 40]}, "expanded": {}})");
    project::Project p = project::parse_project(j.dump(2), kFile);
    QCOMPARE(p.editor["positions"]["out"][0].get<int>(), 300);
    QCOMPARE(Json::parse(project::to_json_string(p))["editor"], j["editor"]);
    j["editor"] = "left";
    VERIFY_CONTAINS(error_of([&] { project::parse_project(j.dump(2), kFile); }), "small.shardlab.json: editor: expected an object");
  }

  void structureValidationOpensAGraphWithShapeErrors() {
    Json j = small_project();
    j["graph"]["edges"].erase(j["graph"]["edges"].begin() + 1);  // unfeed a node
    j["loss"]["output"] = "gone";
    QVERIFY(!error_of([&] { project::parse_project(j.dump(2), kFile); }).isEmpty());
    project::Project p = project::parse_project(j.dump(2), kFile, project::Validation::Structure);
    QVERIFY(!project::analyze_project(p).ok());
    QCOMPARE(p.loss.output, std::string("gone"));
    // Structure still refuses what is not a project.
    j["graph"]["nodes"][0]["colour"] = "red";
    VERIFY_CONTAINS(error_of([&] { project::parse_project(j.dump(2), kFile, project::Validation::Structure); }), "colour: unknown field");
  }

  // A GroupNorm whose groups do not divide the channels names its field, the counts and the fix.
  void groupsThatDoNotDivideTheChannelsAreNamed() {
    Json j = Json::parse(std::ifstream(std::string(SHARDLAB_SOURCE_DIR) + "/tests/reference/gn-tiny.shardlab.json"));
    j["graph"]["nodes"][2]["params"]["num_groups"] = 3;
    project::Project p = project::parse_project(j.dump(2), kFile, project::Validation::Structure);
    const graph::GraphReport r = project::analyze_project(p);
    QCOMPARE(r.errors.size(), size_t(1));
    VERIFY_CONTAINS(QString::fromStdString(r.errors[0]), "norm1");
    VERIFY_CONTAINS(QString::fromStdString(r.errors[0]), "num_groups: 3 groups do not divide the input's 8 channels; use a divisor of 8");
  }

  void graphJsonRoundTrips() {
    project::Project p = project::load_project(projects_dir() / "dot-relu-dot.shardlab.json");
    const Json j = project::graph_to_json(p.graph, false);
    graph::Graph g = project::graph_from_json(j, "copy", false);
    QCOMPARE(project::graph_to_json(g, false), j);
    VERIFY_CONTAINS(error_of([] { project::graph_from_json(Json::object(), "clipboard", false); }), "clipboard.nodes: missing");
  }

  // ---- the base project -------------------------------------------------------------------------

  void smallProjectParses() {
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    QCOMPARE(p.name, std::string("small"));
    QCOMPARE(p.graph.nodes.size(), size_t(4));
    QCOMPARE(p.loss.output, std::string("out"));
    QCOMPARE(p.training.batch_size, int64_t(8));
    QCOMPARE(p.data.type, std::string("synthetic"));
  }

  // ---- JSON and the file's header -----------------------------------------------------------------

  void malformedJsonReportsLineAndColumnOfABadLiteral() {
    // Line 4, column 11 is the 'o' of oops.
    const std::string text = "{\n  \"format\": \"shardlab.project\",\n  \"version\": 1,\n  \"name\": oops\n}\n";
    QString msg = parse_error(text);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "malformed JSON");
    VERIFY_CONTAINS(msg, "line 4, column 11");
    VERIFY_CONTAINS(msg, "invalid literal");  // the reason, not only where
    VERIFY_LACKS(msg, "json.exception");      // nlohmann's internal prefix is not for users
  }

  void malformedJsonReportsLineAndColumnOfAMissingComma() {
    // Line 3 lacks its comma; the parser stops at the closing quote of "name" (line 4, column 8).
    const std::string text = "{\n  \"format\": \"shardlab.project\",\n  \"version\": 1\n  \"name\": \"x\"\n}\n";
    QString msg = parse_error(text);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "line 4, column 8");
    VERIFY_CONTAINS(msg, "expected '}'");
    VERIFY_LACKS(msg, "json.exception");
    QCOMPARE(msg.count("line "), 1);  // one position, not nlohmann's as well
  }

  void malformedJsonReportsTruncatedFileAtItsEnd() {
    const std::string text = "{\n  \"format\": \"shardlab.project\",\n  \"version\": 1,\n";
    QString msg = parse_error(text);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "line 4, column 1");
    VERIFY_CONTAINS(msg, "end of input");
  }

  void wrongFormatIsNotAShardlabProject() {
    Json j = small_project();
    j["format"] = "keras.model";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "format");
    VERIFY_CONTAINS(msg, "not a Shardlab project");
  }

  void missingFormatIsNotAShardlabProject() {
    Json j = small_project();
    j.erase("format");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "not a Shardlab project");
  }

  void otherJsonFileIsNotAShardlabProject() {
    // Some other tool's JSON: "not a project" is the useful message, not "unknown field".
    QString msg = parse_error(std::string(R"({"name": "left-pad", "dependencies": {}})"));
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "not a Shardlab project");
    msg = parse_error(std::string("[1, 2, 3]"));
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "not a Shardlab project");
  }

  void wrongVersionIsRejected() {
    Json j = small_project();
    j["version"] = 2;
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "version");
    VERIFY_CONTAINS(msg, "2");
    VERIFY_CONTAINS(msg, "reads 1");
    j.erase("version");
    msg = parse_error(j);
    VERIFY_CONTAINS(msg, "version: missing");
  }

  void unknownTopLevelFieldIsNamed() {
    Json j = small_project();
    j["optimiser"] = Json::object();
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "optimiser");
    VERIFY_CONTAINS(msg, "unknown field");
    VERIFY_CONTAINS(msg, "optimizer");  // lists what is allowed
  }

  void unknownNodeFieldNamesNodeAndField() {
    Json j = small_project();
    j["graph"]["nodes"][1]["parms"] = {{"features", 4}};
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'hidden'");
    VERIFY_CONTAINS(msg, "parms");
    VERIFY_CONTAINS(msg, "unknown field");
  }

  void unknownLayerParamNamesNodeAndField() {
    Json j = small_project();
    j["graph"]["nodes"][1]["params"]["featurs"] = 4;
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'hidden'");
    VERIFY_CONTAINS(msg, "featurs");
    VERIFY_CONTAINS(msg, "unknown field");
  }

  // A missing top-level section reads "FILE: loss: missing" (the project fuzzer found
  // "FILE:.loss: missing").
  void missingSectionIsNamedAfterTheFile() {
    for (const char* section : {"graph", "loss", "optimizer", "data"}) {
      Json j = small_project();
      j.erase(section);
      QCOMPARE(parse_error(j), QString("%1: %2: missing").arg(kFile, section));
    }
  }

  void missingLayerParamIsNamed() {
    Json j = small_project();
    j["graph"]["nodes"][1].erase("params");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'hidden'");
    VERIFY_CONTAINS(msg, "features: missing");
  }

  // ---- wiring -----------------------------------------------------------------------------------

  void unknownLayerTypeNamesNodeAndListsKnownTypes() {
    Json j = small_project();
    j["graph"]["nodes"][1]["type"] = "LSTM";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'hidden'");
    VERIFY_CONTAINS(msg, "unknown layer type 'LSTM'");
    for (const std::string& t : graph::layer_types()) VERIFY_CONTAINS(msg, QString::fromStdString(t));
  }

  void unconnectedPortIsAMissingInput() {
    Json j = small_project();
    j["graph"]["edges"].erase(1);  // hidden.out -> drop.in
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'drop'");
    VERIFY_CONTAINS(msg, "missing input");
    VERIFY_CONTAINS(msg, "'in'");
  }

  void halfConnectedAddIsAMissingInput() {
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), node("add", "Add")}, {edge("x.out", "add.a")}, "add");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'add'");
    VERIFY_CONTAINS(msg, "missing input");
    VERIFY_CONTAINS(msg, "'b'");
  }

  void portWithTwoEdgesIsRejected() {
    Json j = small_project();
    j["graph"]["edges"].push_back(edge("x.out", "drop.in"));
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'drop'");
    VERIFY_CONTAINS(msg, "more than one edge");
  }

  void edgeToMissingNodeIsDangling() {
    Json j = small_project();
    j["graph"]["edges"].push_back(edge("out.out", "nowhere.in"));
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "dangling edge out.out -> nowhere.in");
    VERIFY_CONTAINS(msg, "no node 'nowhere'");
  }

  void edgeFromMissingNodeIsDangling() {
    Json j = small_project();
    j["graph"]["edges"][0]["from"] = "ghost.out";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "dangling edge ghost.out -> hidden.in");
    VERIFY_CONTAINS(msg, "no node 'ghost'");
  }

  void edgeToMissingPortIsDangling() {
    Json j = small_project();
    j["graph"]["edges"][0]["to"] = "hidden.input";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "dangling edge x.out -> hidden.input");
    VERIFY_CONTAINS(msg, "node 'hidden' has no input port 'input'");
    VERIFY_CONTAINS(msg, "ports: in");
  }

  void edgeFromMissingPortIsDangling() {
    Json j = small_project();
    j["graph"]["edges"][0]["from"] = "x.output";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'x' has no output port 'output'");
  }

  void edgeWithoutDotIsNotAPort() {
    Json j = small_project();
    j["graph"]["edges"][1]["to"] = "drop";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "edges[1].to");
    VERIFY_CONTAINS(msg, "'drop' is not a port");
    VERIFY_CONTAINS(msg, "node.port");
  }

  void cycleListsTheNodesOnIt() {
    // x -> add.a; add -> d1 -> add.b closes a loop; head hangs off it but is not on it.
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), node("add", "Add"), node("d1", "Dense", {{"features", 16}}),
                         node("head", "Dense", {{"features", 10}})},
                        {edge("x.out", "add.a"), edge("d1.out", "add.b"), edge("add.out", "d1.in"), edge("d1.out", "head.in")},
                        "head");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    QStringList cycle = lines_with(msg, "cycle");
    QVERIFY2(cycle.size() == 1, qPrintable(msg));
    VERIFY_CONTAINS(cycle[0], "add");
    VERIFY_CONTAINS(cycle[0], "d1");
    VERIFY_LACKS(cycle[0], "head");  // downstream of the loop, not on it
  }

  void selfLoopIsACycle() {
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), node("add", "Add")},
                        {edge("x.out", "add.a"), edge("add.out", "add.b")}, "add");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "cycle through nodes add");
  }

  void duplicateNodeNamesAreRejected() {
    Json j = small_project();
    j["graph"]["nodes"][2]["name"] = "hidden";
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'hidden'");
    VERIFY_CONTAINS(msg, "used by two nodes");
  }

  void graphNeedsExactlyOneInput() {
    Json j = small_project();
    j["graph"]["nodes"].push_back(node("y", "Input", {{"shape", {16}}}));
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "exactly one Input node, found 2");

    j = small_project();
    j["graph"]["nodes"][0]["type"] = "ReLU";
    j["graph"]["nodes"][0].erase("params");
    msg = parse_error(j);
    VERIFY_CONTAINS(msg, "exactly one Input node, found 0");
  }

  void everyGraphErrorIsReportedWithTheFileName() {
    Json j = small_project();
    j["graph"]["nodes"][2]["type"] = "Dropuot";
    j["graph"]["edges"].push_back(edge("out.out", "nowhere.in"));
    QString msg = parse_error(j);
    QStringList lines = msg.split('\n');
    QVERIFY2(lines.size() >= 2, qPrintable(msg));
    for (const QString& l : lines) VERIFY_CONTAINS(l, QString(kFile) + ": ");
    VERIFY_CONTAINS(msg, "Dropuot");
    VERIFY_CONTAINS(msg, "nowhere");
  }

  // ---- shapes -----------------------------------------------------------------------------------

  void addOfDifferentShapesGivesBothShapes() {
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), node("a", "Dense", {{"features", 16}}),
                         node("b", "Dense", {{"features", 10}}), node("add", "Add")},
                        {edge("x.out", "a.in"), edge("x.out", "b.in"), edge("a.out", "add.a"), edge("b.out", "add.b")}, "add");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'add'");
    VERIFY_CONTAINS(msg, "(batch 8, mlp 16)");
    VERIFY_CONTAINS(msg, "(batch 8, mlp 10)");
    VERIFY_CONTAINS(msg, "different shapes");
  }

  void repeatBlockThatChangesTheShapeIsRejected() {
    Json block = {{"nodes", {node("W", "Dense", {{"features", 8}})}}, {"edges", {edge("@in.out", "W.in")}}, {"output", "W"}};
    Json rep = node("blocks", "Repeat", {{"count", 2}});
    rep["body"] = block;
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), rep}, {edge("x.out", "blocks.in")}, "blocks");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'blocks'");
    VERIFY_CONTAINS(msg, "(batch 8, mlp 8)");
    VERIFY_CONTAINS(msg, "(batch 8, embed 16)");
    VERIFY_CONTAINS(msg, "differs");
  }

  void errorInsideARepeatBlockNamesTheInnerNode() {
    Json block = {{"nodes", {node("W", "Dense", {{"features", 0}})}}, {"edges", {edge("@in.out", "W.in")}}, {"output", "W"}};
    Json rep = node("blocks", "Repeat", {{"count", 2}});
    rep["body"] = block;
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), rep}, {edge("x.out", "blocks.in")}, "blocks");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "blocks/W");
    VERIFY_CONTAINS(msg, "features");
  }

  void repeatBodyOutputMustExist() {
    Json block = {{"nodes", {node("W", "Dense", {{"features", 16}})}}, {"edges", {edge("@in.out", "W.in")}}, {"output", "V"}};
    Json rep = node("blocks", "Repeat", {{"count", 2}});
    rep["body"] = block;
    Json j = with_graph({node("x", "Input", {{"shape", {16}}}), rep}, {edge("x.out", "blocks.in")}, "blocks");
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "node 'blocks'");
    VERIFY_CONTAINS(msg, "body.output");
    VERIFY_CONTAINS(msg, "'V'");
  }

  // ---- bad values -------------------------------------------------------------------------------

  void badValueNamesFieldAndReason_data() {
    QTest::addColumn<QString>("pointer");  // JSON pointer into the small project
    QTest::addColumn<QString>("value");    // JSON text to put there
    QTest::addColumn<QStringList>("expected");

    QTest::newRow("dense features 0") << "/graph/nodes/1/params/features" << "0"
                                      << QStringList{"node 'hidden'", "features", "bad value 0", "positive integer"};
    QTest::newRow("dense features -3") << "/graph/nodes/1/params/features" << "-3"
                                       << QStringList{"node 'hidden'", "features", "-3", "positive integer"};
    QTest::newRow("dense features \"ten\"") << "/graph/nodes/1/params/features" << "\"ten\""
                                            << QStringList{"node 'hidden'", "features", "\"ten\"", "positive integer"};
    QTest::newRow("dense features 2.5") << "/graph/nodes/1/params/features" << "2.5"
                                        << QStringList{"node 'hidden'", "features", "2.5"};
    QTest::newRow("unknown initializer") << "/graph/nodes/1/params/kernel_init" << "\"glorot\""
                                         << QStringList{"node 'hidden'", "kernel_init", "unknown initializer 'glorot'", "lecun_normal"};
    QTest::newRow("dropout rate 1.5") << "/graph/nodes/2/params/rate" << "1.5"
                                      << QStringList{"node 'drop'", "rate", "1.5"};
    QTest::newRow("dropout rate -0.1") << "/graph/nodes/2/params/rate" << "-0.1"
                                       << QStringList{"node 'drop'", "rate", "-0.1"};
    QTest::newRow("param_axes of the wrong rank") << "/graph/nodes/1/param_axes" << R"({"kernel": ["embed"]})"
                                                  << QStringList{"node 'hidden'", "param_axes.kernel", "1 names", "rank 2"};
    QTest::newRow("param_axes for a parameter the layer lacks")
        << "/graph/nodes/1/param_axes" << R"({"kernal": ["embed", "mlp"]})"
        << QStringList{"node 'hidden'", "param_axes.kernal", "no parameter 'kernal'", "kernel, bias"};
    QTest::newRow("param_axes on a parameter-free layer") << "/graph/nodes/2/param_axes" << R"({"mask": ["mlp"]})"
                                                          << QStringList{"node 'drop'", "param_axes.mask", "none"};
    QTest::newRow("param_axes not names") << "/graph/nodes/1/param_axes" << R"({"kernel": ["embed", 3]})"
                                          << QStringList{"node 'hidden'", "param_axes.kernel", "3"};
    QTest::newRow("output_axes of the wrong rank") << "/graph/nodes/1/output_axes" << R"(["batch"])"
                                                   << QStringList{"node 'hidden'", "output_axes", "rank 2"};
    QTest::newRow("input shape 0") << "/graph/nodes/0/params/shape" << "[0]"
                                   << QStringList{"node 'x'", "shape", "0"};
    QTest::newRow("optimizer rmsprop") << "/optimizer/type" << "\"rmsprop\""
                                       << QStringList{"optimizer.type", "unknown optimizer 'rmsprop'", "adam"};
    QTest::newRow("optimizer field of another optimizer") << "/optimizer/momentum" << "0.9"
                                                          << QStringList{"optimizer.momentum", "only sgd"};
    QTest::newRow("negative learning rate") << "/optimizer/learning_rate" << "-1"
                                            << QStringList{"optimizer.learning_rate", "-1"};
    QTest::newRow("decay_steps < warmup_steps")
        << "/optimizer/learning_rate"
        << R"({"schedule": "warmup_cosine_decay", "peak_value": 0.01, "warmup_steps": 100, "decay_steps": 50})"
        << QStringList{"optimizer.learning_rate.decay_steps", "50", "warmup_steps 100"};
    QTest::newRow("unknown schedule") << "/optimizer/learning_rate" << R"({"schedule": "step"})"
                                      << QStringList{"optimizer.learning_rate.schedule", "'step'", "warmup_cosine_decay"};
    QTest::newRow("unknown loss") << "/loss/type" << "\"hinge\""
                                  << QStringList{"loss.type", "unknown loss 'hinge'", "softmax_cross_entropy", "mean_squared_error"};
    QTest::newRow("loss output names a missing node") << "/loss/output" << "\"logits\""
                                                      << QStringList{"loss.output", "no node 'logits'"};
    QTest::newRow("batch_size 0") << "/training/batch_size" << "0"
                                  << QStringList{"training.batch_size", "bad value 0", ">= 1"};
    QTest::newRow("batch_size \"8\"") << "/training/batch_size" << "\"8\""
                                      << QStringList{"training.batch_size", "\"8\""};
    QTest::newRow("unknown training field") << "/training/step" << "5"
                                            << QStringList{"training.step", "unknown field"};
    QTest::newRow("shuffle not a boolean") << "/training/shuffle" << "1"
                                           << QStringList{"training.shuffle", "true or false"};
    QTest::newRow("checkpoint not an object") << "/training/checkpoint" << "\"ckpt\""
                                              << QStringList{"training.checkpoint", "expected an object"};
    QTest::newRow("checkpoint without dir") << "/training/checkpoint" << R"({"keep": 2})"
                                            << QStringList{"training.checkpoint.dir", "missing"};
    QTest::newRow("checkpoint dir empty") << "/training/checkpoint" << R"({"dir": ""})"
                                          << QStringList{"training.checkpoint.dir", "bad value \"\"", "folder"};
    QTest::newRow("checkpoint keep 0") << "/training/checkpoint" << R"({"dir": "ckpt", "keep": 0})"
                                       << QStringList{"training.checkpoint.keep", "bad value 0", ">= 1"};
    QTest::newRow("checkpoint save_every -5") << "/training/checkpoint" << R"({"dir": "ckpt", "save_every": -5})"
                                              << QStringList{"training.checkpoint.save_every", "-5", ">= 0"};
    QTest::newRow("unknown checkpoint field") << "/training/checkpoint" << R"({"dir": "ckpt", "every": 5})"
                                              << QStringList{"training.checkpoint.every", "unknown field", "dir, save_every, keep"};
    QTest::newRow("unknown synthetic kind") << "/data/kind" << "\"zeros\""
                                            << QStringList{"data.kind", "zeros"};
    QTest::newRow("unknown data type") << "/data/type" << "\"csv\""
                                       << QStringList{"data.type", "csv"};
  }

  void badValueNamesFieldAndReason() {
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QStringList, expected);
    Json j = small_project();
    j[Json::json_pointer(pointer.toStdString())] = Json::parse(value.toStdString());
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, QString(kFile) + ": ");
    for (const QString& e : expected) VERIFY_CONTAINS(msg, e);
  }

  // training.checkpoint: where, how often and how many checkpoints a run keeps; a relative folder
  // is the project file's, and it is written back as it was read.
  void trainingCheckpointIsReadAndKept() {
    Json j = small_project();
    j["training"]["checkpoint"] = {{"dir", "ckpt"}, {"save_every", 50}, {"keep", 2}};
    project::Project p = project::parse_project(j.dump(), kFile);
    QVERIFY(p.training.checkpoint.has_value());
    QCOMPARE(QString::fromStdString(p.training.checkpoint->dir), QString("ckpt"));
    QCOMPARE(p.training.checkpoint->save_every, int64_t(50));
    QCOMPARE(p.training.checkpoint->keep, int64_t(2));
    p.file = "/work/runs/small.shardlab.json";
    QCOMPARE(QString::fromStdString(project::checkpoint_dir(p).string()), QString("/work/runs/ckpt"));
    p.training.checkpoint->dir = "/tmp/elsewhere";
    QCOMPARE(QString::fromStdString(project::checkpoint_dir(p).string()), QString("/tmp/elsewhere"));
    const project::Project again = project::parse_project(project::to_json_string(project::parse_project(j.dump(), kFile)), kFile);
    QCOMPARE(again.training_json["checkpoint"], j["training"]["checkpoint"]);
    // Only the folder is required; without the field there is no folder.
    j["training"]["checkpoint"] = {{"dir", "ckpt"}};
    p = project::parse_project(j.dump(), kFile);
    QCOMPARE(p.training.checkpoint->save_every, int64_t(0));
    QCOMPARE(p.training.checkpoint->keep, int64_t(3));
    j["training"].erase("checkpoint");
    p = project::parse_project(j.dump(), kFile);
    QVERIFY(!p.training.checkpoint.has_value());
    QVERIFY(project::checkpoint_dir(p).empty());
  }

  void stepsAndEpochsBothZeroIsRejected() {
    Json j = small_project();
    j["training"] = {{"steps", 0}, {"epochs", 0}};
    QString msg = parse_error(j);
    VERIFY_CONTAINS(msg, kFile);
    VERIFY_CONTAINS(msg, "training");
    VERIFY_CONTAINS(msg, "steps or epochs");
  }

  // ---- files ------------------------------------------------------------------------------------

  void missingFileNamesThePath() {
    TempDir dir;
    fs::path f = dir.path / "absent.shardlab.json";
    QString msg = error_of([&] { project::load_project(f); });
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()));
    VERIFY_CONTAINS(msg, "no such file");
  }

  void loadErrorsNameThePath() {
    TempDir dir;
    fs::path f = dir.path / "broken.shardlab.json";
    Json j = small_project();
    j["graph"]["nodes"][1]["params"]["features"] = 0;
    write_text(f, j.dump(2));
    QString msg = error_of([&] { project::load_project(f); });
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()) + ": ");
    VERIFY_CONTAINS(msg, "node 'hidden'");
  }

  void shippedProjectsLoad_data() {
    QTest::addColumn<QString>("file");
    for (const fs::path& f : project_files()) QTest::newRow(f.filename().c_str()) << QString::fromStdString(f.string());
  }

  void shippedProjectsLoad() {
    QFETCH(QString, file);
    project::Project p;
    QString msg = error_of([&] { p = project::load_project(file.toStdString()); });
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
    QVERIFY(!p.name.empty());
    QVERIFY(project::analyze_project(p).ok());
  }

  void shippedProjectsAreCanonical_data() { shippedProjectsLoad_data(); }

  void shippedProjectsAreCanonical() {
    QFETCH(QString, file);
    const std::string text = read_text(file.toStdString());
    const std::string again = project::to_json_string(project::load_project(file.toStdString()));
    if (again != text) {
      size_t at = std::mismatch(text.begin(), text.end(), again.begin(), again.end()).first - text.begin();
      QFAIL(qPrintable(QString("to_json_string differs from the file at byte %1:\nfile:  %2\nsaved: %3")
                           .arg(at)
                           .arg(QString::fromStdString(text.substr(at > 40 ? at - 40 : 0, 80)))
                           .arg(QString::fromStdString(again.substr(at > 40 ? at - 40 : 0, 80)))));
    }
  }

  void shippedProjectsSurviveSaveAndLoad_data() { shippedProjectsLoad_data(); }

  void shippedProjectsSurviveSaveAndLoad() {
    QFETCH(QString, file);
    TempDir dir;
    project::Project p = project::load_project(file.toStdString());
    fs::path out = dir.path / fs::path(file.toStdString()).filename();
    project::save_project(p, out);
    QCOMPARE(read_text(out), read_text(file.toStdString()));
    project::Project q = project::load_project(out);
    QCOMPARE(project::to_json_string(q), project::to_json_string(p));
    size_t entries = 0;  // no temporary left behind
    for (auto it = fs::directory_iterator(dir.path); it != fs::directory_iterator(); ++it) ++entries;
    QCOMPARE(entries, size_t(1));
  }

  void saveReplacesAnExistingFile() {
    TempDir dir;
    fs::path f = dir.path / "p.shardlab.json";
    write_text(f, "old contents");
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    project::save_project(p, f);
    QCOMPARE(read_text(f), project::to_json_string(p));
    QCOMPARE(project::to_json_string(project::load_project(f)), project::to_json_string(p));
  }

  // Saving goes through the engine's writer (util/output_file.h), as the GUI's File > Save does:
  // never through a link, onto a FIFO, or into a checkpoint's step directory.
  void saveRefusesWhatIsNotARegularFileOrACheckpoints() {
    TempDir dir;
    write_text(dir.path / "victim", "precious");
    fs::create_symlink(dir.path / "victim", dir.path / "link.shardlab.json");
    QCOMPARE(::mkfifo((dir.path / "fifo.shardlab.json").c_str(), 0644), 0);
    fs::create_directories(dir.path / "ck" / "step_000002");
    write_text(dir.path / "ck" / "step_000002" / "COMMITTED", "committed\n");
    const project::Project p = project::parse_project(small_project().dump(2), kFile);
    VERIFY_CONTAINS(error_of([&] { project::save_project(p, dir.path / "link.shardlab.json"); }), "is a symbolic link");
    VERIFY_CONTAINS(error_of([&] { project::save_project(p, dir.path / "fifo.shardlab.json"); }), "is a FIFO");
    VERIFY_CONTAINS(error_of([&] { project::save_project(p, dir.path / "ck" / "step_000002" / "p.shardlab.json"); }),
                    "lies in the checkpoint directory");
    QCOMPARE(read_text(dir.path / "victim"), std::string("precious"));
    QVERIFY(!fs::exists(dir.path / "ck" / "step_000002" / "p.shardlab.json"));
  }

  void saveIntoMissingDirectoryThrows() {
    TempDir dir;
    fs::path f = dir.path / "no-such-dir" / "p.shardlab.json";
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    QString msg = error_of([&] { project::save_project(p, f); });
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()));
    VERIFY_LACKS(msg, "not a shardlab::Error");
    QVERIFY(!fs::exists(dir.path / "no-such-dir"));
  }

  void saveOverANonEmptyDirectoryThrowsAndKeepsIt() {
    TempDir dir;
    fs::path f = dir.path / "p.shardlab.json";
    fs::create_directories(f);
    write_text(f / "keep.txt", "keep");
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    QString msg = error_of([&] { project::save_project(p, f); });
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()));
    VERIFY_LACKS(msg, "not a shardlab::Error");
    QVERIFY(fs::is_directory(f));
    QCOMPARE(read_text(f / "keep.txt"), std::string("keep"));
    // Nothing but the original entries is left in the folder.
    int entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
    QCOMPARE(entries, 1);
  }

  void failedSaveLeavesTheExistingFileUntouched() {
    // The temporary cannot be created (its name, the target's plus a suffix, is longer than a
    // file name may be), so the save fails before the rename: the file that was there must be
    // exactly as it was. Root hits this failure too.
    TempDir dir;
    fs::path f = dir.path / (std::string(240, 'p') + ".shardlab.json");
    const std::string before = project::to_json_string(project::load_project(projects_dir() / "fashion-mlp.shardlab.json"));
    write_text(f, before);
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    QString msg = error_of([&] { project::save_project(p, f); });
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()));
    VERIFY_LACKS(msg, "not a shardlab::Error");
    QCOMPARE(read_text(f), before);
  }

  void saveIntoReadOnlyDirectoryThrowsAndKeepsTheFile() {
    if (::geteuid() == 0) QSKIP("root writes into read-only folders");
    TempDir dir;
    fs::path f = dir.path / "p.shardlab.json";
    write_text(f, "previous");
    fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
    project::Project p = project::parse_project(small_project().dump(2), kFile);
    QString msg = error_of([&] { project::save_project(p, f); });
    fs::permissions(dir.path, fs::perms::owner_all, fs::perm_options::add);
    VERIFY_CONTAINS(msg, QString::fromStdString(f.string()));
    VERIFY_LACKS(msg, "not a shardlab::Error");
    QCOMPARE(read_text(f), std::string("previous"));
  }

  // ---- analysis ---------------------------------------------------------------------------------

  void fashionMlpShapesAndParameters() {
    project::Project p = project::load_project(projects_dir() / "fashion-mlp.shardlab.json");
    graph::GraphReport r = project::analyze_project(p);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());

    const graph::NodeReport* image = r.find("image");
    QVERIFY(image);
    QCOMPARE(image->output.shape, (Shape_{128, 28, 28}));
    QCOMPARE(image->output.axes, (Axes{"batch", "height", "width"}));

    const graph::NodeReport* flatten = r.find("flatten");
    QVERIFY(flatten);
    QCOMPARE(flatten->output.shape, (Shape_{128, 784}));
    QCOMPARE(flatten->output.axes, (Axes{"batch", "embed"}));

    const graph::NodeReport* dense1 = r.find("dense1");
    QVERIFY(dense1);
    QCOMPARE(dense1->output.shape, (Shape_{128, 256}));
    QCOMPARE(dense1->output.axes, (Axes{"batch", "mlp"}));
    QCOMPARE(graph::describe(dense1->output), std::string("(batch 128, mlp 256)"));
    const graph::ParamInfo* kernel = find_param(*dense1, "kernel");
    QVERIFY(kernel);
    QCOMPARE(kernel->shape, (Shape_{784, 256}));
    QCOMPARE(kernel->axes, (Axes{"embed", "mlp"}));
    QCOMPARE(kernel->init.type, std::string("lecun_normal"));
    const graph::ParamInfo* bias = find_param(*dense1, "bias");
    QVERIFY(bias);
    QCOMPARE(bias->shape, (Shape_{256}));
    QCOMPARE(bias->axes, (Axes{"mlp"}));
    QCOMPARE(dense1->param_count, int64_t(784 * 256 + 256));

    const graph::NodeReport* dense2 = r.find("dense2");
    QVERIFY(dense2);
    QCOMPARE(dense2->output.shape, (Shape_{128, 10}));
    QCOMPARE(dense2->output.axes, (Axes{"batch", "classes"}));
    QCOMPARE(find_param(*dense2, "kernel")->axes, (Axes{"mlp", "classes"}));
    QCOMPARE(find_param(*dense2, "bias")->axes, (Axes{"classes"}));

    int64_t total = 0;
    for (const auto& n : r.nodes) total += n.param_count;
    QCOMPARE(total, int64_t(203530));
    QCOMPARE(r.nodes.size(), size_t(5));
    QCOMPARE(r.nodes.front().name, std::string("image"));  // topological order
    QCOMPARE(r.nodes.back().name, std::string("dense2"));
  }

  void fashionMlpForwardFlops() {
    project::Project p = project::load_project(projects_dir() / "fashion-mlp.shardlab.json");
    graph::GraphReport r = project::analyze_project(p);
    QVERIFY(r.ok());
    // A matmul is 2*m*k*n; the bias add one per output element.
    QCOMPARE(r.find("dense1")->flops, 2.0 * 128 * 784 * 256 + 128.0 * 256);
    QCOMPARE(r.find("dense2")->flops, 2.0 * 128 * 256 * 10 + 128.0 * 10);
    QCOMPARE(r.find("image")->flops, 0.0);
    QCOMPARE(r.find("flatten")->flops, 0.0);  // a reshape moves nothing
  }

  void analysisFollowsTheBatchSize() {
    project::Project p = project::load_project(projects_dir() / "fashion-mlp.shardlab.json");
    p.training.batch_size = 4;
    graph::GraphReport r = project::analyze_project(p);
    QVERIFY(r.ok());
    QCOMPARE(r.find("dense2")->output.shape, (Shape_{4, 10}));
    QCOMPARE(r.find("dense1")->flops, 2.0 * 4 * 784 * 256 + 4.0 * 256);
  }

  void dotReluDotStacksItsBlockParameters() {
    project::Project p = project::load_project(projects_dir() / "dot-relu-dot.shardlab.json");
    graph::GraphReport r = project::analyze_project(p);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());
    const graph::NodeReport* blocks = r.find("blocks");
    QVERIFY(blocks);
    QCOMPARE(blocks->output.shape, (Shape_{8, 1024}));
    QCOMPARE(blocks->output.axes, (Axes{"batch", "embed"}));

    const graph::ParamInfo* w1 = find_param(*blocks, "W1/kernel");
    QVERIFY(w1);
    QCOMPARE(blocks->name + "/" + w1->name, std::string("blocks/W1/kernel"));
    QCOMPARE(w1->shape, (Shape_{4, 1024, 1024}));
    QCOMPARE(w1->axes, (Axes{"layer", "embed", "hidden"}));
    QCOMPARE(w1->layers, int64_t(4));
    QCOMPARE(w1->init.type, std::string("xavier_normal"));
    const graph::ParamInfo* w2 = find_param(*blocks, "W2/kernel");
    QVERIFY(w2);
    QCOMPARE(w2->shape, (Shape_{4, 1024, 1024}));
    QCOMPARE(w2->axes, (Axes{"layer", "hidden", "embed"}));
    QCOMPARE(blocks->params.size(), size_t(2));  // use_bias false: no biases
    QCOMPARE(blocks->param_count, int64_t(2) * 4 * 1024 * 1024);

    // The block's own nodes are reported by path, one layer's worth.
    QCOMPARE(blocks->body.size(), size_t(3));
    QCOMPARE(blocks->body[0].name, std::string("blocks/W1"));
    QCOMPARE(blocks->body[0].output.axes, (Axes{"batch", "hidden"}));
    QCOMPARE(blocks->body[0].params.at(0).shape, (Shape_{1024, 1024}));

    // Forward FLOPs: 4 layers of two 8x1024x1024 matmuls and a relu.
    QCOMPARE(blocks->flops, 4 * (2 * (2.0 * 8 * 1024 * 1024) + 8.0 * 1024));
  }
};

QTEST_APPLESS_MAIN(TestProject)
#include "test_project.moc"
