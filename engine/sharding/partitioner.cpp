#include "engine/sharding/partitioner.h"

#include <algorithm>
#include <map>

#include "engine/ir/primitive.h"
#include "engine/util/error.h"

namespace shardlab::sharding {

using ir::Op;
using ir::ValueKind;

std::string Sharding::str() const {
  std::string s = PartitionSpec(dims).str();
  if (!partial.empty()) {
    s += " partial over";
    for (const std::string& a : partial) s += " " + a;
  }
  return s;
}

namespace {

class Partitioner {
 public:
  Partitioner(const runtime::StepProgram& g, const Mesh& mesh, const LogicalRules& rules, Fallback fallback)
      : g_(g), mesh_(mesh), rules_(rules), fallback_(fallback) {
    out_.local.assign(g.program.values.size(), -1);
    out_.sharding.assign(g.program.values.size(), {});
  }

  PartitionedStep run() {
    define_leaves();
    for (const ir::Instr& ins : g_.program.instrs) {
      lower(ins);
      for (int v : ins.out) constrain(v, ins.node);
    }
    out_.input = out_.local[size_t(g_.input)];
    out_.target = out_.local[size_t(g_.target)];
    out_.loss = out_.local[size_t(g_.loss)];
    if (g_.accuracy >= 0) out_.accuracy = out_.local[size_t(g_.accuracy)];
    std::vector<int> keep{out_.loss};
    if (out_.accuracy >= 0) keep.push_back(out_.accuracy);
    out_.memory = plan::plan_memory(out_.program, keep);
    return std::move(out_);
  }

 private:
  const runtime::StepProgram& g_;
  const Mesh& mesh_;
  const LogicalRules& rules_;
  const Fallback fallback_;
  PartitionedStep out_;

  ir::Program& p() { return out_.program; }
  const Shape& gshape(int v) const { return g_.program.shape(v); }
  const Sharding& S(int v) const { return out_.sharding[size_t(v)]; }
  int L(int v) const { return out_.local[size_t(v)]; }

  int64_t group(const std::vector<std::string>& axes) const {
    int64_t n = 1;
    for (const std::string& a : axes) n *= mesh_.axis_size(a);
    return n;
  }

  Shape local_shape(const Shape& global, const Sharding& s) const {
    Shape out = global;
    for (size_t i = 0; i < out.size() && i < s.dims.size(); ++i) out[i] /= group(s.dims[i]);
    return out;
  }

  Sharding replicated(size_t rank) const { return Sharding{std::vector<std::vector<std::string>>(rank), {}}; }

  // A sharding for `shape` from logical names, dropping axes that do not divide (they stay replicated).
  Sharding from_rules(const std::vector<std::string>& axes, const Shape& shape, const std::string& name) {
    std::vector<std::string> names = axes;
    names.resize(shape.size());
    Sharding s = replicated(shape.size());
    PartitionSpec spec = logical_to_mesh(names, rules_, name).spec;
    validate(spec, shape, mesh_, name);
    for (size_t i = 0; i < shape.size(); ++i) s.dims[i] = spec.axes_of(i);
    return s;
  }

  void define_leaves() {
    const ir::Program& gp = g_.program;
    Sharding input_s;
    for (size_t v = 0; v < gp.values.size(); ++v) {
      const ir::Value& val = gp.values[v];
      if (val.kind == ValueKind::Temp || val.kind == ValueKind::Target) continue;
      Sharding s = from_rules(val.axes, val.shape, val.name);
      if (val.kind == ValueKind::Input) input_s = s;
      set(int(v), p().add_value(val.name, local_shape(val.shape, s), val.kind, val.axes), s);
    }
    // Targets follow the input's batch sharding.
    const Shape& ts = gshape(g_.target);
    Sharding t = replicated(ts.size());
    if (!ts.empty() && !input_s.dims.empty()) t.dims[0] = input_s.dims[0];
    set(g_.target, p().add_value(gp.values[size_t(g_.target)].name, local_shape(ts, t), ValueKind::Target), t);
  }

  // with_logical_constraint: a value whose layout the user pinned moves there after it is made.
  void constrain(int v, const std::string& node) {
    const ir::Value& val = g_.program.values[size_t(v)];
    if (!val.constrained || out_.local[size_t(v)] < 0) return;
    std::vector<std::string> names = val.axes;
    names.resize(val.shape.size());
    LogicalMapping m = logical_to_mesh(names, rules_, val.name, fallback_);
    validate(m.spec, val.shape, mesh_, val.name);
    Sharding to = replicated(val.shape.size());
    for (size_t d = 0; d < to.dims.size(); ++d) to.dims[d] = m.unconstrained[d] ? S(v).dims[d] : m.spec.axes_of(d);
    // Axes kept from propagation may clash with the constraint's; the constraint wins.
    std::set<std::string> used;
    for (size_t d = 0; d < to.dims.size(); ++d)
      if (!m.unconstrained[d]) used.insert(to.dims[d].begin(), to.dims[d].end());
    for (size_t d = 0; d < to.dims.size(); ++d)
      if (m.unconstrained[d] && std::any_of(to.dims[d].begin(), to.dims[d].end(), [&](const std::string& a) { return used.count(a); }))
        to.dims[d].clear();
    if (S(v) == to) return;
    const int moved = reshard(v, to, node);
    set(v, moved, to);
  }

  void set(int global, int local, Sharding s) {
    out_.local[size_t(global)] = local;
    out_.sharding[size_t(global)] = std::move(s);
  }

  int comm(Op op, int local, const std::vector<std::string>& axes, int64_t dim, const std::string& node, const std::string& what) {
    ir::Attrs a;
    a.mesh_axes = axes;
    a.group_size = group(axes);
    a.dim = dim;
    int out = p().apply1(op, {local}, a, node);
    if (op != Op::ShardSlice)
      out_.collectives.push_back({op, axes, double(numel(p().shape(op == Op::AllGather ? out : local))) * sizeof(float), what, node});
    return out;
  }

  int all_to_all(int local, const std::vector<std::string>& axes, int64_t from_dim, int64_t to_dim, const std::string& node,
                 const std::string& what) {
    ir::Attrs a;
    a.mesh_axes = axes;
    a.group_size = group(axes);
    a.dim = from_dim;  // gathered
    a.split_dim = to_dim;
    int out = p().apply1(Op::AllToAll, {local}, a, node);
    out_.collectives.push_back({Op::AllToAll, axes, double(numel(p().shape(local))) * sizeof(float), what, node});
    return out;
  }

  // Moves `v` to layout `to`, returning the local value that has it (the original if it already
  // does). A layout made once is reused by every later reader (a forward activation that the
  // backward pass reads again is not reduced twice).
  std::map<std::pair<int, std::string>, int> resharded_;
  int reshard(int v, const Sharding& to, const std::string& node) {
    if (S(v) == to) return L(v);
    auto [it, fresh] = resharded_.try_emplace({v, to.str()}, -1);
    if (fresh) it->second = reshard_now(v, to, node);
    return it->second;
  }

  int reshard_now(int v, const Sharding& to, const std::string& node) {
    Sharding cur = S(v);
    int local = L(v);
    const std::string what = g_.program.values[size_t(v)].name;
    // Pending sums: scatter into a dimension the target splits over exactly those axes, else reduce.
    if (!cur.partial.empty()) {
      for (size_t d = 0; d < to.dims.size() && !cur.partial.empty(); ++d) {
        const auto& want = to.dims[d];
        const bool fits = !want.empty() && cur.dims[d].empty() &&
                          std::all_of(want.begin(), want.end(), [&](const std::string& a) { return cur.partial.count(a); });
        if (!fits) continue;
        local = comm(Op::ReduceScatter, local, want, int64_t(d), node, what);
        cur.dims[d] = want;
        for (const std::string& a : want) cur.partial.erase(a);
      }
      if (!cur.partial.empty()) {
        local = comm(Op::AllReduce, local, std::vector<std::string>(cur.partial.begin(), cur.partial.end()), 0, node, what);
        cur.partial.clear();
      }
    }
    // Axes that only move from one dimension to another: one all-to-all instead of gather + slice.
    for (size_t d = 0; d < cur.dims.size(); ++d) {
      if (cur.dims[d].empty() || cur.dims[d] == to.dims[d]) continue;
      for (size_t e = 0; e < cur.dims.size(); ++e)
        if (e != d && cur.dims[e].empty() && to.dims[e] == cur.dims[d]) {
          local = all_to_all(local, cur.dims[d], int64_t(d), int64_t(e), node, what);
          cur.dims[e] = cur.dims[d];
          cur.dims[d].clear();
          break;
        }
    }
    for (size_t d = 0; d < cur.dims.size(); ++d)
      if (!cur.dims[d].empty() && cur.dims[d] != to.dims[d]) {
        local = comm(Op::AllGather, local, cur.dims[d], int64_t(d), node, what);
        cur.dims[d].clear();
      }
    for (size_t d = 0; d < cur.dims.size(); ++d)
      if (cur.dims[d] != to.dims[d]) {
        local = comm(Op::ShardSlice, local, to.dims[d], int64_t(d), node, what);
        cur.dims[d] = to.dims[d];
      }
    return local;
  }

  Sharding without_partial(const Sharding& s) const { return Sharding{s.dims, {}}; }

  std::vector<std::string> axes_on(const Sharding& s, const std::vector<size_t>& dims) const {
    std::vector<std::string> out;
    for (size_t d : dims) out.insert(out.end(), s.dims[d].begin(), s.dims[d].end());
    return out;
  }

  // Emits `ins` on local operands; output shardings given.
  void emit(const ir::Instr& ins, std::vector<int> in, const std::vector<Sharding>& out_s, ir::Attrs attrs) {
    std::vector<int> outs = p().apply(ins.op, std::move(in), std::move(attrs), ins.node);
    for (size_t k = 0; k < outs.size(); ++k) set(ins.out[k], outs[k], out_s[k]);
  }

  // Scale a local value (losses averaged over shards).
  int scale(int local, double f, const std::string& node) {
    ir::Attrs a;
    a.alpha = f;
    return p().apply1(Op::Scale, {local}, a, node);
  }

  void lower(const ir::Instr& ins) {
    const auto& in = ins.in;
    switch (ins.op) {
      case Op::Scale:
        return emit(ins, {L(in[0])}, {S(in[0])}, ins.attrs);
      case Op::Relu: case Op::Gelu: case Op::Tanh: {
        Sharding s = without_partial(S(in[0]));
        return emit(ins, {reshard(in[0], s, ins.node)}, {s}, ins.attrs);
      }
      case Op::Dropout: {  // its mask is indexed by global element: run it on the whole array
        Sharding r = replicated(gshape(in[0]).size());
        return emit(ins, {reshard(in[0], r, ins.node)}, {r}, ins.attrs);
      }
      case Op::Add: case Op::Sub: {
        if (!S(in[0]).partial.empty() && S(in[0]) == S(in[1])) return emit(ins, {L(in[0]), L(in[1])}, {S(in[0])}, ins.attrs);
        Sharding s = without_partial(S(in[0]));
        return emit(ins, {reshard(in[0], s, ins.node), reshard(in[1], s, ins.node)}, {s}, ins.attrs);
      }
      case Op::Mul: case Op::ReluGrad: case Op::TanhGrad: case Op::GeluGrad: {
        Sharding s = without_partial(S(in[1]));
        return emit(ins, {reshard(in[0], s, ins.node), reshard(in[1], s, ins.node)}, {s}, ins.attrs);
      }
      case Op::BiasAdd: case Op::MulRow: {
        Sharding s = without_partial(S(in[0]));
        Sharding row{{s.dims.back()}, {}};
        return emit(ins, {reshard(in[0], s, ins.node), reshard(in[1], row, ins.node)}, {s}, ins.attrs);
      }
      case Op::ReduceRows: {
        Sharding s = without_partial(S(in[0]));
        Sharding o{{s.dims.back()}, {}};
        for (size_t d = 0; d + 1 < s.dims.size(); ++d) o.partial.insert(s.dims[d].begin(), s.dims[d].end());
        return emit(ins, {reshard(in[0], s, ins.node)}, {o}, ins.attrs);
      }
      case Op::LayerNorm: case Op::LayerNormGrad: {
        Sharding s = without_partial(S(in[0]));
        s.dims.back().clear();  // statistics over the whole feature dimension
        std::vector<int> ops;
        for (int v : in) ops.push_back(reshard(v, s, ins.node));
        return emit(ins, ops, {s}, ins.attrs);
      }
      case Op::Reshape: return lower_reshape(ins);
      case Op::Stack: {
        // Stacking is linear: equal pending sums stay pending and are reduced once, stacked.
        const bool same = std::all_of(in.begin(), in.end(), [&](int v) { return S(v) == S(in[0]); });
        Sharding s = same ? S(in[0]) : without_partial(S(in[0]));
        std::vector<int> ops;
        for (int v : in) ops.push_back(reshard(v, s, ins.node));
        Sharding o = s;
        o.dims.insert(o.dims.begin(), std::vector<std::string>{});
        return emit(ins, ops, {o}, ins.attrs);
      }
      case Op::Unstack: {
        Sharding s = S(in[0]);
        s.dims[0].clear();  // the 'layer' axis stays whole
        const int x = reshard(in[0], s, ins.node);
        Sharding part{std::vector<std::vector<std::string>>(s.dims.begin() + 1, s.dims.end()), s.partial};
        return emit(ins, {x}, std::vector<Sharding>(ins.out.size(), part), ins.attrs);
      }
      case Op::Fill: {
        ir::Attrs a = ins.attrs;
        return emit(ins, {}, {replicated(a.shape.size())}, a);
      }
      case Op::MatMul: return lower_matmul(ins);
      case Op::SoftmaxXent: case Op::Accuracy: case Op::Mse: return lower_loss(ins);
      case Op::SoftmaxXentGrad: case Op::MseGrad: return lower_loss_grad(ins);
      case Op::SgdUpdate: case Op::AdamUpdate: {
        const Sharding& ps = S(in[0]);
        std::vector<int> ops{L(in[0]), reshard(in[1], ps, ins.node)};
        for (size_t k = 2; k < in.size(); ++k) ops.push_back(L(in[k]));
        p().apply(ins.op, ops, ins.attrs, ins.node);
        return;
      }
      default:
        throw Error(std::string("the partitioner has no rule for ") + ir::op_name(ins.op));
    }
  }

  void lower_reshape(const ir::Instr& ins) {
    const int x = ins.in[0];
    const Shape& from = gshape(x);
    const Shape& to = ins.attrs.shape;
    Sharding s = without_partial(S(x));
    Sharding o = replicated(to.size());
    if (from == to) {
      o = s;
    } else if (!from.empty() && !to.empty() && from[0] == to[0]) {  // batch-preserving (Flatten and back)
      for (size_t d = 1; d < s.dims.size(); ++d) s.dims[d].clear();
      o.dims[0] = s.dims[0];
    } else {
      s = replicated(from.size());
    }
    ir::Attrs a = ins.attrs;
    a.shape = local_shape(to, o);
    emit(ins, {reshard(x, s, ins.node)}, {o}, a);
  }

  // op(A) @ op(B): A's rows and B's columns pass through; a contracting dimension sharded the
  // same way on both sides leaves a partial sum over its axes.
  void lower_matmul(const ir::Instr& ins) {
    const int a = ins.in[0], b = ins.in[1];
    const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
    const size_t ra = gshape(a).size(), rb = gshape(b).size();
    std::vector<size_t> a_rows, a_con, b_con, b_cols;
    for (size_t d = 0; d + 1 < ra; ++d) (ta ? a_con : a_rows).push_back(d);
    (ta ? a_rows : a_con).push_back(ra - 1);
    for (size_t d = 0; d + 1 < rb; ++d) (tb ? b_cols : b_con).push_back(d);
    (tb ? b_con : b_cols).push_back(rb - 1);

    Sharding sa = without_partial(S(a)), sb = without_partial(S(b));
    const bool a_larger = numel(gshape(a)) >= numel(gshape(b));
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
    // Output rows from several A dims fold into one only when A is not transposed (they stay dims).
    // No mesh axis may appear twice across the operands' roles.
    auto conflicts = [&](Sharding& mover, const std::vector<size_t>& mover_dims, const std::vector<std::string>& taken) {
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

    Sharding o;
    for (size_t d : a_rows) o.dims.push_back(sa.dims[d]);
    o.dims.push_back(b_cols.size() == 1 || tb ? sb.dims[b_cols[0]] : std::vector<std::string>{});
    if (ta) o.dims.resize(2);  // rows are A's last dim only
    for (size_t d : a_con) o.partial.insert(sa.dims[d].begin(), sa.dims[d].end());
    // Rows folded from several A dims: the output keeps A's leading layout.
    if (!ta && o.dims.size() != gshape(ins.out[0]).size()) o = replicated(gshape(ins.out[0]).size());
    emit(ins, {reshard(a, sa, ins.node), reshard(b, sb, ins.node)}, {o}, ins.attrs);
  }

  // Mean losses and metrics: each device averages its own block; the mean of equal blocks' means
  // is the global mean.
  void lower_loss(const ir::Instr& ins) {
    const int x = ins.in[0], t = ins.in[1];
    Sharding s = without_partial(S(x));
    if (ins.op != Op::Mse) s.dims.back().clear();  // softmax needs every class
    Sharding ts = ins.op == Op::Mse ? s : Sharding{std::vector<std::vector<std::string>>(s.dims.begin(), s.dims.end() - 1), {}};
    const int lx = reshard(x, s, ins.node), lt = reshard(t, ts, ins.node);
    int out = p().apply1(ins.op, {lx, lt}, ins.attrs, ins.node, g_.program.values[size_t(ins.out[0])].name);
    std::vector<std::string> axes;
    for (const auto& d : s.dims) axes.insert(axes.end(), d.begin(), d.end());
    if (!axes.empty()) {
      out = comm(Op::AllReduce, out, axes, 0, ins.node, g_.program.values[size_t(ins.out[0])].name);
      out = scale(out, 1.0 / double(group(axes)), ins.node);
    }
    set(ins.out[0], out, replicated(0));
  }

  void lower_loss_grad(const ir::Instr& ins) {
    const int x = ins.in[0], t = ins.in[1];
    Sharding s = without_partial(S(x));
    if (ins.op != Op::MseGrad) s.dims.back().clear();
    Sharding ts = ins.op == Op::MseGrad ? s : Sharding{std::vector<std::vector<std::string>>(s.dims.begin(), s.dims.end() - 1), {}};
    const int lx = reshard(x, s, ins.node), lt = reshard(t, ts, ins.node), lg = reshard(ins.in[2], replicated(0), ins.node);
    int out = p().apply1(ins.op, {lx, lt, lg}, ins.attrs, ins.node);
    std::vector<std::string> axes;
    for (const auto& d : s.dims) axes.insert(axes.end(), d.begin(), d.end());
    if (!axes.empty()) out = scale(out, 1.0 / double(group(axes)), ins.node);  // each block's mean is over fewer elements
    set(ins.out[0], out, s);
  }
};

// Per dimension: block index of the device and the block's extent.
void block_of(const Shape& global, const Sharding& s, const Mesh& mesh, int64_t device, Shape& start, Shape& size) {
  const std::vector<int64_t> c = mesh.coords(device);
  start.assign(global.size(), 0);
  size = global;
  for (size_t d = 0; d < global.size() && d < s.dims.size(); ++d) {
    int64_t idx = 0, n = 1;
    for (const std::string& a : s.dims[d]) {
      const int k = mesh.axis_index(a);
      idx = idx * mesh.axes()[size_t(k)].size + c[size_t(k)];
      n *= mesh.axes()[size_t(k)].size;
    }
    size[d] = global[d] / n;
    start[d] = idx * size[d];
  }
}

template <class F>
void for_each_block_row(const Shape& global, const Shape& start, const Shape& size, F f) {
  // Copies contiguous runs of the last dimension: f(global offset, local offset, count).
  const size_t r = global.size();
  if (r == 0) return f(0, 0, 1);
  std::vector<int64_t> idx(r, 0);
  const int64_t rows = numel(size) / size[r - 1];
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, goff = 0, loff = row * size[r - 1];
    for (size_t d = r - 1; d-- > 0;) {
      idx[d] = rem % size[d];
      rem /= size[d];
    }
    int64_t stride = 1;
    for (size_t d = r; d-- > 0;) {
      goff += (start[d] + (d == r - 1 ? 0 : idx[d])) * stride;
      stride *= global[d];
    }
    f(goff, loff, size[r - 1]);
  }
}

}  // namespace

PartitionedStep partition(const runtime::StepProgram& step, const Mesh& mesh, const LogicalRules& rules,
                          Fallback constraint_fallback) {
  return Partitioner(step, mesh, rules, constraint_fallback).run();
}

Tensor local_block(const Tensor& global, const Sharding& s, const Mesh& mesh, int64_t device) {
  Shape start, size;
  block_of(global.shape, s, mesh, device, start, size);
  Tensor out(size);
  for_each_block_row(global.shape, start, size, [&](int64_t g, int64_t l, int64_t n) {
    std::copy(global.data.begin() + g, global.data.begin() + g + n, out.data.begin() + l);
  });
  return out;
}

void place_block(Tensor& global, const Tensor& block, const Sharding& s, const Mesh& mesh, int64_t device) {
  Shape start, size;
  block_of(global.shape, s, mesh, device, start, size);
  for_each_block_row(global.shape, start, size, [&](int64_t g, int64_t l, int64_t n) {
    std::copy(block.data.begin() + l, block.data.begin() + l + n, global.data.begin() + g);
  });
}

}  // namespace shardlab::sharding
