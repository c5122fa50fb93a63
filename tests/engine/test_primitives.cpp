// Every primitive's VJP against central finite differences, in double precision. The table below
// must name every differentiable primitive: a new primitive without a case fails the test.
#include <QtTest>
#include <cmath>
#include <set>

#include "engine/backends/cpu/executor.h"
#include "engine/ir/primitive.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"

using namespace shardlab;
using ir::Op;

namespace {

enum class Gen { Normal, AwayFromZero, Labels };

struct Case {
  std::string label;
  Op op;
  std::vector<Shape> inputs;
  std::vector<Gen> gen;     // how to draw each input
  std::vector<bool> diff;   // which inputs are differentiable
  ir::Attrs attrs;
  int64_t classes = 0;      // Labels draw from [0, classes); 0: the first input's last dim
};

ir::Attrs mm(bool ta, bool tb) {
  ir::Attrs a;
  a.trans_a = ta;
  a.trans_b = tb;
  return a;
}

ir::Attrs with_alpha(double v) {
  ir::Attrs a;
  a.alpha = v;
  a.seed = 42;
  return a;
}

ir::Attrs with_shape(Shape s) {
  ir::Attrs a;
  a.shape = std::move(s);
  return a;
}

ir::Attrs with_eps(double e) {
  ir::Attrs a;
  a.eps = e;
  return a;
}

// A window of kh x kw with its strides, dilation and padding {top, bottom, left, right}.
ir::Attrs window(std::vector<int64_t> size, std::vector<int64_t> strides, std::vector<int64_t> dilation, std::vector<int64_t> pads,
                 Shape image = {}) {
  ir::Attrs a;
  a.window = std::move(size);
  a.strides = std::move(strides);
  a.dilation = std::move(dilation);
  a.pads = std::move(pads);
  a.shape = std::move(image);
  return a;
}

ir::Attrs with_perm(std::vector<int64_t> perm) {
  ir::Attrs a;
  a.perm = std::move(perm);
  return a;
}

ir::Attrs causal() {
  ir::Attrs a;
  a.causal = true;
  return a;
}

ir::Attrs along(int64_t dim, Shape shape = {}) {
  ir::Attrs a;
  a.dim = dim;
  a.shape = std::move(shape);
  return a;
}

const Gen N = Gen::Normal, Z = Gen::AwayFromZero, L = Gen::Labels;

std::vector<Case> cases() {
  return {
      {"matmul", Op::MatMul, {{3, 4}, {4, 5}}, {N, N}, {true, true}, mm(false, false)},
      {"matmul rank-3 lhs", Op::MatMul, {{2, 3, 4}, {4, 5}}, {N, N}, {true, true}, mm(false, false)},
      {"matmul trans_a", Op::MatMul, {{2, 3, 4}, {2, 3, 5}}, {N, N}, {true, true}, mm(true, false)},
      {"matmul trans_b", Op::MatMul, {{3, 4}, {5, 4}}, {N, N}, {true, true}, mm(false, true)},
      {"matmul trans_a trans_b", Op::MatMul, {{4, 3}, {5, 4}}, {N, N}, {true, true}, mm(true, true)},
      {"add", Op::Add, {{3, 4}, {3, 4}}, {N, N}, {true, true}, {}},
      {"sub", Op::Sub, {{3, 4}, {3, 4}}, {N, N}, {true, true}, {}},
      {"mul", Op::Mul, {{3, 4}, {3, 4}}, {N, N}, {true, true}, {}},
      {"scale", Op::Scale, {{3, 4}}, {N}, {true}, with_alpha(-1.7)},
      {"relu", Op::Relu, {{3, 4}}, {Z}, {true}, {}},
      {"relu_grad", Op::ReluGrad, {{3, 4}, {3, 4}}, {Z, N}, {true, true}, {}},
      {"gelu", Op::Gelu, {{3, 4}}, {N}, {true}, {}},
      {"tanh", Op::Tanh, {{3, 4}}, {N}, {true}, {}},
      {"sigmoid", Op::Sigmoid, {{3, 4}}, {N}, {true}, {}},
      {"tanh_grad", Op::TanhGrad, {{3, 4}, {3, 4}}, {N, N}, {true, true}, {}},
      {"dropout", Op::Dropout, {{4, 8}}, {N}, {true}, with_alpha(0.3)},
      {"bias_add", Op::BiasAdd, {{2, 3, 4}, {4}}, {N, N}, {true, true}, {}},
      {"mul_row", Op::MulRow, {{3, 4}, {4}}, {N, N}, {true, true}, {}},
      {"reduce_rows", Op::ReduceRows, {{2, 3, 4}}, {N}, {true}, {}},
      {"layer_norm", Op::LayerNorm, {{3, 5}}, {N}, {true}, with_eps(1e-5)},
      {"rms_norm", Op::RmsNorm, {{3, 5}}, {N}, {true}, with_eps(1e-5)},
      {"rope (batch, seq, heads, features)", Op::Rope, {{2, 5, 3, 6}}, {N}, {true}, along(1)},
      {"rope, positions last but one", Op::Rope, {{3, 4}}, {N}, {true}, along(0)},
      {"reshape", Op::Reshape, {{2, 6}}, {N}, {true}, with_shape({3, 4})},
      {"stack", Op::Stack, {{2, 3}, {2, 3}, {2, 3}}, {N, N, N}, {true, true, true}, {}},
      {"unstack", Op::Unstack, {{3, 2, 2}}, {N}, {true}, {}},
      {"concat last dim", Op::Concat, {{2, 3}, {2, 1}, {2, 4}}, {N, N, N}, {true, true, true}, along(1)},
      {"concat middle dim", Op::Concat, {{2, 2, 3}, {2, 3, 3}}, {N, N}, {true, true}, along(1)},
      {"split", Op::Split, {{3, 7}}, {N}, {true}, along(1, {2, 4, 1})},
      {"fill", Op::Fill, {}, {}, {}, with_shape({2, 2})},
      {"softmax_cross_entropy", Op::SoftmaxXent, {{4, 5}, {4}}, {N, L}, {true, false}, {}},
      {"mean_squared_error", Op::Mse, {{3, 4}, {3, 4}}, {N, N}, {true, true}, {}},
      {"batch_matmul", Op::BatchMatMul, {{2, 3, 4}, {2, 4, 5}}, {N, N}, {true, true}, mm(false, false)},
      {"batch_matmul trans_b", Op::BatchMatMul, {{2, 2, 3, 4}, {2, 2, 5, 4}}, {N, N}, {true, true}, mm(false, true)},
      {"batch_matmul trans_a", Op::BatchMatMul, {{2, 4, 3}, {2, 4, 5}}, {N, N}, {true, true}, mm(true, false)},
      {"batch_matmul trans_a trans_b", Op::BatchMatMul, {{3, 4, 2}, {3, 5, 4}}, {N, N}, {true, true}, mm(true, true)},
      {"transpose", Op::Transpose, {{2, 3, 4, 5}}, {N}, {true}, with_perm({0, 2, 1, 3})},
      {"transpose reversed", Op::Transpose, {{2, 3, 4}}, {N}, {true}, with_perm({2, 1, 0})},
      {"softmax", Op::Softmax, {{3, 5}}, {N}, {true}, {}},
      {"softmax causal", Op::Softmax, {{2, 4, 4}}, {N}, {true}, causal()},
      {"softmax causal fewer queries", Op::Softmax, {{2, 5}}, {N}, {true}, causal()},
      {"softmax causal more queries", Op::Softmax, {{4, 2}}, {N}, {true}, causal()},
      {"reduce_axis", Op::ReduceAxis, {{2, 3, 4}}, {N}, {true}, along(1)},
      {"broadcast", Op::Broadcast, {{2, 4}}, {N}, {true}, along(1, {2, 3, 4})},
      {"gather", Op::Gather, {{5, 3}, {2, 4}}, {N, L}, {true, false}, {}, 5},
      {"scatter_add", Op::ScatterAdd, {{2, 4}, {2, 4, 3}}, {L, N}, {false, true}, along(0, {5, 3}), 5},
      // Rounding to a narrower type has a zero derivative almost everywhere; Convert's VJP passes the
      // cotangent through (cast back), as JAX's convert_element_type does. That convention is checked
      // on a convert to the operand's own type, which finite differences can see.
      {"convert", Op::Convert, {{3, 4}}, {N}, {true}, {}},
      {"patches", Op::Patches, {{2, 5, 6, 3}}, {N}, {true}, window({3, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0})},
      {"patches strided, dilated, padded", Op::Patches, {{2, 6, 5, 2}}, {N}, {true}, window({3, 3}, {2, 1}, {1, 2}, {0, 1, 2, 1})},
      // (2, 6, 5, 2) under window 3x3, strides (2, 1), dilation (1, 2), pads (0, 1, 2, 1): (2, 3, 4, 3, 3, 2)
      {"patches_grad", Op::PatchesGrad, {{2, 3, 4, 3, 3, 2}}, {N}, {true}, window({3, 3}, {2, 1}, {1, 2}, {0, 1, 2, 1}, {2, 6, 5, 2})},
      {"reduce_max", Op::ReduceMax, {{2, 5, 3}}, {N}, {true}, along(1)},
  };
}

// Primitives that only appear in backward programs or as metrics and updates; none of them is
// ever differentiated by the engine (second derivatives are out of scope).
// Collectives are inserted by the partitioner after autodiff, so they need no VJP either.
const std::set<Op> kNotDifferentiable = {Op::GeluGrad,  Op::LayerNormGrad, Op::SoftmaxGrad, Op::SoftmaxXentGrad, Op::MseGrad,
                                         Op::Accuracy,  Op::SgdUpdate,     Op::AdamUpdate,      Op::AllReduce,
                                         Op::AllGather, Op::ReduceScatter, Op::AllToAll,      Op::ShardSlice,
                                         Op::AllGatherInPlace, Op::Send,    Op::Recv, Op::CountNonFinite, Op::ReduceMaxGrad, Op::SigmoidGrad, Op::RmsNormGrad};

double draw(Gen g, uint64_t key, uint64_t i, int64_t classes) {
  const double u = double(util::mix64(key ^ util::mix64(i)) >> 11) * 0x1.0p-53;
  const double v = double(util::mix64(key ^ util::mix64(i + 7919)) >> 11) * 0x1.0p-53;
  const double n = std::sqrt(-2.0 * std::log(u + 1e-300)) * std::cos(6.283185307179586 * v);
  switch (g) {
    case Gen::Normal: return n;
    case Gen::AwayFromZero: return (n >= 0 ? 1 : -1) * (0.2 + std::abs(n));
    case Gen::Labels: return double(util::mix64(key + i) % uint64_t(classes));
  }
  return 0;
}

}  // namespace

class TestPrimitives : public QObject {
  Q_OBJECT
 private slots:
  void everyDifferentiablePrimitiveHasACase();
  void everyPrimitiveHasAShardingRule();
  void vjpMatchesFiniteDifferences_data();
  void gatherNamesAnIdOutsideTheTable();
  void vjpMatchesFiniteDifferences();
};

void TestPrimitives::everyDifferentiablePrimitiveHasACase() {
  std::set<Op> covered;
  for (const Case& c : cases()) covered.insert(c.op);
  for (int i = 0; i < int(Op::kCount); ++i) {
    const Op op = Op(i);
    const ir::Primitive& p = ir::primitive(op);
    if (kNotDifferentiable.count(op)) {
      QVERIFY2(!p.vjp, qPrintable(QString("%1 has a VJP now: give it a case in the table").arg(p.name)));
      continue;
    }
    QVERIFY2(p.vjp, qPrintable(QString("%1 has no VJP and is not listed as backward-only").arg(p.name)));
    QVERIFY2(covered.count(op), qPrintable(QString("primitive %1 has no finite-difference case").arg(p.name)));
  }
}

// Every primitive the partitioner can meet says how it runs on a mesh; only the collectives,
// which the partitioner itself inserts, have none.
void TestPrimitives::everyPrimitiveHasAShardingRule() {
  const std::set<Op> collectives = {Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::AllToAll, Op::ShardSlice,
                                   Op::AllGatherInPlace, Op::Send, Op::Recv};
  for (int i = 0; i < int(Op::kCount); ++i) {
    const ir::Primitive& p = ir::primitive(Op(i));
    QVERIFY2(bool(p.partition) != bool(collectives.count(Op(i))), p.name);
  }
}

void TestPrimitives::vjpMatchesFiniteDifferences_data() {
  QTest::addColumn<int>("index");
  auto all = cases();
  for (size_t i = 0; i < all.size(); ++i) QTest::newRow(all[i].label.c_str()) << int(i);
}

void TestPrimitives::vjpMatchesFiniteDifferences() {
  QFETCH(int, index);
  const Case c = cases()[size_t(index)];
  ir::Program p;
  std::vector<int> x;
  for (size_t i = 0; i < c.inputs.size(); ++i) x.push_back(p.add_value("x" + std::to_string(i), c.inputs[i], ir::ValueKind::Input));
  std::vector<int> y = p.apply(c.op, x, c.attrs, "case");
  const size_t forward_end = p.instrs.size();
  // Objective: sum_k <y_k, w_k> with fixed random w_k, so the cotangent of y_k is w_k.
  ir::Cotangents ct;
  std::vector<int> w;
  for (size_t k = 0; k < y.size(); ++k) {
    w.push_back(p.add_value("w" + std::to_string(k), p.shape(y[k]), ir::ValueKind::Input));
    ct.push_back(w.back());
  }
  const ir::Instr forward = p.instrs[0];  // a copy: the VJP appends to p.instrs
  ir::Cotangents dx = ir::primitive(c.op).vjp(p, forward, ct, c.diff);
  QCOMPARE(dx.size(), x.size());

  std::vector<int> keep;
  for (size_t v = 0; v < p.values.size(); ++v) keep.push_back(int(v));
  backends::cpu::Executor<double> ex(p, plan::plan_memory(p, keep));
  const int64_t classes = c.classes ? c.classes : c.inputs.empty() ? 1 : c.inputs[0].back();
  for (size_t i = 0; i < x.size(); ++i)
    for (int64_t j = 0; j < numel(c.inputs[i]); ++j) ex.data(x[i])[j] = draw(c.gen[i], 100 + i, uint64_t(j), classes);
  for (size_t k = 0; k < w.size(); ++k)
    for (int64_t j = 0; j < numel(p.shape(w[k])); ++j) ex.data(w[k])[j] = draw(Gen::Normal, 200 + k, uint64_t(j), 1);
  ex.run({0, 0.0});

  // Re-running only the forward instructions gives the objective at perturbed inputs.
  ir::Program fwd = p;
  fwd.instrs.resize(forward_end);
  backends::cpu::Executor<double> fx(fwd, plan::plan_memory(fwd, keep));
  auto objective = [&]() {
    for (size_t i = 0; i < x.size(); ++i)
      std::copy(ex.data(x[i]), ex.data(x[i]) + numel(c.inputs[i]), fx.data(x[i]));
    fx.run({0, 0.0});
    double s = 0;
    for (size_t k = 0; k < y.size(); ++k)
      for (int64_t j = 0; j < numel(p.shape(y[k])); ++j) s += fx.data(y[k])[j] * ex.data(w[k])[j];
    return s;
  };
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!c.diff[i]) continue;
    QVERIFY2(dx[i].has_value() || c.op == Op::ReluGrad, qPrintable(QString("no cotangent for input %1").arg(i)));
    for (int64_t j = 0; j < numel(c.inputs[i]); ++j) {
      double* xi = ex.data(x[i]) + j;
      const double saved = *xi;
      *xi = saved + h;
      const double up = objective();
      *xi = saved - h;
      const double down = objective();
      *xi = saved;
      const double numeric = (up - down) / (2 * h);
      const double analytic = dx[i] ? ex.data(*dx[i])[j] : 0.0;
      const double tol = 1e-6 * std::max(1.0, std::abs(numeric));
      QVERIFY2(std::abs(numeric - analytic) <= tol,
               qPrintable(QString("%1: d/dx%2[%3]: analytic %4, finite difference %5")
                              .arg(c.label.c_str()).arg(i).arg(j).arg(analytic, 0, 'g', 12).arg(numeric, 0, 'g', 12)));
    }
  }
}

// A token id the embedding table has no row for stops the step, naming the id and its position.
void TestPrimitives::gatherNamesAnIdOutsideTheTable() {
  ir::Program p;
  const int table = p.add_value("table", {4, 3}, ir::ValueKind::Param);
  const int ids = p.add_value("ids", {2, 2}, ir::ValueKind::Input);
  const int y = p.apply1(Op::Gather, {table, ids}, {}, "embed");
  backends::cpu::Executor<double> ex(p, plan::plan_memory(p, {y}));
  const double bad[] = {0, 3, 4, 1};
  std::copy(bad, bad + 4, ex.data(ids));
  QString msg;
  try {
    ex.run({0, 0.0});
  } catch (const Error& e) {
    msg = e.what();
  }
  QVERIFY2(msg.contains("id 4") && msg.contains("position 2") && msg.contains("[0, 4)"), qPrintable(msg));
}

QTEST_APPLESS_MAIN(TestPrimitives)
#include "test_primitives.moc"
