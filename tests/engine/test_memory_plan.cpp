// The buffer plan: buffers that are live at the same time never overlap, in-place reuse only
// takes an operand at its last use, and the plan is much smaller than keeping every temporary.
#include <QtTest>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/runtime/train_step.h"

using namespace shardlab;

namespace {

runtime::StepProgram step_of(const std::string& name) {
  project::Project p = project::load_project(std::string(SHARDLAB_SOURCE_DIR) + "/projects/" + name);
  return runtime::build_step(p, project::analyze_project(p), p.training.batch_size, true);
}

// [first, last] instruction range during which each value's storage must hold it.
void live_ranges(const ir::Program& p, std::vector<int>& first, std::vector<int>& last, const std::vector<int>& keep) {
  const int end = int(p.instrs.size());
  first.assign(p.values.size(), end);
  last.assign(p.values.size(), -1);
  for (size_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].kind == ir::ValueKind::Input || p.values[v].kind == ir::ValueKind::Target) first[v] = -1;
  for (int i = 0; i < end; ++i) {
    for (int v : p.instrs[size_t(i)].in) last[size_t(v)] = std::max(last[size_t(v)], i);
    for (int v : p.instrs[size_t(i)].out) first[size_t(v)] = std::min(first[size_t(v)], i), last[size_t(v)] = std::max(last[size_t(v)], i);
  }
  for (int v : keep) last[size_t(v)] = end;
}

}  // namespace

class TestMemoryPlan : public QObject {
  Q_OBJECT
 private slots:
  void liveBuffersNeverOverlap_data() {
    QTest::addColumn<QString>("project");
    for (const char* p : {"fashion-mlp.shardlab.json", "deep-mlp-small.shardlab.json", "dot-relu-dot.shardlab.json"})
      QTest::newRow(p) << QString(p);
  }
  void liveBuffersNeverOverlap() {
    QFETCH(QString, project);
    runtime::StepProgram s = step_of(project.toStdString());
    const ir::Program& p = s.program;
    const plan::MemoryPlan& m = s.memory;
    std::vector<int> first, last;
    live_ranges(p, first, last, {s.loss});
    // Two values may share bytes only when one is an in-place result of the other, produced by
    // the instruction at which the operand dies.
    auto in_place_pair = [&](size_t a, size_t b) {
      for (const ir::Instr& ins : p.instrs)
        for (int o : ins.out)
          for (int i : ins.in)
            if ((size_t(o) == a && size_t(i) == b) || (size_t(o) == b && size_t(i) == a)) return true;
      return false;
    };
    size_t checked = 0;
    for (size_t a = 0; a < p.values.size(); ++a) {
      if (m.arena_offset[a] < 0) continue;
      QVERIFY(m.arena_offset[a] + plan::planned_bytes(p, int(a)) <= m.arena_bytes);
      for (size_t b = a + 1; b < p.values.size(); ++b) {
        if (m.arena_offset[b] < 0) continue;
        const bool overlap_time = first[a] < last[b] && first[b] < last[a];
        const bool overlap_space = m.arena_offset[a] < m.arena_offset[b] + plan::planned_bytes(p, int(b)) &&
                                   m.arena_offset[b] < m.arena_offset[a] + plan::planned_bytes(p, int(a));
        if (overlap_time && overlap_space && !in_place_pair(a, b)) {
          // A chain of in-place ops shares one buffer: allowed when the values are never live together.
          QVERIFY2(first[a] >= last[b] || first[b] >= last[a] || m.arena_offset[a] == m.arena_offset[b],
                   qPrintable(QString("%1 and %2 overlap while both live")
                                  .arg(p.values[a].name.c_str(), p.values[b].name.c_str())));
        }
        ++checked;
      }
    }
    QVERIFY(checked > 0);
  }

  void planIsSmallerThanKeepingEveryTemporary() {
    runtime::StepProgram s = step_of("deep-mlp-small.shardlab.json");
    const auto& m = s.memory;
    qInfo("deep-mlp-small arena %lld bytes vs %lld unplanned", (long long)m.arena_bytes,
          (long long)(m.naive_temp_bytes + m.input_bytes));
    QVERIFY(m.arena_bytes < (m.naive_temp_bytes + m.input_bytes) / 2);
  }

  void everyParameterIsUpdatedOnceAfterItsLastUse() {
    runtime::StepProgram s = step_of("deep-mlp-small.shardlab.json");
    const ir::Program& p = s.program;
    for (const runtime::ModelParam& mp : s.params) {
      int update = -1, last_read = -1;
      for (size_t i = 0; i < p.instrs.size(); ++i) {
        const ir::Instr& ins = p.instrs[i];
        const bool is_update = ins.op == ir::Op::AdamUpdate && ins.in[0] == mp.value;
        if (is_update) {
          QCOMPARE(update, -1);
          update = int(i);
        } else if (std::find(ins.in.begin(), ins.in.end(), mp.value) != ins.in.end()) {
          last_read = int(i);
        }
      }
      QVERIFY2(update > last_read, mp.path.c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestMemoryPlan)
#include "test_memory_plan.moc"
