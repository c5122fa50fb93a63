// A primitive's sharding rule, kept beside its VJP: given its operands' layouts, it chooses its
// outputs' layouts, asks for any reshard it needs, and emits its per-device instruction. The
// partitioner (engine/sharding/partitioner.cpp) supplies the context.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::ir {

// A value's layout over a mesh: per dimension the mesh axes splitting it, and the axes over which
// it is a pending partial sum (a contracting dimension was sharded).
struct Layout {
  std::vector<std::vector<std::string>> dims;
  std::set<std::string> partial;

  static Layout replicated(size_t rank) { return Layout{std::vector<std::vector<std::string>>(rank), {}}; }
  Layout without_partial() const { return Layout{dims, {}}; }
  bool operator==(const Layout& o) const { return dims == o.dims && partial == o.partial; }
  std::string str() const;
};

class PartitionContext {
 public:
  virtual ~PartitionContext() = default;
  // Of a value of the global program.
  virtual const Layout& layout(int v) const = 0;
  virtual const Shape& shape(int v) const = 0;
  virtual const std::string& name(int v) const = 0;
  // The per-device value holding `v` in layout `to`, with collectives inserted as needed.
  virtual int reshard(int v, const Layout& to, const std::string& node) = 0;
  // Emits `ins` on per-device operands and gives its outputs these layouts.
  virtual void produce(const Instr& ins, std::vector<int> operands, const std::vector<Layout>& outputs, Attrs attrs) = 0;
  // A further per-device instruction, and a sum over mesh axes, for rules that need them.
  virtual int apply(Op op, std::vector<int> operands, Attrs attrs, const std::string& node, const std::string& name = {}) = 0;
  virtual int all_reduce(int local, const std::vector<std::string>& axes, const std::string& node, const std::string& what) = 0;
  // Every device of the group over `axes` holds its own block of `local` along `dim`; afterwards
  // each holds all of them (the end of a sharded weight update).
  virtual void gather_in_place(int local, const std::vector<std::string>& axes, int64_t dim, const std::string& node,
                               const std::string& what) = 0;
  virtual void define(int v, int local, Layout layout) = 0;
  virtual int64_t group_size(const std::vector<std::string>& axes) const = 0;
  virtual Shape local_shape(const Shape& global, const Layout& layout) const = 0;
};

using PartitionRule = std::function<void(PartitionContext&, const Instr&)>;

}  // namespace shardlab::ir
