// Primitives that move or create data without arithmetic: reshape, transpose, stacking the
// per-layer parameters of a Repeat block along its leading 'layer' axis, and constant fills.
#include <algorithm>

#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {
double no_flops(const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; }

// Reshape splits the dims into groups that merge or split into each other ((28, 28) -> 784,
// (seq, heads * kv) -> (seq, heads, kv)). In row-major order a group's outermost dim indexes
// contiguous blocks, so a split of it carries over to the other side's outermost dim of the group
// where that divides evenly; any other split in a group is gathered first. Linear, so a pending
// sum stays pending (a kernel's gradient is reshaped before its sum is reduced, once, stacked).
void reshape_rule(PartitionContext& c, const Instr& ins) {
  const int x = ins.in[0];
  const Shape& from = c.shape(x);
  const Shape& to = ins.attrs.shape;
  Layout s = c.layout(x);
  Layout o{std::vector<std::vector<std::string>>(to.size()), s.partial};
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    std::vector<size_t> fs, ts;
    int64_t pf = 1, pt = 1;
    if (i < from.size()) pf *= from[i], fs.push_back(i++);
    if (j < to.size()) pt *= to[j], ts.push_back(j++);
    while (pf != pt) {
      if (pf < pt && i < from.size()) pf *= from[i], fs.push_back(i++);
      else if (pf > pt && j < to.size()) pt *= to[j], ts.push_back(j++);
      else break;
    }
    bool inner_split = false;
    for (size_t k = 1; k < fs.size(); ++k) inner_split |= !s.dims[fs[k]].empty();
    const bool carries = !fs.empty() && !ts.empty() && !inner_split && !s.dims[fs[0]].empty() &&
                         to[ts[0]] % c.group_size(s.dims[fs[0]]) == 0;
    if (carries) {
      o.dims[ts[0]] = s.dims[fs[0]];
    } else {
      for (size_t f : fs) s.dims[f].clear();
    }
  }
  Attrs a = ins.attrs;
  a.shape = c.local_shape(to, o);
  c.produce(ins, {c.reshard(x, s, ins.node)}, {o}, a);
}
}  // namespace

void register_structural(std::vector<Primitive>& t) {
  Primitive reshape;
  reshape.op = Op::Reshape;
  reshape.name = "reshape";
  reshape.num_inputs = 1;
  reshape.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (numel(in[0]) != numel(a.shape))
      throw Error("cannot reshape " + shape_str(in[0]) + " to " + shape_str(a.shape));
    return std::vector<Shape>{a.shape};
  };
  reshape.flops = no_flops;
  reshape.partition = reshape_rule;
  reshape.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{reshape_to(p, *ct[0], p.shape(ins.in[0]), ins.node)};
  };
  t.push_back(reshape);

  Primitive transpose;
  transpose.op = Op::Transpose;
  transpose.name = "transpose";
  transpose.num_inputs = 1;
  transpose.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    std::vector<bool> seen(in[0].size(), false);
    if (a.perm.size() != in[0].size()) throw Error("permutation of " + std::to_string(a.perm.size()) + " dims for " + shape_str(in[0]));
    Shape out;
    for (int64_t d : a.perm) {
      if (d < 0 || d >= int64_t(seen.size()) || seen[size_t(d)]) throw Error("not a permutation of the dims of " + shape_str(in[0]));
      seen[size_t(d)] = true;
      out.push_back(in[0][size_t(d)]);
    }
    return std::vector<Shape>{out};
  };
  transpose.flops = no_flops;
  // Each dim keeps its split wherever it moves; linear, so a pending sum stays pending.
  transpose.partition = [](PartitionContext& c, const Instr& ins) {
    const Layout& s = c.layout(ins.in[0]);
    Layout o{{}, s.partial};
    for (int64_t d : ins.attrs.perm) o.dims.push_back(s.dims[size_t(d)]);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, ins.attrs);
  };
  transpose.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs inv;
    inv.perm.resize(ins.attrs.perm.size());
    for (size_t d = 0; d < inv.perm.size(); ++d) inv.perm[size_t(ins.attrs.perm[d])] = int64_t(d);
    return Cotangents{p.apply1(Op::Transpose, {*ct[0]}, inv, ins.node)};
  };
  t.push_back(transpose);

  Primitive stack;
  stack.op = Op::Stack;
  stack.name = "stack";
  stack.num_inputs = -1;
  stack.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.empty()) throw Error("needs at least one operand");
    for (const Shape& s : in)
      if (s != in[0]) throw Error("operands differ: " + shape_str(in[0]) + " vs " + shape_str(s));
    Shape out{int64_t(in.size())};
    out.insert(out.end(), in[0].begin(), in[0].end());
    return std::vector<Shape>{out};
  };
  stack.flops = no_flops;
  // Linear: equal pending sums stay pending and are reduced once, stacked. The new 'layer'
  // dimension is whole on every device.
  stack.partition = [](PartitionContext& c, const Instr& ins) {
    const bool same = std::all_of(ins.in.begin(), ins.in.end(), [&](int v) { return c.layout(v) == c.layout(ins.in[0]); });
    Layout s = same ? c.layout(ins.in[0]) : c.layout(ins.in[0]).without_partial();
    std::vector<int> ops;
    for (int v : ins.in) ops.push_back(c.reshard(v, s, ins.node));
    Layout o = s;
    o.dims.insert(o.dims.begin(), std::vector<std::string>{});
    c.produce(ins, ops, {o}, ins.attrs);
  };
  stack.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    std::vector<int> parts = p.apply(Op::Unstack, {*ct[0]}, {}, ins.node);
    Cotangents r(ins.in.size());
    for (size_t i = 0; i < r.size(); ++i)
      if (needs[i]) r[i] = parts[i];
    return r;
  };
  t.push_back(stack);

  Primitive unstack;
  unstack.op = Op::Unstack;
  unstack.name = "unstack";
  unstack.num_inputs = 1;
  unstack.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) throw Error("needs rank >= 1");
    Shape part(in[0].begin() + 1, in[0].end());
    return std::vector<Shape>(size_t(in[0][0]), part);
  };
  unstack.flops = no_flops;
  unstack.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]);
    s.dims[0].clear();  // the 'layer' axis stays whole
    const int x = c.reshard(ins.in[0], s, ins.node);
    Layout part{std::vector<std::vector<std::string>>(s.dims.begin() + 1, s.dims.end()), s.partial};
    c.produce(ins, {x}, std::vector<Layout>(ins.out.size(), part), ins.attrs);
  };
  unstack.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    std::vector<int> parts;
    for (size_t i = 0; i < ct.size(); ++i) {
      if (ct[i]) {
        parts.push_back(*ct[i]);
      } else {  // a layer whose slice did not reach the loss contributes zeros
        parts.push_back(zeros(p, p.shape(ins.out[i]), p.dtype(ins.out[i]), ins.node));
      }
    }
    return Cotangents{p.apply1(Op::Stack, parts, {}, ins.node)};
  };
  t.push_back(unstack);

  // Concat and Split along `dim`: each a copy of contiguous runs, inverse of each other. The dim
  // they join or cut stays whole on every device (operands split there are gathered first); every
  // other dim keeps its split, and equal pending sums stay pending (both are linear).
  auto joined_dim = [](const Shape& s, int64_t dim) {
    if (dim < 0 || dim >= int64_t(s.size())) throw Error("dim " + std::to_string(dim) + " is not a dim of " + shape_str(s));
    return size_t(dim);
  };
  Primitive concat;
  concat.op = Op::Concat;
  concat.name = "concat";
  concat.num_inputs = -1;
  concat.shapes = [joined_dim](const std::vector<Shape>& in, const Attrs& a) {
    if (in.empty()) throw Error("needs at least one operand");
    const size_t d = joined_dim(in[0], a.dim);
    Shape out = in[0];
    for (size_t k = 1; k < in.size(); ++k) {
      if (in[k].size() != in[0].size()) throw Error("operands of different rank: " + shape_str(in[0]) + " and " + shape_str(in[k]));
      for (size_t i = 0; i < in[0].size(); ++i)
        if (i != d && in[k][i] != in[0][i])
          throw Error("operands " + shape_str(in[0]) + " and " + shape_str(in[k]) + " differ in dim " + std::to_string(i) +
                      ", not only in the joined dim " + std::to_string(d));
      out[d] += in[k][d];
    }
    return std::vector<Shape>{out};
  };
  concat.flops = no_flops;
  concat.partition = [](PartitionContext& c, const Instr& ins) {
    const bool same = std::all_of(ins.in.begin(), ins.in.end(), [&](int v) { return c.layout(v) == c.layout(ins.in[0]); });
    Layout s = same ? c.layout(ins.in[0]) : c.layout(ins.in[0]).without_partial();
    s.dims[size_t(ins.attrs.dim)].clear();
    std::vector<int> ops;
    for (int v : ins.in) ops.push_back(c.reshard(v, s, ins.node));
    c.produce(ins, ops, {s}, ins.attrs);
  };
  concat.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Attrs a = ins.attrs;
    a.shape.clear();
    for (int v : ins.in) a.shape.push_back(p.shape(v)[size_t(ins.attrs.dim)]);
    const std::vector<int> parts = p.apply(Op::Split, {*ct[0]}, a, ins.node);
    Cotangents r(ins.in.size());
    for (size_t i = 0; i < r.size(); ++i)
      if (needs[i]) r[i] = parts[i];
    return r;
  };
  t.push_back(concat);

  Primitive split;
  split.op = Op::Split;
  split.name = "split";
  split.num_inputs = 1;
  split.shapes = [joined_dim](const std::vector<Shape>& in, const Attrs& a) {
    const size_t d = joined_dim(in[0], a.dim);
    int64_t total = 0;
    std::vector<Shape> out;
    for (int64_t size : a.shape) {
      if (size < 1) throw Error("part sizes must be positive, got " + shape_str(a.shape));
      Shape part = in[0];
      part[d] = size;
      out.push_back(part);
      total += size;
    }
    if (out.empty() || total != in[0][d])
      throw Error("parts " + shape_str(a.shape) + " do not add up to dim " + std::to_string(d) + " of " + shape_str(in[0]));
    return out;
  };
  split.flops = no_flops;
  split.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]);
    s.dims[size_t(ins.attrs.dim)].clear();
    const int x = c.reshard(ins.in[0], s, ins.node);
    c.produce(ins, {x}, std::vector<Layout>(ins.out.size(), s), ins.attrs);
  };
  split.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    std::vector<int> parts;
    for (size_t i = 0; i < ct.size(); ++i) {
      if (ct[i]) {
        parts.push_back(*ct[i]);
      } else {  // a part that did not reach the loss contributes zeros
        parts.push_back(zeros(p, p.shape(ins.out[i]), p.dtype(ins.out[i]), ins.node));
      }
    }
    Attrs a;
    a.dim = ins.attrs.dim;
    return Cotangents{p.apply1(Op::Concat, parts, a, ins.node)};
  };
  t.push_back(split);

  Primitive fill;
  fill.op = Op::Fill;
  fill.name = "fill";
  fill.num_inputs = 0;
  fill.shapes = [](const std::vector<Shape>&, const Attrs& a) { return std::vector<Shape>{a.shape}; };
  fill.dtypes = [](const std::vector<DType>&, const Attrs& a) { return std::vector<DType>{a.dtype}; };
  fill.flops = no_flops;
  // A constant is made whole on every device; readers slice it for free.
  fill.partition = [](PartitionContext& c, const Instr& ins) {
    c.produce(ins, {}, {Layout::replicated(ins.attrs.shape.size())}, ins.attrs);
  };
  fill.vjp = [](Program&, const Instr&, const Cotangents&, const std::vector<bool>&) { return Cotangents{}; };
  t.push_back(fill);
}

}  // namespace shardlab::ir
