// Every primitive, forward and VJP, on every backend this build has, against the CPU executor in
// double precision (ggml's test-backend-ops habit). Shapes are drawn at random (seeded, so a failure
// reproduces) from sizes that leave remainders in vector loops and GEMM tiles; every value a run
// must produce starts as NaN, so an element a kernel never writes fails. The table must name every
// primitive but the collectives, which test_collectives and test_spmd check against references of
// their own. Each case runs with its float operands in float32, bfloat16 and float16 (labels and
// ids are int32, optimizer state float32); the reference is the float32 program in double precision
// on the same (rounded) inputs, and the tolerance is the dtype's.
#include <QtTest>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "engine/backends/backend.h"
#include "engine/backends/cpu/executor.h"
#include "engine/ir/primitive.h"
#include "engine/project/project.h"
#include "engine/runtime/preflight.h"
#include "engine/runtime/train_step.h"
#include "engine/sharding/mesh.h"
#include "engine/tensor/convert.h"
#include "engine/util/hash.h"
#include "tests/engine/odd_mlp.h"

using namespace shardlab;
using ir::Op;
using ir::ValueKind;

namespace {

// float32 against float64 on inputs of order one: a few ulps per element, a little more where a
// reduction or a GEMM sums a few thousand terms.
constexpr double kTolerance = 1e-5;
// A 16-bit result is float32 arithmetic rounded once to 8 (bfloat16) or 11 (float16) significant
// bits: a relative error of at most 2^-9 or 2^-12 per element; a VJP that reads a rounded forward
// value (softmax's, tanh's output) rounds twice. Four half-ulps of headroom.
double tolerance_of(DType d) { return d == DType::BF16 ? 1.6e-2 : d == DType::F16 ? 2e-3 : kTolerance; }
const DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};
constexpr int kDraws = 6;  // random shapes per case

enum class Gen { Normal, AwayFromZero, Positive, Labels, SomeNonFinite, Zero };

struct Operand {
  Shape shape;
  Gen gen = Gen::Normal;
  ValueKind kind = ValueKind::Input;
};

// One draw of a case: its operands and attributes.
struct Instance {
  std::vector<Operand> operands;
  ir::Attrs attrs;
};

using Rng = std::mt19937_64;

struct Case {
  std::string label;
  Op op;
  std::function<Instance(Rng&)> draw;
  int64_t step = 0;            // the run's step: dropout's stream, Adam's bias correction
  double learning_rate = 0.0;  // optimizer updates only
  double loss_scale = 1.0;     // loss-scaled updates only
};

// Cases whose operands stay float32 in every dtype run, and why.
const std::map<Op, const char*> kFloat32Only = {
    {Op::SoftmaxXent, "a loss reads float32 predictions (mixed precision converts them first)"},
    {Op::SoftmaxXentGrad, "a loss reads float32 predictions"},
    {Op::Mse, "a loss reads float32 predictions"},
    {Op::MseGrad, "a loss reads float32 predictions"},
    {Op::Accuracy, "a metric reads float32 predictions"},
};

// Collectives run between the devices of a mesh; their conformance lives beside their transports.
const std::map<Op, const char*> kExempt = {
    {Op::AllReduce, "collective: tests/engine/test_collectives.cpp"},
    {Op::AllGather, "collective: tests/engine/test_collectives.cpp"},
    {Op::ReduceScatter, "collective: tests/engine/test_collectives.cpp"},
    {Op::AllToAll, "collective: tests/engine/test_collectives.cpp"},
    {Op::ShardSlice, "partitioner-inserted slice of a mesh device's block: tests/engine/test_spmd.cpp"},
    {Op::AllGatherInPlace, "collective ending a sharded weight update: tests/engine/test_weight_update.cpp"},
    {Op::Send, "pipeline transfer between stages: tests/engine/test_pipeline.cpp, tests/engine/test_collectives.cpp"},
    {Op::Recv, "pipeline transfer between stages: tests/engine/test_pipeline.cpp, tests/engine/test_collectives.cpp"},
};

// Sizes that leave remainders in vector loops and GEMM edge tiles (1, odd primes, one past 2^k).
int64_t dim(Rng& r) {
  static const int64_t sizes[] = {1, 2, 3, 5, 7, 13, 16, 33};
  return sizes[r() % 8];
}

Shape shape(Rng& r, size_t min_rank = 1, size_t max_rank = 3) {
  Shape s(min_rank + r() % (max_rank - min_rank + 1));
  for (auto& d : s) d = dim(r);
  return s;
}

// Above the kernels' threading threshold (2^15 elements), so their parallel loops run too.
Shape threaded(Rng& r) { return {int64_t(33 + r() % 5), int64_t(1025 + 2 * (r() % 4))}; }

// Rows a multiple of 8 wide (16 bytes of a 16-bit type) and more of them than a column
// reduction's run (64): the CUDA kernels' 16-byte paths, and partial sums over several runs.
Shape vector_rows(Rng& r) { return {int64_t(65 + r() % 100), int64_t(8 * (1 + r() % 12))}; }

double uniform(Rng& r) { return double(r() >> 11) * 0x1.0p-53; }

// Operands of one shape, drawn as `gens` say.
std::function<Instance(Rng&)> same(std::vector<Gen> gens, std::function<ir::Attrs(Rng&)> attrs = {},
                                   std::function<Shape(Rng&)> of = {}) {
  return [=](Rng& r) {
    Instance in;
    const Shape s = of ? of(r) : shape(r);
    for (Gen g : gens) in.operands.push_back({s, g});
    if (attrs) in.attrs = attrs(r);
    return in;
  };
}

// op(A) (m, k) @ op(B) (k, n), with A's leading dims folded into its rows (or into the contraction
// when transposed) and B's likewise, as a Dense layer on (batch, seq, embed) and its gradients use it.
std::function<Instance(Rng&)> matmul(bool ta, bool tb) {
  return [=](Rng& r) {
    Instance in;
    in.attrs.trans_a = ta;
    in.attrs.trans_b = tb;
    Shape a_rows = shape(r, 1, 2);
    int64_t rows = 1;
    for (int64_t d : a_rows) rows *= d;
    const int64_t m = ta ? dim(r) : rows, k = ta ? rows : dim(r), n = dim(r);
    Shape a = a_rows;
    a.push_back(ta ? m : k);
    Shape b = tb ? Shape{n, k} : Shape{k, n};
    if (ta && !tb) b = a_rows, b.push_back(n);  // (2, 3, 4)^T @ (2, 3, 5): a weight gradient
    in.operands = {Operand{a}, Operand{b}};
    return in;
  };
}

// Past the AVX-512 GEMM's cache blocks (MC = 240 rows, KC = 512 deep) and its 12 x 32 register
// tile, with remainders in each.
Instance blocked_matmul(Rng& r) {
  const int64_t m = 241 + int64_t(r() % 20), k = 513 + int64_t(r() % 40), n = 33 + int64_t(r() % 40);
  Instance in;
  in.operands = {Operand{Shape{m, k}}, Operand{Shape{k, n}}};
  return in;
}

// (x, row) with row the size of x's last dimension.
std::function<Instance(Rng&)> with_row(std::function<Shape(Rng&)> of = {}) {
  return [=](Rng& r) {
    const Shape s = of ? of(r) : shape(r);
    Instance in;
    in.operands = {Operand{s}, Operand{Shape{s.back()}}};
    return in;
  };
}

// Logits (..., classes) and labels of the leading shape, plus a scalar cotangent for the gradients.
std::function<Instance(Rng&)> classification(bool with_cotangent) {
  return [=](Rng& r) {
    const Shape s = shape(r);
    Instance in;
    in.operands = {Operand{s}, Operand{Shape(s.begin(), s.end() - 1), Gen::Labels, ValueKind::Target}};
    if (with_cotangent) in.operands.push_back(Operand{Shape{}});
    return in;
  };
}

std::function<Instance(Rng&)> mse_grad() {
  return [](Rng& r) {
    const Shape s = shape(r);
    Instance in;
    in.operands = {Operand{s}, Operand{s, Gen::Normal, ValueKind::Target}, Operand{Shape{}}};
    return in;
  };
}

// A row of two normalises to exactly (-1, 1) but for eps, so its gradient is eps-sized cancellation
// noise in any precision: rows of one (zeros) and of three or more are well conditioned.
Shape layer_norm_rows(Rng& r) {
  Shape s = shape(r);
  if (s.back() == 2) s.back() = 3;
  return s;
}

// A row of one RMS-normalises to +-1 but for eps, so its gradient is eps-sized cancellation noise:
// rows of two or more are well conditioned.
Shape rms_norm_rows(Rng& r) {
  Shape s = shape(r);
  if (s.back() == 1) s.back() = 2;
  return s;
}

ir::Attrs layer_norm_eps(Rng&) {
  ir::Attrs a;
  a.eps = 1e-5;
  return a;
}

ir::Attrs dropout_rate(Rng& r) {
  ir::Attrs a;
  a.alpha = r() % 2 ? 0.1 : 0.5;
  a.seed = r();
  return a;
}

// (x) reshaped to the same elements regrouped: (a, b * c) -> (a * b, c).
Instance reshape(Rng& r) {
  const int64_t a = dim(r), b = dim(r), c = dim(r);
  Instance in;
  in.operands = {Operand{Shape{a, b * c}}};
  in.attrs.shape = {a * b, c};
  return in;
}

Instance stack(Rng& r) {
  const Shape s = shape(r);
  Instance in;
  in.operands.assign(1 + r() % 4, Operand{s});
  return in;
}

Instance unstack(Rng& r) {
  Shape s = shape(r, 0, 2);
  s.insert(s.begin(), 1 + int64_t(r() % 5));
  Instance in;
  in.operands = {Operand{s}};
  return in;
}

// Operands equal but along a drawn dim, joined there.
Instance concat(Rng& r) {
  const Shape s = shape(r);
  Instance in;
  in.attrs.dim = int64_t(r() % s.size());
  for (size_t k = 0, parts = 1 + r() % 3; k < parts; ++k) {
    Shape part = s;
    part[size_t(in.attrs.dim)] = dim(r);
    in.operands.push_back(Operand{part});
  }
  return in;
}

// An operand cut along a drawn dim into drawn parts.
Instance split(Rng& r) {
  Shape s = shape(r);
  Instance in;
  in.attrs.dim = int64_t(r() % s.size());
  int64_t total = 0;
  for (size_t k = 0, parts = 1 + r() % 3; k < parts; ++k) total += in.attrs.shape.emplace_back(dim(r));
  s[size_t(in.attrs.dim)] = total;
  in.operands = {Operand{s}};
  return in;
}

Instance fill(Rng& r) {
  Instance in;
  in.attrs.shape = shape(r);
  in.attrs.alpha = uniform(r) * 4 - 2;
  return in;
}

// Gradient and update-state pairs, some elements inf or NaN.
Instance count_non_finite(Rng& r) {
  Instance in;
  for (int k = 1 + int(r() % 3); k > 0; --k) {
    const Shape s = shape(r);
    in.operands.push_back(Operand{s, Gen::SomeNonFinite});
    in.operands.push_back(Operand{s, Gen::Normal, ValueKind::OptState});
  }
  return in;
}

// Parameter, gradient, then optimizer state (momentum trace; Adam's mu and nu); loss-scaled, the
// step's count of non-finite gradient elements last (`overflowed`: not 0, so nothing may change).
std::function<Instance(Rng&)> update(int states, double momentum, bool nesterov, double weight_decay,
                                     std::function<Shape(Rng&)> of = {}, bool loss_scaled = false, bool overflowed = false) {
  return [=](Rng& r) {
    const Shape s = of ? of(r) : shape(r);
    Instance in;
    in.operands = {Operand{s, Gen::Normal, ValueKind::Param}, Operand{s}};
    for (int k = 0; k < states; ++k)  // nu, a running mean of squares, is never negative
      in.operands.push_back(Operand{s, states == 2 && k == 1 ? Gen::Positive : Gen::Normal, ValueKind::OptState});
    if (loss_scaled) in.operands.push_back(Operand{Shape{}, overflowed ? Gen::Positive : Gen::Zero, ValueKind::OptState});
    in.attrs.loss_scaled = loss_scaled;
    in.attrs.momentum = momentum;
    in.attrs.nesterov = nesterov;
    in.attrs.weight_decay = weight_decay;
    return in;
  };
}

// (batch..., m, k) @ (batch..., k, n), either side transposed: attention's per-head products.
std::function<Instance(Rng&)> batch_matmul(bool ta, bool tb) {
  return [=](Rng& r) {
    Instance in;
    in.attrs.trans_a = ta;
    in.attrs.trans_b = tb;
    const Shape batch = shape(r, 1, 2);
    const int64_t m = dim(r), k = dim(r), n = dim(r);
    Shape a = batch, b = batch;
    a.insert(a.end(), {ta ? k : m, ta ? m : k});
    b.insert(b.end(), {tb ? n : k, tb ? k : n});
    in.operands = {Operand{a}, Operand{b}};
    return in;
  };
}

Instance transpose(Rng& r) {
  const Shape s = shape(r, 2, 4);
  Instance in;
  in.operands = {Operand{s}};
  in.attrs.perm.resize(s.size());
  for (size_t d = 0; d < s.size(); ++d) in.attrs.perm[d] = int64_t(d);
  std::shuffle(in.attrs.perm.begin(), in.attrs.perm.end(), r);
  return in;
}

// Rank >= 2 for the causal mask over (queries, keys).
std::function<Instance(Rng&)> softmax(int operands, bool causal) {
  return [=](Rng& r) {
    const Shape s = shape(r, 2, 3);
    Instance in;
    in.operands.assign(size_t(operands), Operand{s});
    in.attrs.causal = causal;
    return in;
  };
}

Instance reduce_axis(Rng& r) {
  const Shape s = shape(r, 1, 3);
  Instance in;
  in.operands = {Operand{s}};
  in.attrs.dim = int64_t(r() % s.size());
  return in;
}

// An image (batch, h, w, c) and a window over it that fits: size, strides, dilation and zero padding.
Instance windows(Rng& r) {
  const Shape image{int64_t(1 + r() % 3), int64_t(3 + r() % 6), int64_t(3 + r() % 6), int64_t(1 + r() % 5)};
  Instance in;
  in.operands = {Operand{image}};
  ir::Attrs& a = in.attrs;
  a.window = {int64_t(1 + r() % 3), int64_t(1 + r() % 3)};
  a.strides = {int64_t(1 + r() % 2), int64_t(1 + r() % 2)};
  a.dilation = {int64_t(1 + r() % 2), int64_t(1 + r() % 2)};
  a.pads = {int64_t(r() % 2), int64_t(r() % 2), int64_t(r() % 2), int64_t(r() % 2)};
  for (size_t d = 0; d < 2; ++d)
    if (a.dilation[d] * (a.window[d] - 1) + 1 > image[1 + d] + a.pads[2 * d] + a.pads[2 * d + 1]) a.dilation[d] = 1;
  return in;
}

// The windows of such an image, to be added back into it.
Instance windows_back(Rng& r) {
  Instance in = windows(r);
  in.attrs.shape = in.operands[0].shape;
  in.operands[0].shape = ir::primitive(Op::Patches).shapes({in.attrs.shape}, in.attrs).at(0);
  return in;
}

Instance reduce_max_grad(Rng& r) {
  Instance in = reduce_axis(r);
  Shape g = in.operands[0].shape;
  g.erase(g.begin() + in.attrs.dim);
  in.operands.push_back(Operand{g});
  return in;
}

// (outer, positions, mid, features) with features even, turned along a random position dim.
Instance rope(Rng& r) {
  Shape s = shape(r, 1, 3);
  s.push_back(2 * int64_t(1 + r() % 9));
  Instance in;
  in.operands = {Operand{s}};
  in.attrs.dim = int64_t(r() % (s.size() - 1));
  in.attrs.rope_theta = r() % 2 ? 10000.0 : 500000.0;
  return in;
}

Instance broadcast(Rng& r) {
  const Shape s = shape(r, 0, 2);
  Instance in;
  in.operands = {Operand{s}};
  in.attrs.dim = int64_t(r() % (s.size() + 1));
  in.attrs.shape = s;
  in.attrs.shape.insert(in.attrs.shape.begin() + in.attrs.dim, dim(r));
  return in;
}

// A (vocab, features...) table and ids below the table's last dim (draw's class count), which the
// vocabulary exceeds.
Instance gather(Rng& r) {
  Shape table = shape(r, 1, 2);
  table.insert(table.begin(), table.back() + dim(r));
  Instance in;
  in.operands = {Operand{table}, Operand{shape(r, 1, 2), Gen::Labels}};
  return in;
}

Instance scatter_add(Rng& r) {
  const Shape ids = shape(r, 1, 2), features = shape(r, 0, 1);
  Shape rows = ids;
  rows.insert(rows.end(), features.begin(), features.end());
  Instance in;
  in.operands = {Operand{ids, Gen::Labels}, Operand{rows}};
  in.attrs.shape = features;
  in.attrs.shape.insert(in.attrs.shape.begin(), ids.back() + dim(r));
  return in;
}

const Gen N = Gen::Normal, Z = Gen::AwayFromZero;

std::vector<Case> cases() {
  auto scale = [](Rng& r) {
    ir::Attrs a;
    a.alpha = uniform(r) * 4 - 2;
    return a;
  };
  return {
      {"matmul", Op::MatMul, matmul(false, false)},
      {"matmul trans_a", Op::MatMul, matmul(true, false)},
      {"matmul trans_b", Op::MatMul, matmul(false, true)},
      {"matmul trans_a trans_b", Op::MatMul, matmul(true, true)},
      {"matmul blocked", Op::MatMul, blocked_matmul},
      {"add", Op::Add, same({N, N})},
      {"add threaded", Op::Add, same({N, N}, {}, threaded)},
      {"sub", Op::Sub, same({N, N})},
      {"mul", Op::Mul, same({N, N})},
      {"scale", Op::Scale, same({N}, scale)},
      {"relu", Op::Relu, same({Z})},
      {"relu_grad", Op::ReluGrad, same({Z, N})},
      {"relu_grad threaded", Op::ReluGrad, same({Z, N}, {}, threaded)},
      {"gelu", Op::Gelu, same({N})},
      {"gelu threaded", Op::Gelu, same({N}, {}, threaded)},
      {"gelu_grad", Op::GeluGrad, same({N, N})},
      {"tanh", Op::Tanh, same({N})},
      {"sigmoid", Op::Sigmoid, same({N})},
      {"sigmoid_grad", Op::SigmoidGrad, same({N, N})},
      {"tanh_grad", Op::TanhGrad, same({N, N})},
      {"dropout", Op::Dropout, same({N}, dropout_rate), 3},
      {"dropout threaded", Op::Dropout, same({N}, dropout_rate, threaded), 3},
      {"bias_add", Op::BiasAdd, with_row()},
      {"bias_add threaded", Op::BiasAdd, with_row(threaded)},
      {"mul_row", Op::MulRow, with_row()},
      {"reduce_rows", Op::ReduceRows, same({N})},
      {"reduce_rows vector rows", Op::ReduceRows, same({N}, {}, vector_rows)},
      {"layer_norm", Op::LayerNorm, same({N}, layer_norm_eps, layer_norm_rows)},
      {"rms_norm", Op::RmsNorm, same({N}, layer_norm_eps, rms_norm_rows)},
      {"rms_norm_grad", Op::RmsNormGrad, same({N, N}, layer_norm_eps, rms_norm_rows)},
      {"rope", Op::Rope, rope},
      {"layer_norm threaded", Op::LayerNorm, same({N}, layer_norm_eps, threaded)},
      {"layer_norm_grad", Op::LayerNormGrad, same({N, N}, layer_norm_eps, layer_norm_rows)},
      {"reshape", Op::Reshape, reshape},
      {"stack", Op::Stack, stack},
      {"unstack", Op::Unstack, unstack},
      {"concat", Op::Concat, concat},
      {"split", Op::Split, split},
      {"fill", Op::Fill, fill},
      {"softmax_cross_entropy", Op::SoftmaxXent, classification(false)},
      {"softmax_cross_entropy_grad", Op::SoftmaxXentGrad, classification(true)},
      {"mean_squared_error", Op::Mse, same({N, N})},
      {"mean_squared_error_grad", Op::MseGrad, mse_grad()},
      {"accuracy", Op::Accuracy, classification(false)},
      {"sgd", Op::SgdUpdate, update(0, 0.0, false, 0.0), 0, 0.1},
      {"sgd momentum", Op::SgdUpdate, update(1, 0.9, false, 0.0), 0, 0.1},
      {"sgd nesterov", Op::SgdUpdate, update(1, 0.9, true, 0.0), 0, 0.1},
      {"adam first step", Op::AdamUpdate, update(2, 0, false, 0.0), 0, 0.1},
      {"adam step 7", Op::AdamUpdate, update(2, 0, false, 0.0), 7, 0.1},
      {"adamw", Op::AdamUpdate, update(2, 0, false, 0.01), 2, 0.1},
      {"adam threaded", Op::AdamUpdate, update(2, 0, false, 0.0, threaded), 1, 0.1},
      {"adamw vector rows", Op::AdamUpdate, update(2, 0, false, 0.01, vector_rows), 4, 0.1},
      {"adam loss-scaled", Op::AdamUpdate, update(2, 0, false, 0.0, {}, true), 3, 0.1, 1024.0},
      {"adam loss-scaled overflowed", Op::AdamUpdate, update(2, 0, false, 0.0, {}, true, true), 3, 0.1, 1024.0},
      {"sgd momentum loss-scaled", Op::SgdUpdate, update(1, 0.9, false, 0.0, {}, true), 0, 0.1, 256.0},
      {"sgd loss-scaled overflowed", Op::SgdUpdate, update(0, 0.0, false, 0.0, {}, true, true), 0, 0.1, 256.0},
      {"count_non_finite", Op::CountNonFinite, count_non_finite},
      {"convert", Op::Convert, same({N})},
      {"convert vector rows", Op::Convert, same({N}, {}, vector_rows)},
      {"batch_matmul", Op::BatchMatMul, batch_matmul(false, false)},
      {"batch_matmul trans_a", Op::BatchMatMul, batch_matmul(true, false)},
      {"batch_matmul trans_b", Op::BatchMatMul, batch_matmul(false, true)},
      {"batch_matmul trans_a trans_b", Op::BatchMatMul, batch_matmul(true, true)},
      {"transpose", Op::Transpose, transpose},
      {"softmax", Op::Softmax, softmax(1, false)},
      {"softmax causal", Op::Softmax, softmax(1, true)},
      {"softmax_grad", Op::SoftmaxGrad, softmax(2, false)},
      {"reduce_axis", Op::ReduceAxis, reduce_axis},
      {"broadcast", Op::Broadcast, broadcast},
      {"gather", Op::Gather, gather},
      {"scatter_add", Op::ScatterAdd, scatter_add},
      {"patches", Op::Patches, windows},
      {"patches_grad", Op::PatchesGrad, windows_back},
      {"reduce_max", Op::ReduceMax, reduce_axis},
      {"reduce_max_grad", Op::ReduceMaxGrad, reduce_max_grad},
  };
}

// A value drawn as `g` says, a pure function of (key, index), rounded to float so the backend and
// the reference see the same number.
float draw(Gen g, uint64_t key, uint64_t i, int64_t classes) {
  const double u = double(util::mix64(key ^ util::mix64(i)) >> 11) * 0x1.0p-53;
  const double v = double(util::mix64(key ^ util::mix64(i + 7919)) >> 11) * 0x1.0p-53;
  const double n = std::sqrt(-2.0 * std::log(u + 1e-300)) * std::cos(6.283185307179586 * v);
  switch (g) {
    case Gen::Normal: return float(n);
    case Gen::AwayFromZero: return float((n >= 0 ? 1 : -1) * (0.2 + std::abs(n)));
    case Gen::Positive: return float(std::abs(n));
    case Gen::Labels: return float(util::mix64(key + i) % uint64_t(std::max<int64_t>(classes, 1)));
    case Gen::Zero: return 0.f;
    case Gen::SomeNonFinite: {
      const uint64_t h = util::mix64(key * 31 + i);
      return h % 7 == 0 ? std::numeric_limits<float>::infinity() : h % 11 == 0 ? std::numeric_limits<float>::quiet_NaN() : float(n);
    }
  }
  return 0;
}

// Where a case's results may live: each in its own buffer (every one of them poisoned), or where
// the memory plan puts them when only the results are kept (in place over their operands, over
// dead inputs), which is how a training step runs.
enum class Buffers { Separate, Shared };
const char* buffers_name(Buffers b) { return b == Buffers::Separate ? "separate buffers" : "shared buffers"; }

// One case as a program: the primitive, then its VJP applied to random cotangents.
struct Built {
  ir::Program program;
  std::vector<int> fed;          // written before a run: operands, cotangents, parameters, state
  std::vector<Gen> fed_gen;
  std::vector<int> results;      // read after it: outputs, input cotangents, updated state
  std::vector<std::string> result_names;
};

// The dtype a case's operand takes in a run of float dtype `dt`: labels and ids int32, optimizer
// state (and a loss-scaled update's count) float32, a float32-only case's operands float32.
DType operand_dtype(const Case& c, const Operand& o, DType dt) {
  if (o.gen == Gen::Labels) return DType::I32;
  if (o.kind == ValueKind::OptState || kFloat32Only.count(c.op)) return DType::F32;
  return dt;
}

Built build(const Case& c, Instance inst, Buffers buffers, DType dt = DType::F32) {
  Built b;
  ir::Program& p = b.program;
  if (c.op == Op::Fill) inst.attrs.dtype = dt;
  // Convert goes between float32 and the run's dtype (bfloat16 in the float32 run).
  if (c.op == Op::Convert) inst.attrs.dtype = dt == DType::F32 ? DType::BF16 : DType::F32;
  // `s` by value: a caller's p.shape(v) refers into p.values, which add_value may reallocate.
  auto feed = [&](const std::string& name, Shape s, ValueKind kind, Gen g, DType d) {
    int v = p.add_value(name, s, kind, {}, d);
    b.fed.push_back(v);
    b.fed_gen.push_back(g);
    // Through a copy, an operand becomes a temporary that the plan lets a result overwrite in place.
    if (buffers == Buffers::Shared && (kind == ValueKind::Input || kind == ValueKind::Target)) {
      ir::Attrs same_shape;
      same_shape.shape = s;
      v = p.apply1(Op::Reshape, {v}, same_shape, "copy", name + "_copy");
    }
    return v;
  };
  auto result = [&](int v, const std::string& name) {
    if (std::find(b.results.begin(), b.results.end(), v) != b.results.end()) return;
    b.results.push_back(v);
    b.result_names.push_back(name);
  };
  std::vector<int> x;
  std::vector<bool> needs;
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    const Operand& o = inst.operands[i];
    x.push_back(feed("x" + std::to_string(i), o.shape, o.kind, o.gen, operand_dtype(c, o, dt)));
    needs.push_back(o.gen != Gen::Labels);
  }
  const std::vector<int> y = p.apply(c.op, x, inst.attrs, "case", "y");
  const size_t forward = p.instrs.size() - 1;
  for (size_t k = 0; k < y.size(); ++k) result(y[k], "y" + std::to_string(k));
  // Updates write their parameter and state in place.
  for (size_t i = 0; i < inst.operands.size(); ++i)
    if (inst.operands[i].kind == ValueKind::Param || inst.operands[i].kind == ValueKind::OptState)
      result(x[i], "x" + std::to_string(i) + " updated");

  const ir::Primitive& prim = ir::primitive(c.op);
  if (prim.vjp) {
    ir::Cotangents ct;
    for (size_t k = 0; k < y.size(); ++k)
      ct.push_back(feed("dy" + std::to_string(k), p.shape(y[k]), ValueKind::Input, Gen::Normal, p.dtype(y[k])));
    const ir::Instr ins = p.instrs[forward];  // a copy: the VJP appends to p.instrs
    const ir::Cotangents dx = prim.vjp(p, ins, ct, needs);
    for (size_t i = 0; i < dx.size(); ++i)
      if (dx[i]) result(*dx[i], "dx" + std::to_string(i));
  }
  return b;
}

std::vector<int> every_value(const ir::Program& p) {
  std::vector<int> all(p.values.size());
  for (size_t v = 0; v < all.size(); ++v) all[v] = int(v);
  return all;
}

// What a failure prints: the operands' shapes and the attributes that matter.
QString describe(const Case& c, int draw_index, const Instance& inst, Buffers buffers, DType dt) {
  QStringList shapes;
  for (const Operand& o : inst.operands) shapes << QString::fromStdString(shape_str(o.shape));
  QString s = QString("%1 in %5 [draw %2, %3] operands %4")
                  .arg(QString(c.label.c_str()))
                  .arg(draw_index)
                  .arg(QString(buffers_name(buffers)), shapes.join(" "), QString(dtype_name(dt)));
  if (c.op == Op::Reshape || c.op == Op::Fill) s += QString(" to %1").arg(QString::fromStdString(shape_str(inst.attrs.shape)));
  if (inst.attrs.trans_a || inst.attrs.trans_b) s += QString(" trans_a=%1 trans_b=%2").arg(inst.attrs.trans_a).arg(inst.attrs.trans_b);
  return s;
}

// Empty if `got` (float32, from the backend) matches `want` (float64 reference) to a relative L2
// error of `tol`; otherwise what is wrong. A NaN or infinity where the reference is finite always
// fails: the NaN may be the poison of an element the kernel never wrote.
QString mismatch(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  double err = 0, norm = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    if (!std::isfinite(want[j])) return QString("the reference is not finite at element %1: the case leaves the primitive's domain").arg(j);
    if (!std::isfinite(got[j]))
      return QString("element %1 of %2 is %3 (reference %4): never written, or overflowed").arg(j).arg(want.size()).arg(got[j]).arg(want[j]);
    err += (double(got[j]) - want[j]) * (double(got[j]) - want[j]);
    norm += want[j] * want[j];
  }
  err = std::sqrt(err);
  norm = std::sqrt(norm);
  if (err <= tol * (norm > 0 ? norm : 1.0)) return {};
  return QString("relative L2 error %1 > %2 (|reference| %3)").arg(norm > 0 ? err / norm : err, 0, 'g', 3).arg(tol).arg(norm, 0, 'g', 4);
}

// NaN into every value a run must produce. Called before the fed values are written: where the plan
// lets a temporary reuse an input's buffer once the input is dead, the input's data then wins, so
// poisoning never corrupts what the run reads (such elements are simply left unpoisoned).
void poison(backends::Executable& exe, const ir::Program& p, const std::vector<int>& fed) {
  for (size_t v = 0; v < p.values.size(); ++v) {
    if (std::find(fed.begin(), fed.end(), int(v)) != fed.end() || exe.memory_plan().arena_offset[v] < 0) continue;
    const std::vector<float> nan(size_t(numel(p.shape(int(v)))), std::numeric_limits<float>::quiet_NaN());
    exe.write(0, int(v), nan.data());
  }
}

using Inputs = std::vector<std::vector<float>>;  // per fed value

// Each fed value's elements, rounded to its dtype (so the reference sees what the run stores).
Inputs draw_inputs(const Built& b, const Instance& inst, uint64_t key) {
  const int64_t classes = inst.operands.empty() || inst.operands[0].shape.empty() ? 1 : inst.operands[0].shape.back();
  Inputs in;
  for (size_t k = 0; k < b.fed.size(); ++k) {
    std::vector<float> v(size_t(numel(b.program.shape(b.fed[k]))));
    for (size_t j = 0; j < v.size(); ++j) v[j] = draw(b.fed_gen[k], key + 131 * k, j, classes);
    const DType d = b.program.dtype(b.fed[k]);
    if (is_16bit(d)) {
      std::vector<uint16_t> narrow(v.size());
      from_float(v.data(), narrow.data(), d, v.size());
      to_float(narrow.data(), d, v.data(), v.size());
    }
    in.push_back(std::move(v));
  }
  return in;
}

// Runs one draw of a case on `backend` and on the double reference; empty if every result matches.
// Runs in dtype `dt`; the reference runs the case's float32 program (Convert's own, whose point is
// its rounding) on the same inputs.
QString run_case(backends::Backend& backend, const Case& c, int draw_index, Buffers buffers, DType dt = DType::F32) {
  Rng rng(util::hash_name(c.label) ^ util::mix64(uint64_t(draw_index)));
  const Instance inst = c.draw(rng);
  const QString what = describe(c, draw_index, inst, buffers, dt);
  try {
    const Built b = build(c, inst, buffers, dt);
    const ir::Program& p = b.program;
    const Inputs in = draw_inputs(b, inst, rng());

    auto exe = backend.load(p, plan::plan_memory(p, buffers == Buffers::Shared ? b.results : every_value(p)), sharding::Mesh(),
                            backends::LoadOptions{});
    poison(*exe, p, b.fed);
    for (size_t k = 0; k < b.fed.size(); ++k) exe->write(0, b.fed[k], in[k].data());
    backends::RunContext ctx;
    ctx.step = c.step;
    ctx.learning_rate = c.learning_rate;
    ctx.loss_scale = c.loss_scale;
    exe->run(ctx);

    const Built rb = c.op == Op::Convert ? b : build(c, inst, Buffers::Separate, DType::F32);
    const ir::Program& rp = rb.program;
    if (rb.fed.size() != b.fed.size() || rb.results.size() != b.results.size()) return what + ": the reference program differs in shape";
    backends::cpu::Executor<double> ref(rp, plan::plan_memory(rp, every_value(rp)), /*fuse=*/false);
    for (size_t k = 0; k < rb.fed.size(); ++k) {
      const std::vector<double> wide(in[k].begin(), in[k].end());
      ref.write(rb.fed[k], wide.data());
    }
    backends::StepContext rc{c.step, c.learning_rate};
    rc.loss_scale = c.loss_scale;
    ref.run(rc);

    QStringList failures;
    for (size_t r = 0; r < b.results.size(); ++r) {
      const int v = b.results[r];
      std::vector<float> got(size_t(numel(p.shape(v))));
      exe->read(0, v, got.data());
      std::vector<double> want(got.size());
      ref.read(rb.results[r], want.data());
      const QString m = mismatch(got, want, tolerance_of(dt));
      if (!m.isEmpty())
        failures << QString("%1: %2 %3: %4").arg(what, QString::fromStdString(b.result_names[r]), QString::fromStdString(shape_str(p.shape(v))), m);
    }
    return failures.join("\n");
  } catch (const std::exception& e) {
    return QString("%1: threw: %2").arg(what, QString(e.what()));
  }
}


}  // namespace

class TestBackendConformance : public QObject {
  Q_OBJECT
 private slots:
  void everyPrimitiveHasACase();
  void poisonedResultsReadNaNBeforeARun();
  void sharedBuffersPutResultsOverTheirOperands();
  void primitiveMatchesDoubleReference_data();
  void primitiveMatchesDoubleReference();
  void fusedEpiloguesMatchUnfusedBitForBit_data();
  void fusedEpiloguesMatchUnfusedBitForBit();
  void whatABackendCannotRunIsADesignError();

 private:
  // The backend, or null after skipping the test with the reason it cannot be made (a CUDA build
  // on a machine without a GPU).
  backends::Backend* backend(const std::string& kind) {
    auto& b = backends_[kind];
    if (!b && !unavailable_.count(kind)) {
      try {
        b = backends::make_backend(kind);
      } catch (const Error& e) {
        if (kind == "cpu") throw;
        unavailable_[kind] = e.what();
        qInfo("skipping backend %s: %s", kind.c_str(), e.what());
      }
    }
    return b.get();
  }
  QString why_unavailable(const QString& kind) {
    return QString("backend %1: %2").arg(kind, QString::fromStdString(unavailable_[kind.toStdString()]));
  }
  std::map<std::string, std::string> unavailable_;
  std::map<std::string, std::unique_ptr<backends::Backend>> backends_;
};

void TestBackendConformance::everyPrimitiveHasACase() {
  std::set<Op> covered;
  std::set<std::string> labels;
  for (const Case& c : cases()) {
    covered.insert(c.op);
    QVERIFY2(labels.insert(c.label).second, qPrintable(QString("two cases are labelled '%1'").arg(c.label.c_str())));
  }
  for (int i = 0; i < int(Op::kCount); ++i) {
    const Op op = Op(i);
    const char* name = ir::op_name(op);
    if (kExempt.count(op)) {
      QVERIFY2(!covered.count(op), qPrintable(QString("%1 has a case: drop it from the exempt list").arg(name)));
      continue;
    }
    QVERIFY2(covered.count(op), qPrintable(QString("primitive %1 has no conformance case: add one to the table").arg(name)));
  }
}

// The poison check must be able to fail: before a run, every element of a result reads back as NaN
// unless it shares an input's buffer (shared buffers only: the plan reuses a dead input's space),
// the fed values survive the poisoning, and a NaN never passes the comparison. (An update's results
// are its fed parameter and state: an element it skips keeps its old value, which the reference
// comparison catches instead.)
void TestBackendConformance::poisonedResultsReadNaNBeforeARun() {
  for (const std::string& kind : backends::built_backends()) {
    for (const Case& c : cases()) {
      if (c.label != "layer_norm" && c.label != "relu" && c.label != "matmul trans_a") continue;
      for (Buffers buffers : {Buffers::Separate, Buffers::Shared}) {
        const QString what = QString("%1 on %2 (%3)").arg(QString(c.label.c_str()), QString(kind.c_str()), QString(buffers_name(buffers)));
        Rng rng(1);
        const Instance inst = c.draw(rng);
        const Built b = build(c, inst, buffers);
        const ir::Program& p = b.program;
        const Inputs in = draw_inputs(b, inst, 2);
        backends::Backend* be = backend(kind);
        if (!be) continue;
        auto exe = be->load(p, plan::plan_memory(p, buffers == Buffers::Shared ? b.results : every_value(p)), sharding::Mesh());
        poison(*exe, p, b.fed);
        for (size_t k = 0; k < b.fed.size(); ++k) exe->write(0, b.fed[k], in[k].data());

        for (size_t k = 0; k < b.fed.size(); ++k) {
          std::vector<float> back(in[k].size());
          exe->read(0, b.fed[k], back.data());
          QVERIFY2(back == in[k], qPrintable(QString("%1: poisoning overwrote fed value %2").arg(what).arg(k)));
        }
        const plan::MemoryPlan& plan = exe->memory_plan();
        auto under_fed = [&](int64_t at) {  // an arena byte inside a fed value's buffer
          for (int f : b.fed) {
            const int64_t lo = plan.arena_offset[size_t(f)];
            if (lo >= 0 && at >= lo && at < lo + p.bytes(f)) return true;
          }
          return false;
        };
        int64_t poisoned = 0, total = 0;
        for (int v : b.results) {
          if (std::find(b.fed.begin(), b.fed.end(), v) != b.fed.end()) continue;
          std::vector<float> got(size_t(numel(p.shape(v))));
          exe->read(0, v, got.data());
          const int64_t off = plan.arena_offset[size_t(v)];
          int64_t here = 0;
          for (size_t j = 0; j < got.size(); ++j) {
            if (off >= 0 && under_fed(off + int64_t(j) * int64_t(dtype_size(p.dtype(v))))) continue;
            QVERIFY2(std::isnan(got[j]), qPrintable(QString("%1: element %2 of result %3 is not poisoned").arg(what).arg(j).arg(v)));
            ++here;
          }
          if (here > 0) QVERIFY2(!mismatch(got, std::vector<double>(got.size(), 1.0), 1e30).isEmpty(), qPrintable(what));
          poisoned += here;
          total += int64_t(got.size());
        }
        // With a buffer of its own, every element of every result starts as NaN.
        if (buffers == Buffers::Separate) QCOMPARE(poisoned, total);
        QVERIFY2(total > 0, qPrintable(what));
      }
    }
  }
}

// The shared-buffers runs are only worth their time if the plan really aliases: an elementwise
// result takes its operand's buffer, as in a training step.
void TestBackendConformance::sharedBuffersPutResultsOverTheirOperands() {
  int aliased = 0;
  for (const Case& c : cases()) {
    Rng rng(1);
    const Built b = build(c, c.draw(rng), Buffers::Shared);
    const plan::MemoryPlan plan = plan::plan_memory(b.program, b.results);
    for (const ir::Instr& ins : b.program.instrs)
      for (int out : ins.out)
        for (int in : ins.in)
          aliased += plan.arena_offset[size_t(out)] >= 0 && plan.arena_offset[size_t(out)] == plan.arena_offset[size_t(in)];
  }
  QVERIFY2(aliased >= 10, qPrintable(QString("only %1 results share their operand's buffer").arg(aliased)));
}

void TestBackendConformance::primitiveMatchesDoubleReference_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<int>("index");
  QTest::addColumn<int>("dtype");
  const auto all = cases();
  for (const std::string& kind : backends::built_backends())
    for (DType dt : kDtypes)
      for (size_t i = 0; i < all.size(); ++i)
        QTest::newRow(qPrintable(QString("%1 %2: %3").arg(QString(kind.c_str()), QString(dtype_short(dt)), QString(all[i].label.c_str()))))
            << QString::fromStdString(kind) << int(i) << int(dt);
}

void TestBackendConformance::primitiveMatchesDoubleReference() {
  QFETCH(QString, kind);
  QFETCH(int, index);
  QFETCH(int, dtype);
  const Case c = cases()[size_t(index)];
  const DType dt = DType(dtype);
  if (dt != DType::F32 && kFloat32Only.count(c.op)) QSKIP(kFloat32Only.at(c.op));
  backends::Backend* be = backend(kind.toStdString());
  if (!be) QSKIP(qPrintable(why_unavailable(kind)));
  backends::Backend& b = *be;
  {
    // A backend that does not run one of the case's instructions or dtypes yet says so.
    Rng rng(1);
    const Built probe = build(c, c.draw(rng), Buffers::Separate, dt);
    if (const auto why = b.refusal(probe.program)) QSKIP(qPrintable(QString::fromStdString(*why + " (yet)")));
  }
  QStringList failures;
  for (int d = 0; d < kDraws; ++d)
    for (Buffers buffers : {Buffers::Separate, Buffers::Shared}) {
      const QString f = run_case(b, c, d, buffers, dt);
      if (!f.isEmpty()) failures << f;
    }
  QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
}

void TestBackendConformance::fusedEpiloguesMatchUnfusedBitForBit_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<int>("batch");
  QTest::addColumn<QString>("model");
  for (const std::string& kind : backends::built_backends())
    for (int batch : {29, 200})
      for (const char* model : {"odd", "aligned", "repeat"})
        QTest::newRow(qPrintable(QString("%1, batch %2, %3 mlp").arg(kind.c_str()).arg(batch).arg(model)))
            << QString::fromStdString(kind) << batch << QString(model);
}

// Folding bias, relu and relu's gradient into the GEMM (on CUDA: the bias's gradient into relu's
// gradient, and a Repeat's unstacked parameters read in place) changes nothing but speed, on every backend: loss, output and updated parameters agree
// bit for bit with the unfused program, and the forward pass agrees with the double reference.
void TestBackendConformance::fusedEpiloguesMatchUnfusedBitForBit() {
  QFETCH(QString, kind);
  QFETCH(int, batch);
  QFETCH(QString, model);
  const runtime::StepProgram s = model == "repeat"  ? testing::repeat_mlp_step(batch)
                                 : model == "aligned" ? testing::aligned_mlp_step(batch)
                                                      : testing::odd_mlp_step(batch);
  backends::Backend* be = backend(kind.toStdString());
  if (!be) QSKIP(qPrintable(why_unavailable(kind)));
  backends::Backend& b = *be;
  backends::LoadOptions fuse, plain;
  plain.fuse = false;
  // The output is kept to the end, so that it can be read after the run (the step's own plan reuses
  // its buffer once the backward pass is done with it).
  const plan::MemoryPlan memory = plan::plan_memory(s.program, {s.loss, s.output});
  auto fused = b.load(s.program, memory, sharding::Mesh(), fuse);
  auto unfused = b.load(s.program, memory, sharding::Mesh(), plain);
  QVERIFY2(fused->fused_instructions() > 0, "the fused program folded nothing into a GEMM");
  QCOMPARE(unfused->fused_instructions(), size_t(0));

  backends::cpu::Executor<double> ref(s.program, memory, /*fuse=*/false);
  auto feed = [&](int v, const std::vector<float>& host) {
    fused->write(0, v, host.data());
    unfused->write(0, v, host.data());
    const std::vector<double> wide(host.begin(), host.end());
    ref.write(v, wide.data());
  };
  for (const runtime::ModelParam& mp : s.params) {
    std::vector<float> w(size_t(numel(s.program.shape(mp.value))));
    runtime::initialize_param(mp, 5, w.data());
    feed(mp.value, w);
    for (int st : mp.state) feed(st, std::vector<float>(size_t(numel(s.program.shape(st))), 0.f));
  }
  for (int v : {s.input, s.target}) {
    std::vector<float> host(size_t(numel(s.program.shape(v))));
    for (size_t j = 0; j < host.size(); ++j) host[j] = draw(Gen::Normal, uint64_t(v), j, 1);
    feed(v, host);
  }
  const double lr = 1e-3;
  backends::RunContext ctx;
  ctx.learning_rate = lr;
  fused->run(ctx);
  unfused->run(ctx);
  ref.run({0, lr});

  auto read = [&](backends::Executable& e, int v) {
    std::vector<float> host(size_t(numel(s.program.shape(v))));
    e.read(0, v, host.data());
    return host;
  };
  std::vector<std::pair<std::string, int>> compared = {{"loss", s.loss}, {"output", s.output}};
  for (const runtime::ModelParam& mp : s.params) compared.push_back({mp.path, mp.value});
  for (const auto& [name, v] : compared) {
    const std::vector<float> f = read(*fused, v), u = read(*unfused, v);
    QVERIFY2(std::memcmp(f.data(), u.data(), f.size() * sizeof(float)) == 0, qPrintable(QString("%1 differs").arg(name.c_str())));
  }
  // The forward pass only: an Adam step moves each parameter by about lr whatever the gradient's
  // size, so a gradient near zero may step either way in float and in double.
  for (int v : {s.loss, s.output}) {
    const std::vector<float> got = read(*fused, v);
    std::vector<double> want(got.size());
    ref.read(v, want.data());
    const QString m = mismatch(got, want, kTolerance);
    QVERIFY2(m.isEmpty(), qPrintable(QString("%1: %2").arg(QString(s.program.values[size_t(v)].name.c_str()), m)));
  }
}

namespace {
// The CPU backend as a backend without float16 would be: every answer the CPU's but supports().
class CpuWithoutHalf final : public backends::Backend {
 public:
  CpuWithoutHalf() : cpu_(backends::make_backend("cpu")) {}
  backends::DeviceKind kind() const override { return cpu_->kind(); }
  std::vector<backends::DeviceInfo> devices() const override { return cpu_->devices(); }
  uint64_t capacity_per_device(int n) const override { return cpu_->capacity_per_device(n); }
  std::optional<backends::OutOfMemory> check_fits(const ir::Program& p, const plan::MemoryPlan& m, const sharding::Mesh& mesh,
                                                  const backends::LoadOptions& o) const override {
    return cpu_->check_fits(p, m, mesh, o);
  }
  std::unique_ptr<backends::Executable> load(const ir::Program& p, const plan::MemoryPlan& m, const sharding::Mesh& mesh,
                                             const backends::LoadOptions& o) override {
    return cpu_->load(p, m, mesh, o);
  }
  bool supports(DType d) const override { return d != DType::F16; }
  using backends::Backend::supports;
  int threads() const override { return cpu_->threads(); }
  double gemm_peak_flops(MatmulPrecision p) override { return cpu_->gemm_peak_flops(p); }

 private:
  std::unique_ptr<backends::Backend> cpu_;
};
}  // namespace

// The design check (runtime::preflight, what `check`, the editor and Start ask) lists what the
// backend would refuse to load, naming the first value it cannot hold; the same project passes
// on a backend that holds it.
void TestBackendConformance::whatABackendCannotRunIsADesignError() {
  project::Project p = project::load_project(SHARDLAB_SOURCE_DIR "/projects/fashion-mlp.shardlab.json");
  p.precision.dtype = DType::F16;
  const CpuWithoutHalf half_less;
  const runtime::Preflight refused = runtime::preflight(p, half_less);
  QVERIFY(!refused.ok());
  const QString first = QString::fromStdString(refused.errors.front());
  QVERIFY2(first.startsWith("the CPU backend does not hold float16 values ('"), qPrintable(first));
  QCOMPARE(QString::fromStdString(refused.problems.front().code), QString("backend"));
  QVERIFY(half_less.supports(DType::BF16) && !half_less.supports(DType::F16));
  const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
  const runtime::Preflight passed = runtime::preflight(p, *cpu);
  QVERIFY2(passed.ok(), passed.errors.empty() ? "" : passed.errors.front().c_str());
  p.precision.dtype = DType::BF16;
  QVERIFY(runtime::preflight(p, half_less).ok());
}

QTEST_APPLESS_MAIN(TestBackendConformance)
#include "test_backend_conformance.moc"
