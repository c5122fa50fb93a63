// Meshes, PartitionSpecs and their device-to-block maps, the text grid, logical axis rules with
// Flax's semantics (pinned against real Flax in tests/reference/sharding/expected.json), and the
// errors a bad layout gives.
#include <QtTest>
#include <fstream>

#include "engine/runtime/train_step.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/visualize.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using namespace shardlab::sharding;

using shardlab::testing::error_of;

namespace {

const std::string kSource = SHARDLAB_SOURCE_DIR;

PartitionSpec spec(std::vector<std::vector<std::string>> d) { return PartitionSpec(std::move(d)); }

}  // namespace

class TestSharding : public QObject {
  Q_OBJECT
 private slots:
  void meshNumbersDevicesRowMajor() {
    Mesh m = parse_mesh("data=2,model=4");
    QCOMPARE(m.device_count(), int64_t(8));
    QCOMPARE(m.coords(5), (std::vector<int64_t>{1, 1}));
    QCOMPARE(m.device_at({1, 3}), int64_t(7));
    QCOMPARE(m.group(5, {"model"}), (std::vector<int>{4, 5, 6, 7}));
    QCOMPARE(m.group(5, {"data"}), (std::vector<int>{1, 5}));
    QCOMPARE(m.group(5, {"model", "data"}), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
    QCOMPARE(m.str(), std::string("data=2,model=4"));
  }
  // A rule naming a mesh axis the mesh lacks is found up front, with the axis probably meant when
  // the name is a near miss, and the mesh's axes otherwise.
  void rulesNamingUnknownMeshAxesAreNamed() {
    const Mesh m = parse_mesh("data=2,model=4");
    const std::vector<std::string> e =
        unknown_rule_axes(parse_rules("batch=dta,hidden=model,embed=none,mlp=data+tensor"), m, "p.json: logical_axis_rules");
    QCOMPARE(e.size(), size_t(2));
    QCOMPARE(QString::fromStdString(e[0]),
             QString("p.json: logical_axis_rules[0] (batch=dta): mesh data=2,model=4 has no axis 'dta'; did you mean 'data'?"));
    QCOMPARE(QString::fromStdString(e[1]),
             QString("p.json: logical_axis_rules[3] (mlp=data+tensor): mesh data=2,model=4 has no axis 'tensor' (its axes: "
                     "data, model)"));
    QVERIFY(unknown_rule_axes(parse_rules("batch=data,hidden=model"), m, "r").empty());
    VERIFY_CONTAINS(QString::fromStdString(unknown_rule_axes(parse_rules("batch=data"), Mesh(), "r").at(0)),
                    "a mesh of one device has no axes");
  }
  void nearestNameIsOnlyANearMiss() {
    QCOMPARE(util::edit_distance("model", "modle"), size_t(2));
    QCOMPARE(util::edit_distance("", "data"), size_t(4));
    QCOMPARE(util::nearest("modle", {"data", "model"}), std::string("model"));
    QCOMPARE(util::nearest("tensor", {"data", "model"}), std::string());
    QCOMPARE(util::nearest("dta", {"data", "model"}), std::string("data"));
    QCOMPARE(util::nearest("x", {"y"}), std::string());  // the whole name replaced is no typo
    QCOMPARE(util::nearest("", {"y"}), std::string());
  }
  void meshAllowsSizeOneAxes() { QCOMPARE(parse_mesh("data=1,model=8").device_count(), int64_t(8)); }
  void meshErrorsNameTheProblem() {
    VERIFY_CONTAINS(error_of([] { parse_mesh("data=2,data=4"); }), "'data' appears twice");
    VERIFY_CONTAINS(error_of([] { parse_mesh("data=0"); }), "size 0");
    VERIFY_CONTAINS(error_of([] { parse_mesh("data"); }), "not name=size");
    VERIFY_CONTAINS(error_of([] { parse_mesh("data=two"); }), "not a whole number");
    QString m = error_of([] { check_device_count(parse_mesh("data=2,model=4"), 6); });
    VERIFY_CONTAINS(m, "8 devices");
    VERIFY_CONTAINS(m, "6 are available");
  }

  void blockIndexIsMixedRadixOverTheSpecsAxes() {
    Mesh m = parse_mesh("x=2,y=4");
    // dimension 0 over ('y', 'x'): y major.
    PartitionSpec s = spec({{"y", "x"}});
    for (int64_t d = 0; d < 8; ++d) {
      auto c = m.coords(d);
      QCOMPARE(device_block(s, {16, 3}, m, d).index[0], c[1] * 2 + c[0]);
    }
    Block b = device_block(spec({{"x"}, {"y"}}), {8, 8}, m, 6);  // coords (1, 2)
    QCOMPARE(b.index, (std::vector<int64_t>{1, 2}));
    QCOMPARE(b.start, (std::vector<int64_t>{4, 4}));
    QCOMPARE(b.shape, (Shape{4, 2}));
  }
  void replicatedDevicesShareABlock() {
    Mesh m = parse_mesh("data=4,model=2");
    auto owners = block_owners(spec({{}, {"model"}}), {8, 8}, m);
    QCOMPARE(owners.size(), size_t(2));
    QCOMPARE(owners[0].devices, (std::vector<int64_t>{0, 2, 4, 6}));
    QCOMPARE(owners[1].devices, (std::vector<int64_t>{1, 3, 5, 7}));
  }
  void shortSpecLeavesTrailingDimsReplicated() {
    Mesh m = parse_mesh("data=2");
    QCOMPARE(shard_shape(spec({{"data"}}), {8, 6, 4}, m), (Shape{4, 6, 4}));
    QVERIFY(spec({{"data"}}) == spec({{"data"}, {}, {}}));
  }

  void gridOfAnEightByEightArrayOnAnEightByFourMeshHas32Cells() {
    std::string g = render_sharding(spec({{"x"}, {"y"}}), {8, 8}, parse_mesh("x=8,y=4"));
    for (int d = 0; d < 32; ++d) QVERIFY2(g.find("CPU " + std::to_string(d) + " ") != std::string::npos, g.c_str());
    QVERIFY(g.find(',') == std::string::npos || g.find("CPU 0,") == std::string::npos);  // single-device cells
    int rows = 0;
    for (size_t p = g.find("│"); p != std::string::npos; p = g.find("\n│", p + 1)) ++rows;
    QCOMPARE(rows, 8);
  }
  void gridOfAColumnShardedArrayShowsTwoReplicatedColumns() {
    std::string g = render_sharding(spec({{}, {"y"}}), {8, 8}, parse_mesh("x=4,y=2"));
    QVERIFY2(g.find("CPU 0,2,4,6") != std::string::npos, g.c_str());
    QVERIFY2(g.find("CPU 1,3,5,7") != std::string::npos, g.c_str());
    QVERIFY2(g.find("dim 1 (8): y") != std::string::npos, g.c_str());
    QCOMPARE(std::count(g.begin(), g.end(), '\n'), 5L);  // two header lines, top, one row, bottom
  }
  void gridOfAHigherRankArrayDrawsTheChosenDimensions() {
    std::string g = render_sharding(spec({{}, {}, {"model"}}), {4, 16, 16}, parse_mesh("data=2,model=4"), 1, 2);
    QVERIFY2(g.find("CPU 0,4") != std::string::npos && g.find("CPU 3,7") != std::string::npos, g.c_str());
    VERIFY_CONTAINS(error_of([] { render_sharding(spec({}), {4, 4}, parse_mesh("a=2"), 1, 1); }), "two different dimensions");
  }

  // A run over processes: each cell names the processes holding its block (process r holds
  // devices r*L .. r*L+L-1); a mesh that does not divide among them is an error.
  void gridOverProcessesNamesTheProcessesOfEachBlock() {
    std::string g = render_sharding(spec({{"data"}, {}}), {8, 8}, parse_mesh("data=2,model=2"), 0, 1, "CPU", 2);
    QVERIFY2(g.find("CPU 0,1 (process 0)") != std::string::npos && g.find("CPU 2,3 (process 1)") != std::string::npos, g.c_str());
    g = render_sharding(spec({{}, {"model"}}), {8, 8}, parse_mesh("data=2,model=2"), 0, 1, "CPU", 2);
    QVERIFY2(g.find("CPU 0,2 (processes 0,1)") != std::string::npos, g.c_str());
    VERIFY_CONTAINS(error_of([] { render_sharding(spec({}), {4, 4}, parse_mesh("a=4"), 0, 1, "CPU", 3); }),
                    "4 devices, which do not divide among 3 processes");
  }

  void specErrorsNameArrayDimensionAndAxes() {
    Mesh m = parse_mesh("data=2,model=4");
    QString e = error_of([&] { validate(spec({{"data"}, {"data"}}), {8, 8}, m, "w"); });
    VERIFY_CONTAINS(e, "array 'w'");
    VERIFY_CONTAINS(e, "'data' is used twice");
    e = error_of([&] { validate(spec({{"rows"}}), {8, 8}, m, "w"); });
    VERIFY_CONTAINS(e, "mesh axis 'rows'");
    e = error_of([&] { validate(spec({{}, {}, {}}), {8, 8}, m, "w"); });
    VERIFY_CONTAINS(e, "3 entries for an array of rank 2");
    e = error_of([&] { validate(spec({{}, {"model", "data"}}), {8, 100}, m, "w"); });
    VERIFY_CONTAINS(e, "dimension 1 of size 100");
    VERIFY_CONTAINS(e, "not divisible by 8 = model (4) x data (2)");
    VERIFY_CONTAINS(e, "96 or 104");
  }

  void rulesFollowFlaxOnEveryReferenceCase() {
    std::ifstream in(kSource + "/tests/reference/sharding/expected.json");
    if (!in) QSKIP("tests/reference/sharding/expected.json is missing (run make_sharding_reference.py)");
    nlohmann::json ref = nlohmann::json::parse(in);
    QVERIFY(ref.contains("cases") && !ref["cases"].empty());
    for (const auto& c : ref["cases"]) {
      std::vector<std::string> names;
      for (const auto& n : c["names"]) names.push_back(n.is_null() ? "" : n.get<std::string>());
      LogicalRules rules = rules_from_json(nlohmann::ordered_json::parse(c["rules"].dump()), "rules");
      const QString id = QString::fromStdString(c.value("id", std::string()));
      if (!c["error"].is_null()) {  // Flax refuses it; so must we
        QVERIFY2(!error_of([&] { logical_to_mesh(names, rules, "case"); }).isEmpty(), qPrintable(id));
        continue;
      }
      PartitionSpec got = logical_to_mesh(names, rules, "case").spec;
      std::vector<std::vector<std::string>> want;
      for (const auto& d : c["spec"]) {
        if (d.is_null()) want.push_back({});
        else if (d.is_string()) want.push_back({d.get<std::string>()});
        else want.push_back(d.get<std::vector<std::string>>());
      }
      QVERIFY2(got == PartitionSpec(want),
               qPrintable(QString("%1: got %2, Flax %3").arg(QString::fromStdString(c.value("description", c.dump())),
                                                               QString::fromStdString(got.str()),
                                                               QString::fromStdString(PartitionSpec(want).str()))));
    }
  }
  // Seed 002's model under two rule sets: every parameter's and the input's spec, shard shape
  // and per-device slice, as JAX's NamedSharding gives them on a 2x4 mesh of 8 host devices.
  void layoutMatchesJaxForSeed002Model() {
    std::ifstream in(kSource + "/tests/reference/sharding/expected.json");
    if (!in) QSKIP("tests/reference/sharding/expected.json is missing (run make_sharding_reference.py)");
    nlohmann::json ref = nlohmann::json::parse(in);
    project::Project p = project::load_project(kSource + "/projects/dot-relu-dot.shardlab.json");
    const graph::GraphReport g = project::analyze_project(p);
    const Mesh mesh = parse_mesh("data=2,model=4");
    for (const auto& [set, want] : ref["rule_sets"].items()) {
      ShardingReport r = analyze_sharding(p, g, mesh, rules_from_json(nlohmann::ordered_json::parse(want["rules"].dump()), "r"));
      QVERIFY2(r.errors.empty(), set.c_str());
      auto check = [&](const std::string& ours, const nlohmann::json& w) {
        const ArraySharding* a = r.find(ours);
        QVERIFY2(a, ours.c_str());
        const std::string what = set + " " + ours;
        QCOMPARE(a->shape, w["global_shape"].get<Shape>());
        QVERIFY2(a->logical == w["logical_axes"].get<std::vector<std::string>>(), what.c_str());
        std::vector<std::vector<std::string>> spec_dims;
        for (const auto& d : w["spec"]) spec_dims.push_back(d.is_null() ? std::vector<std::string>{} : d.is_string() ? std::vector<std::string>{d.get<std::string>()} : d.get<std::vector<std::string>>());
        QVERIFY2(a->spec == PartitionSpec(spec_dims), qPrintable(QString::fromStdString(what + ": " + a->spec.str())));
        QCOMPARE(a->shard, w["shard_shape"].get<Shape>());
        for (const auto& sl : w["shard_slices"]) {
          Block b = device_block(a->spec, a->shape, mesh, sl["device_id"].get<int64_t>());
          for (size_t dim = 0; dim < a->shape.size(); ++dim) {
            QCOMPARE(b.start[dim], sl["slice"][dim][0].get<int64_t>());
            QCOMPARE(b.start[dim] + b.shape[dim], sl["slice"][dim][1].get<int64_t>());
          }
        }
      };
      check("blocks/W1/kernel", want["params"]["params/ScanDotReluDot_0/W1"]);
      check("blocks/W2/kernel", want["params"]["params/ScanDotReluDot_0/W2"]);
      check("x", want["input"]["x"]);
      check("blocks/relu", want["activations"]["y"]);  // with_logical_constraint(relu(x @ W1), ('batch', 'hidden'))
      check("blocks/W2", want["activations"]["z"]);    // with_logical_constraint(y @ W2, ('batch', 'embed'))
    }
  }

  void ruleToNonePinsTheDimension() {
    LogicalRules r = parse_rules("embed=none,embed=model");
    QVERIFY(logical_to_mesh({"batch", "embed"}, r, "a").spec == spec({{}, {}}));
  }
  void ruleWhoseAxisIsTakenFallsBackToTheNextRule() {
    LogicalRules r = parse_rules("batch=data,embed=data,embed=model");
    QVERIFY(logical_to_mesh({"batch", "embed"}, r, "a").spec == spec({{"data"}, {"model"}}));
  }
  void unmatchedNamesAreReportedAndReplicated() {
    LogicalMapping m = logical_to_mesh({"batch", "mlp"}, parse_rules("batch=data"), "a");
    QVERIFY(m.spec == spec({{"data"}}));
    QCOMPARE(m.unmatched, (std::vector<std::string>{"mlp"}));
  }
  void multiAxisRuleShardsOverBothAxes() {
    LogicalMapping m = logical_to_mesh({"batch", "embed"}, parse_rules("batch=data+model"), "a");
    QVERIFY(m.spec == spec({{"data", "model"}}));
  }
  void constraintFallbacks() {
    const LogicalRules r = parse_rules("batch=data");
    QVERIFY(!logical_to_mesh({"batch", "x"}, r, "a", Fallback::Unsharded).unconstrained[1]);
    QVERIFY(logical_to_mesh({"batch", "x"}, r, "a", Fallback::NoConstraint).unconstrained[1]);
    VERIFY_CONTAINS(error_of([&] { logical_to_mesh({"batch", "x"}, r, "act", Fallback::Error); }), "logical axis 'x'");
  }
  void repeatedLogicalNameInOneArrayIsAnError() {
    VERIFY_CONTAINS(error_of([] { logical_to_mesh({"embed", "embed"}, {}, "w"); }), "names two dimensions");
  }
  void rulesParseFromTextAndJson() {
    LogicalRules a = parse_rules("batch=data,hidden=model,embed=none,batch=data+model");
    LogicalRules b = rules_from_json(nlohmann::ordered_json::parse(R"([["batch","data"],["hidden","model"],["embed",null],["batch",["data","model"]]])"), "r");
    QCOMPARE(rules_str(a), rules_str(b));
    QCOMPARE(rules_to_json(a).dump(), std::string(R"([["batch","data"],["hidden","model"],["embed",null],["batch",["data","model"]]])"));
    VERIFY_CONTAINS(error_of([] { rules_from_json(nlohmann::ordered_json::parse(R"([["batch", 3]])"), "f.json: logical_axis_rules"); }),
                    "logical_axis_rules[0]");
  }

  void seed002RulesGiveTheGuidesSpecs() {
    project::Project p = project::load_project(kSource + "/projects/dot-relu-dot.shardlab.json");
    ShardingReport r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=2,model=4"),
                                        parse_rules("batch=data,hidden=model,embed=none,layer=none"));
    QVERIFY(r.errors.empty());
    QVERIFY(r.find("blocks/W1/kernel")->spec == spec({{}, {}, {"model"}}));  // per layer (None, 'model')
    QVERIFY(r.find("blocks/W2/kernel")->spec == spec({{}, {"model"}, {}}));  // per layer ('model', None)
    QVERIFY(r.find("x")->spec == spec({{"data"}, {}}));
    // The update is sharded: Adam's state adds the batch axis `data` to the first free dimension.
    QVERIFY(r.find("blocks/W1/kernel/mu")->spec == spec({{"data"}, {}, {"model"}}));
    QVERIFY(r.find("d_blocks/W2/kernel")->spec == r.find("blocks/W2/kernel")->spec);
    QCOMPARE(r.find("blocks/W1/kernel")->shard, (Shape{4, 1024, 256}));
    QCOMPARE(r.devices.size(), size_t(8));
    QCOMPARE(r.devices[3].params, 2.0 * 4 * 1024 * 256 * 4);
  }
  void layoutWarnsAboutUnmatchedNamesAndReplicatedGiants() {
    project::Project p = project::load_project(kSource + "/projects/deep-mlp-small.shardlab.json");
    ShardingReport r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=8"), parse_rules("batch=data"));
    QVERIFY(r.errors.empty());
    bool unmatched = false, giant = false;
    for (const std::string& w : r.warnings) {
      unmatched = unmatched || w.find("'mlp' has no rule") != std::string::npos;
      giant = giant || w.find("layers_1/kernel (16.00 MiB) is replicated on all 8 devices") != std::string::npos;
    }
    QVERIFY(unmatched);
    QVERIFY(giant);
  }
  // A typo in a rule's mesh axis is one problem with a "did you mean", not one error per array.
  void aMisspelledMeshAxisIsOneProblem() {
    project::Project p = project::load_project(kSource + "/projects/dot-relu-dot.shardlab.json");
    ShardingReport r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=2,model=4"),
                                        parse_rules("batch=data,hidden=modle,embed=none,layer=none"));
    QCOMPARE(r.errors.size(), size_t(1));
    VERIFY_CONTAINS(QString::fromStdString(r.errors[0]), "mesh data=2,model=4 has no axis 'modle' (did you mean 'model'?)");
    VERIFY_CONTAINS(QString::fromStdString(r.errors[0]), "'blocks/W1/kernel'");
    QVERIFY(!r.find("blocks/W1/kernel")->error.empty());
  }
  // One model: every layout, shard and byte count the report shows is the partitioned step's, and
  // each device's memory is the step's buffer plan, under data, Megatron, FSDP and 2-D rules.
  void theReportIsReadFromThePartitionedStep_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("data") << "deep-mlp-small" << "data=4" << "batch=data";
    QTest::newRow("Megatron") << "deep-mlp-small" << "data=2,model=2" << "batch=data,mlp=model";
    QTest::newRow("FSDP") << "deep-mlp-small" << "data=4" << "batch=data,embed=data";
    QTest::newRow("seed 002") << "dot-relu-dot" << "data=2,model=4" << "batch=data,hidden=model,embed=none,layer=none";
    QTest::newRow("one device") << "fashion-mlp" << "" << "";
  }
  void theReportIsReadFromThePartitionedStep() {
    QFETCH(QString, project);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    project::Project p = project::load_project(kSource + "/projects/" + project.toStdString() + ".shardlab.json");
    const graph::GraphReport g = project::analyze_project(p);
    const Mesh m = mesh.isEmpty() ? Mesh() : parse_mesh(mesh.toStdString());
    const ShardingReport r = analyze_sharding(p, g, m, rules.isEmpty() ? LogicalRules{} : parse_rules(rules.toStdString()));
    QVERIFY(r.errors.empty());
    QVERIFY(r.plan);
    const runtime::StepProgram step = runtime::build_step(p, g, p.training.batch_size, true);
    QCOMPARE(r.plan->local.size(), step.program.values.size());
    int checked = 0;
    auto same = [&](const std::string& array, int value) {
      const ArraySharding* a = r.find(array);
      QVERIFY2(a, array.c_str());
      QVERIFY2(a->spec == PartitionSpec(r.plan->sharding[size_t(value)].dims), (array + ": " + a->spec.str()).c_str());
      QCOMPARE(a->shard, r.plan->program.shape(r.plan->local[size_t(value)]));
      QCOMPARE(a->bytes_per_device, double(numel(a->shard)) * 4);
      ++checked;
    };
    for (const runtime::ModelParam& mp : step.params) {
      same(mp.path, mp.value);
      same("d_" + mp.path, mp.grad);
      for (int st : mp.state) same(step.program.values[size_t(st)].name, st);
    }
    for (const auto& [node, value] : step.activations)
      if (r.find(node) && r.find(node)->kind == ArrayKind::Activation) same(node, value);
    QVERIFY(checked > 10);
    for (const DeviceMemory& d : r.devices) {
      QCOMPARE(d.total(), double(r.plan->memory.total_bytes()));
      QCOMPARE(d.arena, double(r.plan->memory.arena_bytes + r.plan->memory.staging_bytes));
    }
    QCOMPARE(r.devices.size(), size_t(m.device_count()));
  }
  // The problems are data: the code, the arrays and their nodes, the field at fault and the fix,
  // so the editor marks them without reading the sentence.
  void layoutProblemsAreDataWithTheirFix() {
    project::Project p = project::load_project(kSource + "/projects/fashion-mlp.shardlab.json");
    ShardingReport r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=3"), parse_rules("batch=data"));
    QCOMPARE(r.diagnostics.size() - r.warnings.size(), size_t(1));
    const Diagnostic& d = r.diagnostics.front();
    QCOMPARE(d.code, std::string("layout.indivisible"));
    QCOMPARE(d.field, std::string("mesh"));
    QCOMPARE(d.fix, std::string("set mesh axis 'data' to 2 or 4"));
    QCOMPARE(d.arrays.size(), size_t(5));
    QVERIFY(std::find(d.nodes.begin(), d.nodes.end(), "image") != d.nodes.end());
    QCOMPARE(d.message, r.errors.front());
    QVERIFY(!r.plan);  // nothing is partitioned while a layout does not divide

    p = project::load_project(kSource + "/projects/dot-relu-dot.shardlab.json");
    r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=2,model=4"),
                         parse_rules("batch=data,hidden=modle,embed=none,layer=none"));
    QCOMPARE(r.diagnostics.front().code, std::string("rules.unknown_axis"));
    QCOMPARE(r.diagnostics.front().fix, std::string("write 'model' for 'modle' in the rules"));
    QVERIFY(std::find(r.diagnostics.front().nodes.begin(), r.diagnostics.front().nodes.end(), "blocks/W1") !=
            r.diagnostics.front().nodes.end());
    for (const Diagnostic& w : r.diagnostics)
      if (w.severity == Severity::Warning) QVERIFY(std::find(r.warnings.begin(), r.warnings.end(), w.message) != r.warnings.end());
  }
  void layoutCollectsIndivisibleDimensions() {
    project::Project p = project::load_project(kSource + "/projects/fashion-mlp.shardlab.json");
    ShardingReport r = analyze_sharding(p, project::analyze_project(p), parse_mesh("data=3"), parse_rules("batch=data"));
    // One problem for the one cause, with the sizes of the axis that would divide every array it
    // splits; each array keeps its own message with the batch sizes that would divide.
    QCOMPARE(r.errors.size(), size_t(1));
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "mesh axis data (3) does not divide 5 arrays it splits: 'image' dimension 0 (128)");
    VERIFY_CONTAINS(QString::fromStdString(r.errors.front()), "sizes of data nearest 3 that divide them all: 2 or 4");
    VERIFY_CONTAINS(QString::fromStdString(r.find("image")->error), "126 or 129");
  }
};

QTEST_APPLESS_MAIN(TestSharding)
#include "test_sharding.moc"
