// Embedding lookups. Gather(table, ids) takes row ids[i] of the table for every index i of ids
// (int32, or whole numbers in a float type); its gradient, ScatterAdd(ids, g),
// sums every g row back into the row of the table it came from.
#include <algorithm>

#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

Shape gathered(const Shape& table, const Shape& ids) {
  Shape out = ids;
  out.insert(out.end(), table.begin() + 1, table.end());
  return out;
}

// Drops from `dims` every split whose axes `taken` already holds.
void drop_taken(std::vector<std::vector<std::string>>& dims, size_t from, const std::vector<std::vector<std::string>>& taken) {
  for (size_t d = from; d < dims.size(); ++d)
    for (const auto& t : taken)
      for (const std::string& m : t)
        if (std::count(dims[d].begin(), dims[d].end(), m)) dims[d].clear();
}

}  // namespace

void register_indexing(std::vector<Primitive>& t) {
  Primitive gather;
  gather.op = Op::Gather;
  gather.name = "gather";
  gather.num_inputs = 2;
  gather.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) throw Error("the table needs rank >= 1");
    return std::vector<Shape>{gathered(in[0], in[1])};
  };
  gather.dtypes = [](const std::vector<DType>& in, const Attrs&) { return std::vector<DType>{in[0]}; };  // the table's
  gather.flops = [](const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; };
  // Each device looks up in the whole vocabulary; the ids keep their split and the table's
  // feature dims theirs, so a batch split and an embed split compose.
  gather.partition = [](PartitionContext& c, const Instr& ins) {
    Layout st = c.layout(ins.in[0]).without_partial(), si = c.layout(ins.in[1]).without_partial();
    st.dims[0].clear();
    drop_taken(st.dims, 1, si.dims);
    Layout o{si.dims, {}};
    o.dims.insert(o.dims.end(), st.dims.begin() + 1, st.dims.end());
    c.produce(ins, {c.reshard(ins.in[0], st, ins.node), c.reshard(ins.in[1], si, ins.node)}, {o}, ins.attrs);
  };
  gather.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[0]) {
      Attrs a;
      a.shape = p.shape(ins.in[0]);
      r[0] = p.apply1(Op::ScatterAdd, {ins.in[1], *ct[0]}, a, ins.node);
    }
    return r;  // ids are indices: no gradient
  };
  t.push_back(gather);

  Primitive scatter;
  scatter.op = Op::ScatterAdd;
  scatter.name = "scatter_add";
  scatter.num_inputs = 2;
  scatter.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (a.shape.empty() || gathered(a.shape, in[0]) != in[1])
      throw Error("rows " + shape_str(in[1]) + " do not match ids " + shape_str(in[0]) + " into a table " + shape_str(a.shape));
    return std::vector<Shape>{a.shape};
  };
  scatter.dtypes = [](const std::vector<DType>& in, const Attrs&) { return std::vector<DType>{in[1]}; };  // the rows'
  scatter.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[1])); };
  // Every device sums its own rows into a whole-vocabulary table: a sum pending over the ids' axes.
  scatter.partition = [](PartitionContext& c, const Instr& ins) {
    Layout si = c.layout(ins.in[0]).without_partial(), sg = c.layout(ins.in[1]).without_partial();
    const size_t ni = si.dims.size();
    for (size_t d = 0; d < ni; ++d) sg.dims[d] = si.dims[d];
    drop_taken(sg.dims, ni, si.dims);
    Layout o = Layout::replicated(ins.attrs.shape.size());
    for (size_t d = ni; d < sg.dims.size(); ++d) o.dims[d - ni + 1] = sg.dims[d];
    for (const auto& ax : si.dims) o.partial.insert(ax.begin(), ax.end());
    Attrs a = ins.attrs;
    a.shape = c.local_shape(ins.attrs.shape, o);
    c.produce(ins, {c.reshard(ins.in[0], si, ins.node), c.reshard(ins.in[1], sg, ins.node)}, {o}, a);
  };
  scatter.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[1]) r[1] = p.apply1(Op::Gather, {*ct[0], ins.in[0]}, {}, ins.node);
    return r;
  };
  t.push_back(scatter);
}

}  // namespace shardlab::ir
