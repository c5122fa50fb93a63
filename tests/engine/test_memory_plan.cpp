// The buffer plan: buffers that are live at the same time never overlap, in-place reuse only
// takes an operand at its last use, and the plan is much smaller than keeping every temporary.
// Its first-fit placement (the fast one, with time buckets and chunked long-lived buffers) puts
// every buffer where the plain walk over all placed buffers would.
#include <QtTest>

#include <algorithm>
#include <random>

#include "engine/graph/analysis.h"
#include "engine/plan/first_fit.h"
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

// First fit the plain way: every placed buffer live at the same time, sorted by extent, walked
// from offset 0 until the buffer fits. Quadratic, and obviously right.
std::vector<int64_t> plain_first_fit(const std::vector<plan::Buffer>& bufs, const std::vector<size_t>& order) {
  std::vector<int64_t> offset(bufs.size(), -1);
  std::vector<size_t> placed;
  for (size_t bi : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t pj : placed) {
      bool live_together = false;
      for (const plan::LiveSpan& x : bufs[bi].live)
        for (const plan::LiveSpan& y : bufs[pj].live)
          live_together = live_together || (x.stage == y.stage && x.first <= y.last && y.first <= x.last);
      if (live_together) busy.push_back({offset[pj], offset[pj] + bufs[pj].size});
    }
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [s, e] : busy) {
      if (off + bufs[bi].size <= s) break;
      off = std::max(off, e);
    }
    offset[bi] = off;
    placed.push_back(bi);
  }
  return offset;
}

// Buffers as steps make them: short temporaries, long-lived stashed activations nested around the
// forward/backward turn, a few sizes (many equal), on `stages` pipeline stages (a buffer live on
// one or several).
std::vector<plan::Buffer> random_buffers(unsigned seed, size_t n, int steps, int stages) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<plan::Buffer> bufs;
  for (size_t i = 0; i < n; ++i) {
    plan::Buffer b;
    b.size = int64_t(4 * (uniform(0, 3) == 0 ? uniform(1, 5000) : 256 << uniform(0, 3)));
    const int spans = stages > 1 && uniform(0, 3) == 0 ? uniform(1, stages) : 1;
    const int first_stage = uniform(0, stages - spans);
    for (int k = 0; k < spans; ++k) {
      int first, last;
      switch (uniform(0, 2)) {
        case 0: {  // stashed: around the turn at steps / 2
          const int d = uniform(1, steps / 2 - 1);
          first = steps / 2 - d;
          last = std::min(steps - 1, steps / 2 + d + uniform(0, 3));
          break;
        }
        case 1:  // anywhere, any length
          first = uniform(-1, steps - 1);
          last = uniform(first, steps);
          break;
        default:  // short
          first = uniform(-1, steps - 2);
          last = std::min(steps - 1, first + uniform(0, 40));
      }
      b.live.push_back({first_stage + k, first, last});
    }
    bufs.push_back(b);
  }
  return bufs;
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

  void firstFitPlacesEveryBufferWhereThePlainWalkDoes_data() {
    QTest::addColumn<unsigned>("seed");
    QTest::addColumn<int>("buffers");
    QTest::addColumn<int>("steps");
    QTest::addColumn<int>("stages");
    QTest::newRow("one stage, few") << 1u << 60 << 200 << 1;
    QTest::newRow("one stage, many") << 2u << 3000 << 6000 << 1;
    QTest::newRow("one stage, crowded") << 3u << 3000 << 400 << 1;
    QTest::newRow("three stages") << 4u << 2000 << 3000 << 3;
    QTest::newRow("eight stages") << 5u << 2000 << 5000 << 8;
  }
  void firstFitPlacesEveryBufferWhereThePlainWalkDoes() {
    QFETCH(unsigned, seed);
    QFETCH(int, buffers);
    QFETCH(int, steps);
    QFETCH(int, stages);
    const std::vector<plan::Buffer> bufs = random_buffers(seed, size_t(buffers), steps, stages);
    for (bool by_size : {true, false}) {
      std::vector<size_t> order(bufs.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (by_size) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].size > bufs[b].size; });
      const std::vector<int64_t> fast = plan::place_first_fit(bufs, order, steps);
      const std::vector<int64_t> plain = plain_first_fit(bufs, order);
      for (size_t i = 0; i < bufs.size(); ++i)
        QVERIFY2(fast[i] == plain[i], qPrintable(QString("buffer %1 of %2 (%3 order): at %4, the plain walk puts it at %5")
                                                     .arg(i).arg(bufs.size()).arg(by_size ? "by size" : "given").arg(fast[i]).arg(plain[i])));
    }
  }

  // A stack of equal activations, each live from its layer's forward to its backward: the long
  // ones' chunks are passed whole, and each still lands on top of the ones below it.
  void stashedActivationsStackUpWithoutGaps() {
    const int layers = 2000, steps = 4 * layers;
    std::vector<plan::Buffer> bufs;
    for (int k = 0; k < layers; ++k) bufs.push_back({1024, {{0, 2 * k, steps - 1 - 2 * k}}});
    std::vector<size_t> order(bufs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::vector<int64_t> at = plan::place_first_fit(bufs, order, steps);
    for (int k = 0; k < layers; ++k) QCOMPARE(at[size_t(k)], int64_t(k) * 1024);
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
