// Collectives between the devices of a mesh, over the devices that differ only along
// `mesh_axes` (a group of `group_size`). The partitioner inserts them into per-device programs;
// they are never differentiated (the partitioner runs after autodiff).
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

double bytes_moved(const std::vector<Shape>&, const std::vector<Shape>& out, const Attrs&) {
  return out.empty() ? 0.0 : double(numel(out[0]));
}

Primitive comm(Op op, const char* name) {
  Primitive p;
  p.op = op;
  p.name = name;
  p.num_inputs = 1;
  p.flops = bytes_moved;
  return p;
}

Shape along(const Shape& s, const Attrs& a, bool grow) {
  if (a.dim < 0 || size_t(a.dim) >= s.size()) throw Error("dimension " + std::to_string(a.dim) + " is out of range for " + shape_str(s));
  Shape out = s;
  if (grow) {
    out[size_t(a.dim)] *= a.group_size;
  } else {
    if (s[size_t(a.dim)] % a.group_size != 0)
      throw Error("dimension " + std::to_string(a.dim) + " of " + shape_str(s) + " does not split into " + std::to_string(a.group_size));
    out[size_t(a.dim)] /= a.group_size;
  }
  return out;
}

}  // namespace

void register_communication(std::vector<Primitive>& t) {
  Primitive all_reduce = comm(Op::AllReduce, "all_reduce");  // sum over the group
  all_reduce.shapes = [](const std::vector<Shape>& in, const Attrs&) { return std::vector<Shape>{in[0]}; };
  t.push_back(all_reduce);

  Primitive all_gather = comm(Op::AllGather, "all_gather");  // concatenate the group's blocks along dim
  all_gather.shapes = [](const std::vector<Shape>& in, const Attrs& a) { return std::vector<Shape>{along(in[0], a, true)}; };
  t.push_back(all_gather);

  Primitive reduce_scatter = comm(Op::ReduceScatter, "reduce_scatter");  // sum, keep this device's block of dim
  reduce_scatter.shapes = [](const std::vector<Shape>& in, const Attrs& a) { return std::vector<Shape>{along(in[0], a, false)}; };
  t.push_back(reduce_scatter);

  // Moves the split from split_dim to dim: each device sends block r of split_dim to device r and
  // concatenates what it receives along dim.
  Primitive all_to_all = comm(Op::AllToAll, "all_to_all");
  all_to_all.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (a.dim == a.split_dim) throw Error("all_to_all needs two different dimensions");
    Attrs split = a;
    split.dim = a.split_dim;
    return std::vector<Shape>{along(along(in[0], split, false), a, true)};
  };
  t.push_back(all_to_all);

  Primitive slice = comm(Op::ShardSlice, "shard_slice");  // this device's block of dim; no communication
  slice.shapes = reduce_scatter.shapes;
  slice.flops = [](const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; };
  t.push_back(slice);

  // The second half of a sharded weight update: each device updated its own block of the
  // parameter along dim, in place; the gather writes the other blocks into the same buffer.
  Primitive gather_in_place = comm(Op::AllGatherInPlace, "all_gather_in_place");
  gather_in_place.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    along(in[0], a, false);  // the blocks must divide the dimension
    return std::vector<Shape>{};
  };
  gather_in_place.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  t.push_back(gather_in_place);

  // Pipeline transfers: the sender's operand becomes the receiver's result (attrs.shape).
  Primitive send = comm(Op::Send, "send");
  send.shapes = [](const std::vector<Shape>&, const Attrs&) { return std::vector<Shape>{}; };
  send.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  t.push_back(send);
  Primitive recv = comm(Op::Recv, "recv");
  recv.num_inputs = 0;
  recv.shapes = [](const std::vector<Shape>&, const Attrs& a) { return std::vector<Shape>{a.shape}; };
  recv.dtypes = [](const std::vector<DType>&, const Attrs& a) { return std::vector<DType>{a.dtype}; };
  t.push_back(recv);
}

}  // namespace shardlab::ir
