// MatMul: C = op(A) @ op(B) with both operands viewed as 2-D matrices whose leading dims fold into
// rows, so a Dense layer on (batch, seq, embed) and its weight gradient are one GEMM each.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

struct Dims { Shape rows; int64_t inner_a, inner_b, cols; };

Dims dims(const Shape& a, const Shape& b, const Attrs& at) {
  if (a.empty() || b.empty()) throw Error("operands must have rank >= 1");
  Dims d;
  d.rows = at.trans_a ? Shape{a.back()} : leading(a);
  d.inner_a = at.trans_a ? numel(leading(a)) : a.back();
  d.inner_b = at.trans_b ? b.back() : numel(leading(b));
  d.cols = at.trans_b ? numel(leading(b)) : b.back();
  return d;
}

}  // namespace

void register_matmul(std::vector<Primitive>& t) {
  Primitive mm;
  mm.op = Op::MatMul;
  mm.name = "matmul";
  mm.num_inputs = 2;
  mm.shapes = [](const std::vector<Shape>& in, const Attrs& at) {
    Dims d = dims(in[0], in[1], at);
    if (d.inner_a != d.inner_b)
      throw Error("contracting sizes differ: " + shape_str(in[0]) + " @ " + shape_str(in[1]) + " (" +
                  std::to_string(d.inner_a) + " vs " + std::to_string(d.inner_b) + ")");
    Shape out = d.rows;
    out.push_back(d.cols);
    return std::vector<Shape>{out};
  };
  // C' = A' B' with A' = op(A), B' = op(B): dA' = G B'^T, dB' = A'^T G; transposes fold into flags.
  mm.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    const int a = ins.in[0], b = ins.in[1], g = *ct[0];
    const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
    Cotangents r(2);
    auto mm_ = [&](int x, int y, bool tx, bool ty) {
      Attrs at;
      at.trans_a = tx;
      at.trans_b = ty;
      return p.apply1(Op::MatMul, {x, y}, at, ins.node);
    };
    // The weight gradient first: the input gradient then sits right before the VJP that
    // consumes it (relu's), which the CPU backend folds into the GEMM.
    if (needs[1]) {
      int db = tb ? mm_(g, a, true, ta) : mm_(a, g, !ta, false);
      r[1] = reshape_to(p, db, p.shape(b), ins.node);
    }
    if (needs[0]) {
      int da = ta ? mm_(b, g, tb, true) : mm_(g, b, false, !tb);
      r[0] = reshape_to(p, da, p.shape(a), ins.node);
    }
    return r;
  };
  mm.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs& at) {
    Dims d = dims(in[0], in[1], at);
    return 2.0 * double(numel(d.rows)) * double(d.inner_a) * double(d.cols);
  };
  t.push_back(mm);
}

}  // namespace shardlab::ir
