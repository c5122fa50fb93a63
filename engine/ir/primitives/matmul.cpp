// MatMul: C = op(A) @ op(B) with both operands viewed as 2-D matrices whose leading dims fold into
// rows, so a Dense layer on (batch, seq, embed) and its weight gradient are one GEMM each.
// BatchMatMul: one such product per index of the leading (batch) dims, which both operands share:
// attention's scores (q @ k^T) and its weighted values, per example and head.
#include <algorithm>
#include <set>

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

std::vector<std::string> axes_on(const Layout& s, const std::vector<size_t>& dims) {
  std::vector<std::string> out;
  for (size_t d : dims) out.insert(out.end(), s.dims[d].begin(), s.dims[d].end());
  return out;
}

// op(A) @ op(B): A's rows and B's columns pass through; a contracting dimension sharded the
// same way on both sides leaves a partial sum over its axes.
void matmul_rule(PartitionContext& c, const Instr& ins) {
  const int a = ins.in[0], b = ins.in[1];
  const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
  const size_t ra = c.shape(a).size(), rb = c.shape(b).size();
  std::vector<size_t> a_rows, a_con, b_con, b_cols;
  for (size_t d = 0; d + 1 < ra; ++d) (ta ? a_con : a_rows).push_back(d);
  (ta ? a_rows : a_con).push_back(ra - 1);
  for (size_t d = 0; d + 1 < rb; ++d) (tb ? b_cols : b_con).push_back(d);
  (tb ? b_con : b_cols).push_back(rb - 1);

  Layout sa = c.layout(a).without_partial(), sb = c.layout(b).without_partial();
  const bool a_larger = numel(c.shape(a)) >= numel(c.shape(b));
  // Contracting dimensions must agree; the smaller operand takes the larger one's axes.
  if (a_con.size() == b_con.size()) {
    for (size_t k = 0; k < a_con.size(); ++k) {
      auto& x = sa.dims[a_con[k]];
      auto& y = sb.dims[b_con[k]];
      if (x != y) (a_larger ? y : x) = (a_larger ? x : y);
    }
  } else {
    for (size_t d : a_con) sa.dims[d].clear();
    for (size_t d : b_con) sb.dims[d].clear();
  }
  // Output columns come from one flattened dimension: only a single sharded column dim survives.
  for (size_t k = 1; k < b_cols.size(); ++k) sb.dims[b_cols[k]].clear();
  // No mesh axis may appear twice across the operands' roles.
  auto conflicts = [&](Layout& mover, const std::vector<size_t>& mover_dims, const std::vector<std::string>& taken) {
    for (size_t d : mover_dims) {
      auto& ax = mover.dims[d];
      if (std::any_of(ax.begin(), ax.end(), [&](const std::string& s) { return std::count(taken.begin(), taken.end(), s); }))
        ax.clear();
    }
  };
  {
    std::vector<std::string> keep = axes_on(a_larger ? sa : sb, a_larger ? a_rows : b_cols);
    std::vector<std::string> con = axes_on(sa, a_con);
    keep.insert(keep.end(), con.begin(), con.end());
    if (a_larger) conflicts(sb, b_cols, keep);
    else conflicts(sa, a_rows, keep);
    // Contracting axes also must not shard the other's free dims.
    conflicts(a_larger ? sb : sa, a_larger ? b_cols : a_rows, con);
  }
  // Make the contracting dims consistent again if a conflict cleared one side.
  for (size_t k = 0; k < a_con.size() && a_con.size() == b_con.size(); ++k)
    if (sa.dims[a_con[k]] != sb.dims[b_con[k]]) sa.dims[a_con[k]].clear(), sb.dims[b_con[k]].clear();

  Layout o;
  for (size_t d : a_rows) o.dims.push_back(sa.dims[d]);
  o.dims.push_back(b_cols.size() == 1 || tb ? sb.dims[b_cols[0]] : std::vector<std::string>{});
  if (ta) o.dims.resize(2);  // rows are A's last dim only
  for (size_t d : a_con) o.partial.insert(sa.dims[d].begin(), sa.dims[d].end());
  // Rows folded from several A dims: the output keeps A's leading layout.
  if (!ta && o.dims.size() != c.shape(ins.out[0]).size()) o = Layout::replicated(c.shape(ins.out[0]).size());
  c.produce(ins, {c.reshard(a, sa, ins.node), c.reshard(b, sb, ins.node)}, {o}, ins.attrs);
}

// Batched: the batch dims pass through and must agree (the larger operand's split wins), then as
// MatMul: rows from A, columns from B, a split contracting dim leaves a partial sum. A mesh axis
// may serve one role only; later roles give it up.
void batch_matmul_rule(PartitionContext& c, const Instr& ins) {
  const int a = ins.in[0], b = ins.in[1];
  const size_t r = c.shape(a).size();
  const size_t a_row = ins.attrs.trans_a ? r - 1 : r - 2, a_con = ins.attrs.trans_a ? r - 2 : r - 1;
  const size_t b_con = ins.attrs.trans_b ? r - 1 : r - 2, b_col = ins.attrs.trans_b ? r - 2 : r - 1;
  Layout sa = c.layout(a).without_partial(), sb = c.layout(b).without_partial();
  const bool a_larger = numel(c.shape(a)) >= numel(c.shape(b));
  auto unify = [&](size_t da, size_t db) {
    if (sa.dims[da] != sb.dims[db]) (a_larger ? sb.dims[db] : sa.dims[da]) = a_larger ? sa.dims[da] : sb.dims[db];
  };
  for (size_t d = 0; d + 2 < r; ++d) unify(d, d);
  unify(a_con, b_con);
  std::set<std::string> used;
  // Clears the dims whose axes an earlier role took; else claims them.
  auto claim = [&](std::vector<std::vector<std::string>*> dims) {
    bool clash = false;
    for (auto* ax : dims)
      for (const std::string& m : *ax) clash |= used.count(m) > 0;
    if (clash) {
      for (auto* ax : dims) ax->clear();
      return;
    }
    for (const std::string& m : *dims[0]) used.insert(m);
  };
  for (size_t d = 0; d + 2 < r; ++d) claim({&sa.dims[d], &sb.dims[d]});
  claim({&sa.dims[a_row]});
  claim({&sb.dims[b_col]});
  claim({&sa.dims[a_con], &sb.dims[b_con]});

  Layout o;
  for (size_t d = 0; d + 2 < r; ++d) o.dims.push_back(sa.dims[d]);
  o.dims.push_back(sa.dims[a_row]);
  o.dims.push_back(sb.dims[b_col]);
  o.partial.insert(sa.dims[a_con].begin(), sa.dims[a_con].end());
  c.produce(ins, {c.reshard(a, sa, ins.node), c.reshard(b, sb, ins.node)}, {o}, ins.attrs);
}

struct BatchDims { Shape batch; int64_t m, k, n; };

BatchDims batch_dims(const Shape& a, const Shape& b, const Attrs& at) {
  if (a.size() < 2 || b.size() != a.size())
    throw Error("operands must have the same rank >= 2: " + shape_str(a) + " @ " + shape_str(b));
  const size_t r = a.size();
  BatchDims d{Shape(a.begin(), a.end() - 2), 0, 0, 0};
  if (Shape(b.begin(), b.end() - 2) != d.batch)
    throw Error("batch dims differ: " + shape_str(a) + " @ " + shape_str(b));
  d.m = at.trans_a ? a[r - 1] : a[r - 2];
  d.k = at.trans_a ? a[r - 2] : a[r - 1];
  const int64_t kb = at.trans_b ? b[r - 1] : b[r - 2];
  d.n = at.trans_b ? b[r - 2] : b[r - 1];
  if (d.k != kb)
    throw Error("contracting sizes differ: " + shape_str(a) + " @ " + shape_str(b) + " (" + std::to_string(d.k) +
                " vs " + std::to_string(kb) + ")");
  return d;
}

// Both operands share one dtype (a float32 one read rounded to round_operands counts as that dtype),
// which the result keeps unless result_dtype says otherwise.
std::vector<DType> matmul_dtypes(const std::vector<DType>& in, const Attrs& at) {
  auto effective = [&](DType d) { return d == DType::F32 && at.round_operands ? *at.round_operands : d; };
  const DType a = effective(in[0]), b = effective(in[1]);
  if (a != b) throw Error(std::string("operands are ") + dtype_name(in[0]) + " and " + dtype_name(in[1]) + " (convert one of them first)");
  return {at.result_dtype.value_or(a)};
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
  mm.partition = matmul_rule;
  mm.dtypes = matmul_dtypes;
  mm.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs& at) {
    Dims d = dims(in[0], in[1], at);
    return 2.0 * double(numel(d.rows)) * double(d.inner_a) * double(d.cols);
  };
  t.push_back(mm);

  Primitive bmm;
  bmm.op = Op::BatchMatMul;
  bmm.name = "batch_matmul";
  bmm.num_inputs = 2;
  bmm.shapes = [](const std::vector<Shape>& in, const Attrs& at) {
    BatchDims d = batch_dims(in[0], in[1], at);
    Shape out = d.batch;
    out.push_back(d.m);
    out.push_back(d.n);
    return std::vector<Shape>{out};
  };
  // As MatMul's, per batch index; the shapes match exactly, so no reshape.
  bmm.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    const int a = ins.in[0], b = ins.in[1], g = *ct[0];
    const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
    auto mm_ = [&](int x, int y, bool tx, bool ty) {
      Attrs at;
      at.trans_a = tx;
      at.trans_b = ty;
      return p.apply1(Op::BatchMatMul, {x, y}, at, ins.node);
    };
    Cotangents r(2);
    if (needs[0]) r[0] = ta ? mm_(b, g, tb, true) : mm_(g, b, false, !tb);
    if (needs[1]) r[1] = tb ? mm_(g, a, true, ta) : mm_(a, g, !ta, false);
    return r;
  };
  bmm.partition = batch_matmul_rule;
  bmm.dtypes = matmul_dtypes;
  bmm.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs& at) {
    BatchDims d = batch_dims(in[0], in[1], at);
    return 2.0 * double(numel(d.batch)) * double(d.m) * double(d.k) * double(d.n);
  };
  t.push_back(bmm);
}

}  // namespace shardlab::ir
