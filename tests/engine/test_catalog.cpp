// The layer catalog an editor builds its palette and forms from: every registered type is listed,
// a fresh node of each type is valid as created, every field the catalog offers is one the layer
// accepts, and each optional field's advertised default is what the layer does without it.
#include <QtTest>

#include "engine/graph/analysis.h"
#include "engine/graph/catalog.h"
#include "engine/util/error.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using graph::Json;

namespace {

// input (Input [12], or what the layer takes: an image, a sequence of features, token ids) ->
// node (the layer under test, both ports fed by the input for Add); Attend gets an Embed to share.
graph::Graph wired(const graph::Node& n) {
  graph::Graph g;
  graph::Node in = graph::new_node("Input", "x");
  in.params["shape"] = Json::array({12});
  if (n.type == "PatchEmbed") in.params["shape"] = Json::array({8, 8});
  if (n.type == "Conv2D" || n.type == "MaxPool2D" || n.type == "AvgPool2D") in.params["shape"] = Json::array({8, 8, 3});
  if (n.type == "MultiHeadAttention" || n.type == "PositionEmbedding" || n.type == "MeanPool") in.params["shape"] = Json::array({6, 16});
  if (n.type == "Reshape") in.params["shape"] = Json::array({16, 16});
  if (n.type == "GroupNorm") in.params["shape"] = Json::array({6, 6, 64});  // channels its 32 groups divide
  if (n.type == "Attend") in.params["shape"] = Json::array({6});  // token ids, through the Embed it shares
  g.nodes.push_back(in);
  if (n.type == "Input") return g;
  std::string from = "x";
  if (n.type == "Attend") {
    g.nodes.push_back(graph::new_node("Embed", "embed"));
    g.edges.push_back({{"x", "out"}, {"embed", "in"}});
    from = "embed";
  }
  g.nodes.push_back(n);
  for (const std::string& port : graph::layer_info(n.type).inputs) g.edges.push_back({{from, "out"}, {n.name, port}});
  return g;
}

std::string summary(const graph::GraphReport& r) {
  std::string s;
  for (const auto& n : r.nodes) {
    s += n.name + graph::describe(n.output);
    for (const auto& p : n.params) s += " " + p.name + shape_str(p.shape) + p.init.type;
  }
  return s;
}

}  // namespace

class TestCatalog : public QObject {
  Q_OBJECT

 private slots:
  void everyRegisteredTypeIsListedWithASummaryAndGroup() {
    const auto cat = graph::layer_catalog();
    QCOMPARE(cat.size(), graph::layer_types().size() + 1);  // and the ready-made TransformerBlock
    for (const auto& info : cat) {
      QVERIFY2(!info.summary.empty(), info.type.c_str());
      QVERIFY2(!info.category.empty(), info.type.c_str());
    }
    QCOMPARE(graph::layer_info("Add").inputs, (std::vector<std::string>{"a", "b"}));
    QVERIFY(graph::layer_info("Input").inputs.empty());
    VERIFY_CONTAINS(testing::error_of([] { graph::layer_info("Conv9D"); }), "unknown layer type 'Conv9D'");
  }

  // Attend shares an earlier Embed's table: a parameter that is not its own (it adds nothing to
  // the count), logits over the table's vocabulary; a node that is not there, or one without a
  // table, is an error naming the field.
  void attendSharesAnEarlierEmbedsTable() {
    graph::Node attend = graph::new_node("Attend", "head");
    graph::GraphReport r = graph::analyze(wired(attend), 4);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());
    const graph::NodeReport* head = r.find("head");
    QVERIFY(head);
    QCOMPARE(head->output.shape, (Shape{4, 6, 256}));
    QCOMPARE(head->output.axes.back(), std::string("vocab"));
    QCOMPARE(head->param_count, int64_t(0));
    QCOMPARE(head->params.at(0).tied, std::string("embed/embedding"));
    QCOMPARE(head->params.at(0).shape, r.find("embed")->params.at(0).shape);
    attend.params["embed"] = "nowhere";
    r = graph::analyze(wired(attend), 4);
    QVERIFY(!r.ok());
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "embed: there is no node 'nowhere' before this one");
    attend.params["embed"] = "x";  // the Input: no table
    r = graph::analyze(wired(attend), 4);
    QVERIFY(!r.ok());
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "embed: node 'x' (Input) has no parameter 'embedding'");
    // Its axes are the Embed's: an override on the sharing node is refused, not ignored.
    attend.params["embed"] = "embed";
    attend.param_axes = {{"embedding", {"vocab", "embed"}}};
    r = graph::analyze(wired(attend), 4);
    QVERIFY(!r.ok());
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "param_axes.embedding: a shared parameter keeps the axes of its own node");
  }

  void freshNodeOfEveryTypeIsValid_data() {
    QTest::addColumn<QString>("type");
    for (const std::string& t : graph::layer_types()) QTest::newRow(t.c_str()) << QString::fromStdString(t);
  }
  void freshNodeOfEveryTypeIsValid() {
    QFETCH(QString, type);
    graph::Node n = graph::new_node(type.toStdString(), "node");
    graph::GraphReport r = graph::analyze(wired(n), 4);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());
  }

  void everyOfferedFieldIsAcceptedAndItsDefaultIsTheBehaviour_data() { freshNodeOfEveryTypeIsValid_data(); }
  void everyOfferedFieldIsAcceptedAndItsDefaultIsTheBehaviour() {
    QFETCH(QString, type);
    const graph::Node fresh = graph::new_node(type.toStdString(), "node");
    const std::string plain = summary(graph::analyze(wired(fresh), 4));
    for (const graph::FieldInfo& f : graph::layer_info(type.toStdString()).fields) {
      if (f.required) {
        QVERIFY2(fresh.params.contains(f.key), f.key.c_str());
        continue;
      }
      // Input's "axes" default depends on the shape; an empty list is not a name list it takes.
      if (f.kind == graph::FieldInfo::Kind::NameList && f.value.empty()) continue;
      graph::Node explicit_default = fresh;
      explicit_default.params[f.key] = f.value;
      graph::GraphReport r = graph::analyze(wired(explicit_default), 4);
      QVERIFY2(r.ok(), (f.key + ": " + (r.errors.empty() ? "" : r.errors.front())).c_str());
      QCOMPARE(summary(r), plain);
    }
  }

  void repeatStartsWithABlockThatKeepsTheShape() {
    graph::Node r = graph::new_node("Repeat", "blocks");
    QVERIFY(r.body);
    QCOMPARE(r.body->output, std::string("relu"));
    QCOMPARE(r.params["count"].get<int>(), 2);
  }

  // The palette's ready-made block: a Repeat of pre-norm transformer blocks, valid as dropped on a
  // (batch, seq, 64) input, with a named error where the features differ.
  void transformerBlockIsARepeatOfEncoderBlocks() {
    const graph::Node b = graph::new_node("TransformerBlock", "blocks");
    QCOMPARE(b.type, std::string("Repeat"));
    QVERIFY(b.body);
    QCOMPARE(b.body->output, std::string("res2"));
    QVERIFY(b.body->find("attn") && b.body->find("attn")->type == "MultiHeadAttention");
    graph::Graph g;
    graph::Node in = graph::new_node("Input", "x");
    in.params["shape"] = Json::array({6, 64});
    g.nodes = {in, b};
    g.edges.push_back({{"x", "out"}, {"blocks", "in"}});
    graph::GraphReport r = graph::analyze(g, 4);
    QVERIFY2(r.ok(), r.errors.empty() ? "" : r.errors.front().c_str());
    QCOMPARE(r.find("blocks")->output.shape, (Shape{4, 6, 64}));
    QVERIFY(r.find("blocks/attn/weights") == nullptr);  // inner arrays are the layer's, not nodes
    QCOMPARE(r.find("blocks")->body.size(), size_t(8));
    g.nodes[0].params["shape"] = Json::array({6, 32});
    r = graph::analyze(g, 4);
    QVERIFY(!r.ok());
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "blocks");
  }

  // Shapes the transformer layers cannot take are named with the field at fault.
  void transformerLayersNameTheFieldThatDoesNotFit() {
    auto error_for = [](const std::string& type, Json params, Json shape) {
      graph::Node n = graph::new_node(type, "node");
      for (auto it = params.begin(); it != params.end(); ++it) n.params[it.key()] = it.value();
      graph::Graph g = wired(n);
      g.nodes[0].params["shape"] = shape;
      graph::GraphReport r = graph::analyze(g, 4);
      return r.errors.empty() ? QString() : QString::fromStdString(r.errors.front());
    };
    VERIFY_CONTAINS(error_for("MultiHeadAttention", {{"num_heads", 5}}, Json::array({6, 64})),
                    "num_heads: 5 does not divide the 64 query/key/value features");
    VERIFY_CONTAINS(error_for("MultiHeadAttention", {{"num_heads", 4}}, Json::array({64})), "must be (batch, seq, features)");
    VERIFY_CONTAINS(error_for("PatchEmbed", {{"patch", 5}}, Json::array({28, 28})), "patch: 5 does not divide the image's height 28");
    VERIFY_CONTAINS(error_for("Reshape", {{"shape", Json::array({5, 5})}}, Json::array({16, 16})), "shape: (5, 5) holds 25 values");
  }

  void uniqueNamesCountUpFromTheStem() {
    graph::Graph g;
    QCOMPARE(graph::unique_node_name(g, "dense"), std::string("dense"));
    g.nodes.push_back(graph::new_node("Dense", "dense"));
    QCOMPARE(graph::unique_node_name(g, "dense"), std::string("dense2"));
    g.nodes.push_back(graph::new_node("Dense", "dense2"));
    QCOMPARE(graph::unique_node_name(g, "dense2"), std::string("dense3"));
  }
};

QTEST_APPLESS_MAIN(TestCatalog)
#include "test_catalog.moc"
