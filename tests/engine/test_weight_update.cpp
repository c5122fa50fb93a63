// Sharded weight update (engine/sharding/weight_update.h): a parameter replicated over the batch's
// mesh axes keeps its optimizer state split over them, each device updates its own block, and an
// in-place all-gather gives every device the whole parameter. It must change nothing a user can
// see but memory: the same losses, parameters and state bit for bit as updating every replica;
// and the design-time sharding report must show the layout that runs.
#include <QtTest>

#include "engine/backends/backend.h"
#include "engine/backends/cpu/shared_replicas.h"
#include "engine/data/dataset.h"
#include "engine/runtime/spmd_session.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/weight_update.h"

using namespace shardlab;

namespace {

// 12 -> Dense 24 -> relu -> Dense 24 -> relu -> Dense 6, MSE, Adam with weight decay; the head's
// bias (6) does not split 4 ways, so it keeps an all-reduced, replicated update.
const char* kMlp = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [12], "axes": ["embed"]}},
      {"name": "l0", "type": "Dense", "params": {"features": 24}}, {"name": "r0", "type": "ReLU"},
      {"name": "l1", "type": "Dense", "params": {"features": 24}, "param_axes": {"kernel": ["mlp", "embed"], "bias": ["embed"]}},
      {"name": "r1", "type": "ReLU"},
      {"name": "out", "type": "Dense", "params": {"features": 6}, "param_axes": {"kernel": ["embed", "classes"], "bias": ["classes"]}}],
    "edges": [{"from": "x.out", "to": "l0.in"}, {"from": "l0.out", "to": "r0.in"}, {"from": "r0.out", "to": "l1.in"},
              {"from": "l1.out", "to": "r1.in"}, {"from": "r1.out", "to": "out.in"}]},
  "loss": {"type": "mean_squared_error", "output": "out"},
  "optimizer": {"type": "adamw", "learning_rate": 0.01, "weight_decay": 0.05},
  "data": {"type": "synthetic", "kind": "normal", "feature_shape": [12], "target_shape": [6], "examples": 32},
  "training": {"batch_size": 32, "steps": 4}
})";

Tensor batch(const Shape& shape, int step) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data[size_t(i)] = float(data::hash_normal(11, uint64_t(step), uint64_t(i)));
  return t;
}

std::unique_ptr<runtime::SpmdSession> session(const project::Project& p, const std::string& mesh, const std::string& rules,
                                              sharding::WeightUpdate u) {
  auto backend = std::shared_ptr<backends::Backend>(backends::make_backend("cpu", backends::BackendOptions{.threads = 2}));
  return std::make_unique<runtime::SpmdSession>(p, sharding::parse_mesh(mesh), sharding::parse_rules(rules), p.training.batch_size,
                                                backend, u);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.ptr(), b.ptr(), a.data.size() * sizeof(float)) == 0;
}

// One step of a data-parallel update of w (4 x 4) on `devices` devices, as the partitioner lays it
// out: forward read, gradient, reduce-scatter, update of this device's row block, in-place gather.
// `how` changes it: "read late" reads w between the update and the gather; "read unguarded" reads
// w after the reduce-scatter, so no collective separates it from a peer's update; "update 2" splits
// the update over 2 devices only; "bf16" stores w in bfloat16.
ir::Program update_step(int64_t devices, const std::string& how) {
  ir::Program p;
  const int64_t split = how == "update 2" ? 2 : devices;
  const int x = p.add_value("x", {2, 4}, ir::ValueKind::Input, {}, how == "bf16" ? DType::BF16 : DType::F32);
  const int w = p.add_value("w", {4, 4}, ir::ValueKind::Param, {}, how == "bf16" ? DType::BF16 : DType::F32);
  const int m = p.add_value("w/mu", {4 / split, 4}, ir::ValueKind::OptState);
  const int v = p.add_value("w/nu", {4 / split, 4}, ir::ValueKind::OptState);
  ir::Attrs comm;
  comm.mesh_axes = {"data"};
  comm.group_size = split;
  ir::Attrs ta;
  ta.trans_a = true;
  const int y = p.apply1(ir::Op::MatMul, {x, w});
  const int g = p.apply1(ir::Op::MatMul, {x, y}, ta);
  const int gs = p.apply1(ir::Op::ReduceScatter, {g}, comm);
  if (how == "read unguarded") p.apply1(ir::Op::MatMul, {x, w});
  p.apply(ir::Op::AdamUpdate, {w, gs, m, v}, comm);
  if (how == "read late") p.apply1(ir::Op::MatMul, {x, w});
  p.apply(ir::Op::AllGatherInPlace, {w}, comm);
  return p;
}

int count(const sharding::PartitionedStep& s, ir::Op op) {
  int n = 0;
  for (const auto& c : s.collectives) n += c.op == op;
  return n;
}

}  // namespace

class TestWeightUpdate : public QObject {
  Q_OBJECT
 private slots:
  void theRule_data() {
    QTest::addColumn<QString>("param");
    QTest::addColumn<QString>("state");
    QTest::addColumn<QString>("shape");
    QTest::addColumn<QString>("batch");
    // param dims as "a|b" per dimension ("-" for none), with a data=4, model=2 mesh.
    QTest::newRow("replicated kernel: first dimension") << "-,-" << "data,-" << "12,24" << "data";
    QTest::newRow("first dimension indivisible: the next") << "-,-" << "-,data" << "6,24" << "data";
    QTest::newRow("first dimension split by model") << "model,-" << "model,data" << "12,24" << "data";
    QTest::newRow("already split over data (FSDP): unchanged") << "data,-" << "data,-" << "12,24" << "data";
    QTest::newRow("nothing divides: unchanged") << "-" << "-" << "6" << "data";
    QTest::newRow("batch unsplit: unchanged") << "-,-" << "-,-" << "12,24" << "-";
    QTest::newRow("batch over both axes") << "-,-" << "data|model,-" << "16,24" << "data|model";
    QTest::newRow("batch on an axis the mesh lacks: unchanged") << "-,-" << "-,-" << "12,24" << "pipe";
    QTest::newRow("batch over both, model used") << "-,model" << "data,model" << "12,24" << "data|model";
  }
  void theRule() {
    QFETCH(QString, param);
    QFETCH(QString, state);
    QFETCH(QString, shape);
    QFETCH(QString, batch);
    auto axes = [](const QString& s) {
      std::vector<std::string> out;
      if (s != "-")
        for (const QString& a : s.split('|')) out.push_back(a.toStdString());
      return out;
    };
    auto dims = [&](const QString& s) {
      sharding::AxesPerDim d;
      for (const QString& x : s.split(',')) d.push_back(axes(x));
      return d;
    };
    Shape sh;
    for (const QString& x : shape.split(',')) sh.push_back(x.toLongLong());
    const sharding::Mesh mesh = sharding::parse_mesh("data=4,model=2");
    QCOMPARE(sharding::optimizer_state_axes(dims(param), sh, mesh, axes(batch)), dims(state));
  }

  // The same 4 steps with the update sharded and with every replica updating the whole parameter:
  // a reduce-scatter sums in the same rank order as an all-reduce, so nothing may differ by a bit.
  void shardedUpdateEqualsReplicatedBitForBit_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("data=4") << "data=4" << "batch=data";
    QTest::newRow("data=2 x model=2, Megatron") << "data=2,model=2" << "batch=data,mlp=model";
    // The kernels' first dimension is split by model, so each device's block is strided (the
    // gather interleaves rows) and the input is split both ways.
    QTest::newRow("data=2 x model=2, embed on model") << "data=2,model=2" << "batch=data,embed=model";
  }
  void shardedUpdateEqualsReplicatedBitForBit() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    auto sharded = session(p, mesh.toStdString(), rules.toStdString(), sharding::WeightUpdate::Sharded);
    auto replicated = session(p, mesh.toStdString(), rules.toStdString(), sharding::WeightUpdate::Replicated);
    QVERIFY(count(sharded->partitioned(), ir::Op::AllGatherInPlace) > 0);
    QCOMPARE(count(replicated->partitioned(), ir::Op::AllGatherInPlace), 0);
    const runtime::StepProgram& g = sharded->global_step();
    const Shape xs = g.program.shape(g.input), ys = g.program.shape(g.target);
    for (int step = 0; step < 4; ++step) {
      const Tensor x = batch(xs, step), y = batch(ys, 100 + step);
      const double a = sharded->train_step(x, y, 0.01), b = replicated->train_step(x, y, 0.01);
      QCOMPARE(a, b);
    }
    for (size_t v = 0; v < g.program.values.size(); ++v) {
      const ir::Value& val = g.program.values[v];
      if (val.kind != ir::ValueKind::Param && val.kind != ir::ValueKind::OptState) continue;
      QVERIFY2(bitwise_equal(sharded->value(int(v)), replicated->value(int(v))), val.name.c_str());
    }
    // And evaluation, which shares the training step's storage, reads the gathered parameters.
    const Tensor x = batch(xs, 50), y = batch(ys, 150);
    QCOMPARE(sharded->evaluate(x, y).loss, replicated->evaluate(x, y).loss);
  }

  // The CPU backend holds a parameter every device updates block by block once, for all its
  // virtual devices, only where no device could see a peer's block early or late.
  void sharedReplicasOnlyWhereNothingCanTell_data() {
    QTest::addColumn<QString>("how");
    QTest::addColumn<int>("devices");
    QTest::addColumn<bool>("shared");
    QTest::newRow("data-parallel update") << "" << 4 << true;
    QTest::newRow("one device") << "" << 1 << false;
    QTest::newRow("read between update and gather") << "read late" << 4 << false;
    QTest::newRow("read after the last collective before the update") << "read unguarded" << 4 << false;
    QTest::newRow("update split over half the devices") << "update 2" << 4 << false;
    QTest::newRow("bfloat16 parameter") << "bf16" << 4 << false;
  }
  void sharedReplicasOnlyWhereNothingCanTell() {
    QFETCH(QString, how);
    QFETCH(int, devices);
    QFETCH(bool, shared);
    const ir::Program p = update_step(devices, how.toStdString());
    const std::vector<int> got = backends::cpu::shared_replicas(p, devices);
    QCOMPARE(got, shared ? std::vector<int>{1} : std::vector<int>{});
  }

  // On data=4 every parameter but the head's bias (its update is not split) is one buffer: a write
  // through device 0 is what device 3 reads. Optimizer state stays each device's own.
  void replicatedParametersAreHeldOnce() {
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    auto s = session(p, "data=4", "batch=data", sharding::WeightUpdate::Sharded);
    const sharding::PartitionedStep& part = s->partitioned();
    const std::vector<int> shared = backends::cpu::shared_replicas(part.program, 4);
    std::vector<std::string> names;
    for (int v : shared) names.push_back(part.program.values[size_t(v)].name);
    QCOMPARE(names, (std::vector<std::string>{"l0/kernel", "l0/bias", "l1/kernel", "l1/bias", "out/kernel"}));

    auto backend = std::shared_ptr<backends::Backend>(backends::make_backend("cpu", backends::BackendOptions{.threads = 2}));
    auto exe = backend->load(part.program, part.memory, sharding::parse_mesh("data=4"), {});
    for (size_t v = 0; v < part.program.values.size(); ++v) {
      const ir::Value& val = part.program.values[v];
      if (val.kind != ir::ValueKind::Param && val.kind != ir::ValueKind::OptState) continue;
      const size_t n = size_t(numel(val.shape));
      const std::vector<float> zeros(n, 0.f), ones(n, 1.f);
      for (int d = 0; d < 4; ++d) exe->write(d, int(v), zeros.data());
      exe->write(0, int(v), ones.data());
      std::vector<float> seen(n, -1.f);
      exe->read(3, int(v), seen.data());
      const bool one = std::find(shared.begin(), shared.end(), int(v)) != shared.end();
      QVERIFY2(seen == (one ? ones : zeros), val.name.c_str());
    }
  }

  // What the state costs per device: a quarter on data=4, except where nothing divides.
  void stateIsSplitOverTheBatchAxes() {
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    auto s = session(p, "data=4", "batch=data", sharding::WeightUpdate::Sharded);
    auto r = session(p, "data=4", "batch=data", sharding::WeightUpdate::Replicated);
    const runtime::StepProgram& g = s->global_step();
    for (size_t v = 0; v < g.program.values.size(); ++v) {
      const ir::Value& val = g.program.values[v];
      if (val.kind != ir::ValueKind::OptState) continue;
      const Shape& local = s->partitioned().program.shape(s->partitioned().local[v]);
      const bool head_bias = val.name.rfind("out/bias/", 0) == 0;
      QCOMPARE(numel(local) * (head_bias ? 1 : 4), numel(val.shape));
      // The layout names every dim: the first is split over `data`, the rest whole.
      std::string want = "PartitionSpec(None)";
      if (!head_bias) want = val.shape.size() == 2 ? "PartitionSpec('data', None)" : "PartitionSpec('data')";
      QCOMPARE(s->partitioned().sharding[v].str(), want);
    }
    // 2 states x (12*24 + 24 + 24*24 + 24 + 24*6) per 4 devices, plus the head bias's 2 x 6 whole.
    const int64_t split = 2 * (12 * 24 + 24 + 24 * 24 + 24 + 24 * 6);
    QCOMPARE(s->partitioned().memory.opt_state_bytes, (split / 4 + 2 * 6) * 4);
    QCOMPARE(r->partitioned().memory.opt_state_bytes, (split + 2 * 6) * 4);
    QCOMPARE(s->partitioned().memory.param_bytes, r->partitioned().memory.param_bytes);
  }

  // One model: what the sharding view and the design check show for every optimizer state is the
  // layout the partitioned step runs with.
  void theReportShowsWhatRuns_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("data=4") << "data=4" << "batch=data";
    QTest::newRow("Megatron") << "data=2,model=2" << "batch=data,mlp=model";
    QTest::newRow("embed on model") << "data=2,model=2" << "batch=data,embed=model";
    QTest::newRow("FSDP") << "data=4" << "batch=data,embed=data";
    QTest::newRow("model only") << "model=4" << "mlp=model";
  }
  void theReportShowsWhatRuns() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    const sharding::Mesh m = sharding::parse_mesh(mesh.toStdString());
    const sharding::LogicalRules lr = sharding::parse_rules(rules.toStdString());
    const graph::GraphReport report = project::analyze_project(p);
    const sharding::ShardingReport shown = sharding::analyze_sharding(p, report, m, lr);
    QVERIFY(shown.errors.empty());
    const runtime::StepProgram g = runtime::build_step(p, report, p.training.batch_size, true);
    const sharding::PartitionedStep run = sharding::partition(g, m, lr);
    int states = 0;
    double run_bytes = 0;
    for (size_t v = 0; v < g.program.values.size(); ++v) {
      const ir::Value& val = g.program.values[v];
      if (val.kind != ir::ValueKind::OptState) continue;
      const sharding::ArraySharding* a = shown.find(val.name);
      QVERIFY2(a, val.name.c_str());
      QCOMPARE(sharding::PartitionSpec(run.sharding[v].dims), a->spec);
      QCOMPARE(a->shard, run.program.shape(run.local[v]));
      run_bytes += double(numel(a->shard)) * sizeof(float);
      ++states;
    }
    QCOMPARE(states, 12);
    QCOMPARE(shown.devices.at(0).opt_state, run_bytes);
    QCOMPARE(double(run.memory.opt_state_bytes), run_bytes);
  }
};

QTEST_GUILESS_MAIN(TestWeightUpdate)
#include "test_weight_update.moc"
