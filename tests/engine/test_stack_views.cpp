// A Repeat's unstacks as views (engine/plan/stack_views.h) and its gradients' stacks made in place
// by the memory plan: a replay of each step's instructions over its planned storage, with the views
// applied and the copies they replace left out, finds every value a later instruction reads still
// in place (neither lets anything be overwritten before its last read); the views and in-place
// stacks are taken where they should be, and a view is refused where a parameter is written while
// a part of it is still read.
#include <QtTest>
#include <map>

#include "engine/graph/analysis.h"
#include "engine/ir/primitive.h"
#include "engine/plan/stack_views.h"
#include "engine/project/project.h"
#include "engine/runtime/train_step.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"
#include "engine/sharding/partitioner.h"
#include "tests/engine/odd_mlp.h"

using namespace shardlab;

namespace {

// Input 12 -> Dense 16 -> Repeat 4 x (Dense 16, ReLU) -> Dense 4.
std::string repeat_mlp(const std::string& precision, int accumulate) {
  return testing::repeat_mlp_text(12, 16, 4, 4, precision, accumulate);
}

runtime::StepProgram step_of(const project::Project& p, int64_t batch) {
  return runtime::build_step(p, project::analyze_project(p), batch, true);
}

// Replays `p` over the storage `m` places its values in, with `v`'s views: every write stamps its
// bytes with new tags, every read must find the tags its value was given. Returns the first
// problem, or "".
std::string replay(const ir::Program& p, const plan::MemoryPlan& m, const plan::StackViews& v) {
  enum Space { Arena, Persistent, None };
  struct Where {
    Space space = None;
    int64_t at = 0;
  };
  std::function<Where(int)> where = [&](int x) -> Where {
    if (v.base[size_t(x)] >= 0) {
      Where w = where(v.base[size_t(x)]);
      w.at += v.offset[size_t(x)];
      return w;
    }
    if (m.persistent_offset[size_t(x)] >= 0) return {Persistent, m.persistent_offset[size_t(x)]};
    if (m.arena_offset[size_t(x)] >= 0) return {Arena, m.arena_offset[size_t(x)]};
    return {};
  };
  std::vector<uint64_t> space[2] = {std::vector<uint64_t>(size_t(m.arena_bytes), 0),
                                    std::vector<uint64_t>(size_t(m.param_bytes + m.opt_state_bytes), 0)};
  std::vector<std::vector<uint64_t>> expected(p.values.size());
  uint64_t event = 0;
  auto write = [&](int x) {
    const Where w = where(x);
    std::vector<uint64_t>& e = expected[size_t(x)];
    e.resize(size_t(p.bytes(x)));
    ++event;
    for (size_t b = 0; b < e.size(); ++b) e[b] = (event << 32) | b;
    if (w.space != None) std::copy(e.begin(), e.end(), space[w.space].begin() + w.at);
  };
  auto intact = [&](int x) {
    const Where w = where(x);
    const std::vector<uint64_t>& e = expected[size_t(x)];
    return w.space == None || std::equal(e.begin(), e.end(), space[w.space].begin() + w.at);
  };
  for (size_t x = 0; x < p.values.size(); ++x)
    if (p.values[x].kind != ir::ValueKind::Temp) write(int(x));
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& ins = p.instrs[i];
    for (int x : ins.in)
      if (!intact(x))
        return "instruction " + std::to_string(i) + " (" + ir::op_name(ins.op) + ") reads '" + p.values[size_t(x)].name +
               "', overwritten since it was made";
    if (v.skip[i]) {
      // The copy left out: its results are what it would have copied, where the views put them.
      std::vector<uint64_t> all;
      if (ins.op == ir::Op::Stack)
        for (int x : ins.in) all.insert(all.end(), expected[size_t(x)].begin(), expected[size_t(x)].end());
      else
        all = expected[size_t(ins.in.at(0))];
      size_t at = 0;
      for (int x : ins.out) {
        expected[size_t(x)].assign(all.begin() + ptrdiff_t(at), all.begin() + ptrdiff_t(at + size_t(p.bytes(x))));
        at += size_t(p.bytes(x));
        if (!intact(x)) return "the view of '" + p.values[size_t(x)].name + "' does not hold what the copy would have";
      }
      continue;
    }
    for (int x : ins.out) write(x);
    if (ins.op == ir::Op::SgdUpdate || ins.op == ir::Op::AdamUpdate || ins.op == ir::Op::AllGatherInPlace)
      for (size_t k = 0; k < ins.in.size(); ++k)
        if (k == 0 || (ins.op != ir::Op::AllGatherInPlace && k >= 2 && p.values[size_t(ins.in[k])].kind == ir::ValueKind::OptState))
          write(ins.in[k]);
  }
  return "";
}

}  // namespace

class TestStackViews : public QObject {
  Q_OBJECT
 private slots:
  void viewsKeepEveryReadIntact_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    const QString f32 = QString::fromStdString(repeat_mlp(R"({"dtype": "float32"})", 1));
    const QString bf16 = QString::fromStdString(repeat_mlp(R"({"dtype": "bfloat16", "param_dtype": "float32"})", 1));
    const QString acc = QString::fromStdString(repeat_mlp(R"({"dtype": "float32"})", 2));
    QTest::newRow("repeat mlp, float32") << f32 << QString() << QString();
    QTest::newRow("repeat mlp, bfloat16") << bf16 << QString() << QString();
    QTest::newRow("repeat mlp, 2 microbatches") << acc << QString() << QString();
    QTest::newRow("repeat mlp, data=2 fsdp") << f32 << QString("data=2") << QString("batch=data,embed=data");
    QTest::newRow("repeat mlp, data=2,model=2 megatron") << f32 << QString("data=2,model=2") << QString("batch=data,mlp=model");
    QTest::newRow("vit-fashion") << QString("vit-fashion.shardlab.json") << QString() << QString();
    QTest::newRow("vit-fashion, bfloat16, data=2") << QString("vit-fashion.shardlab.json bf16") << QString("data=2")
                                                   << QString("batch=data");
  }

  void viewsKeepEveryReadIntact() {
    QFETCH(QString, project);
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    project::Project p;
    if (project.startsWith("{")) {
      p = project::parse_project(project.toStdString(), "repeat-mlp.shardlab.json");
    } else {
      p = project::load_project(std::string(SHARDLAB_SOURCE_DIR) + "/projects/" + project.section(' ', 0, 0).toStdString());
      if (project.endsWith("bf16")) p.precision.dtype = DType::BF16;
    }
    const runtime::StepProgram s = step_of(p, 8);
    const ir::Program* program = &s.program;
    const plan::MemoryPlan* memory = &s.memory;
    sharding::PartitionedStep part;
    if (!mesh.isEmpty()) {
      part = sharding::partition(s, sharding::parse_mesh(mesh.toStdString()), sharding::parse_rules(rules.toStdString()));
      program = &part.program;
      memory = &part.memory;
    }
    // The plan alone (no views) replays intact: the check itself finds what the plan promises.
    plan::StackViews none = plan::stack_views(*program, *memory);
    std::fill(none.base.begin(), none.base.end(), -1);
    std::fill(none.skip.begin(), none.skip.end(), false);
    const std::string plain = replay(*program, *memory, none);
    QVERIFY2(plain.empty(), plain.c_str());

    const plan::StackViews views = plan::stack_views(*program, *memory);
    const std::string problem = replay(*program, *memory, views);
    QVERIFY2(problem.empty(), problem.c_str());
    // Every unstack of a Repeat's parameter reads it in place.
    size_t views_taken = 0, param_unstacks = 0;
    for (size_t i = 0; i < program->instrs.size(); ++i) {
      const ir::Instr& ins = program->instrs[i];
      if (ins.op != ir::Op::Unstack) continue;
      param_unstacks += memory->persistent_offset[size_t(ins.in[0])] >= 0;
      views_taken += views.skip[i];
    }
    QVERIFY(param_unstacks > 0);
    QCOMPARE(views_taken, param_unstacks);
    // The stacked gradients' parts are made where the Stack would copy them.
    size_t stacks = 0, in_place = 0;
    for (const ir::Instr& ins : program->instrs) {
      if (ins.op != ir::Op::Stack) continue;
      ++stacks;
      bool all = true;
      for (size_t k = 0; k < ins.in.size(); ++k)
        all = all && memory->arena_offset[size_t(ins.in[k])] == memory->arena_offset[size_t(ins.out[0])] + int64_t(k) * program->bytes(ins.in[0]);
      in_place += all;
    }
    QVERIFY2(in_place > 0, qPrintable(QString("none of %1 stacks made in place").arg(stacks)));
  }

  // The replay must be able to fail: a view the analysis refuses (the parameter updated while a
  // part of it is still read) breaks a read when forced on.
  void aParameterWrittenWhileAPartIsReadKeepsItsCopy() {
    ir::Program p;
    const int x = p.add_value("stacked", {2, 4}, ir::ValueKind::Param);
    const int g = p.add_value("grad", {2, 4}, ir::ValueKind::Input);
    const int mu = p.add_value("mu", {2, 4}, ir::ValueKind::OptState);
    const int nu = p.add_value("nu", {2, 4}, ir::ValueKind::OptState);
    const std::vector<int> parts = p.apply(ir::Op::Unstack, {x});
    ir::Attrs adam;
    p.apply(ir::Op::AdamUpdate, {x, g, mu, nu}, adam);
    p.apply1(ir::Op::Relu, {parts[1]});  // reads a part after the update wrote the parameter
    const plan::MemoryPlan m = plan::plan_memory(p, {});
    const plan::StackViews views = plan::stack_views(p, m);
    QCOMPARE(views.skipped(), size_t(0));
    QVERIFY(replay(p, m, views).empty());
    plan::StackViews forced = views;
    forced.skip[0] = true;
    for (size_t k = 0; k < parts.size(); ++k) forced.base[size_t(parts[k])] = x, forced.offset[size_t(parts[k])] = int64_t(k) * p.bytes(parts[0]);
    const std::string problem = replay(p, m, forced);
    QVERIFY2(problem.find("reads") != std::string::npos, problem.c_str());
  }
};

QTEST_APPLESS_MAIN(TestStackViews)
#include "test_stack_views.moc"
