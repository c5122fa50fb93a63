// A layer type: parses its fields, infers its output and parameters from its inputs, and lowers to
// primitives. One file per layer under engine/graph/layers/, one line in layers/registry.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/graph/init.h"
#include "engine/ir/program.h"

namespace shardlab::graph {

// An activation as it flows along an edge: its shape (batch included) and logical axis names.
struct ArrayInfo {
  Shape shape;
  std::vector<std::string> axes;
};

// "(batch 128, embed 784)": a shape with its logical axis names, as the editor and errors show it.
std::string describe(const ArrayInfo& a);

// An array a layer makes inside itself that is worth showing beside its output (attention's
// per-head query and weights): "<node>/<name>" in the sharding view.
struct InnerArray {
  std::string name;
  ArrayInfo array;
};

struct ParamInfo {
  std::string name;  // "kernel"; the full path is "<node>/<name>"
  Shape shape;       // full shape; a Repeat's parameters lead with the 'layer' axis
  std::vector<std::string> axes;
  InitSpec init;
  int64_t layers = 0;  // > 0: stacked, `layers` copies of shape[1:] each initialised on its own
  // "<node>/<param>": this parameter is that one, shared (tied weights), not one of the node's own;
  // it adds nothing to the model's parameters, and its gradient adds to that one's.
  std::string tied = "";
};

// A parameter a layer shares with another node (Attend's table is an Embed's): `field` names that
// node in the layer's fields, `name` is what the layer calls it, `target` is "<node>/<param>".
struct TiedParam {
  std::string field, name, target;
};

struct LowerContext {
  ir::Program& program;
  std::string node;  // full node path ("blocks/W1")
  bool training = true;
  uint64_t seed = 0;
  // The program value of this node's parameter `name`, in its stored dtype.
  std::function<int(const std::string& name)> param;
  // Where set, every node's output value by path (a block's nodes: their last layer's), so a
  // report can name the value each node's activation is (lowering a Repeat passes it on).
  std::map<std::string, int>* outputs = nullptr;
  // The dtype this node computes in (a Repeat's is its block's default).
  DType compute = DType::F32;
  // `v` in the node's compute dtype: as Flax's promote_dtype casts a module's inputs and parameters
  // (a Convert where it is not already).
  int cast(int v) const { return ir::convert_to(program, v, compute, node); }
};

// One field of a layer's "params" as an editor offers it.
struct FieldInfo {
  enum class Kind { Int, Number, Bool, String, IntList, NameList, Init };
  std::string key;
  Kind kind = Kind::Int;
  Json value;             // the default, or for a required field the value a new node starts with
  bool required = false;  // always written; others are written only when they differ from `value`
  std::string help;
  double lo = 0, hi = 0;  // Number: the accepted range
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::vector<std::string> input_ports() const { return {"in"}; }
  // The fields configure() reads, for editors; the palette's one-line summary and group.
  virtual std::vector<FieldInfo> fields() const { return {}; }
  virtual std::string summary() const = 0;
  virtual std::string category() const = 0;
  // Reads and checks the node's fields; throws Error("field: reason").
  virtual void configure(const Node& node) = 0;
  // Output and parameters from the inputs (one per port); throws Error on a shape mismatch.
  virtual ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const = 0;
  virtual int lower(LowerContext& ctx, const std::vector<int>& in) const = 0;
  // Parameters it shares with earlier nodes: the analysis puts each in infer()'s `params` (the
  // target's shape and axes, `tied` set) before infer() adds the layer's own.
  virtual std::vector<TiedParam> tied_params() const { return {}; }
  // The arrays inside it, from its inputs; lower() names their values in ctx.outputs.
  virtual std::vector<InnerArray> inner_arrays(const std::vector<ArrayInfo>&) const { return {}; }
  // The dtype it computes in when its node does not say (nullopt: the project's policy). LayerNorm
  // keeps float32, as mixed-precision recipes do.
  virtual std::optional<DType> compute_dtype() const { return std::nullopt; }
};

// Creates a layer of the given type, or nullptr if there is none.
std::unique_ptr<Layer> create_layer(const std::string& type);
std::vector<std::string> layer_types();

// Helpers for layers reading their JSON fields with errors that name the field.
namespace fields {
int64_t positive_int(const Json& params, const char* key, int64_t fallback = -1);
double number(const Json& params, const char* key, double fallback, double lo, double hi);
bool boolean(const Json& params, const char* key, bool fallback);
std::string string(const Json& params, const char* key, const std::string& fallback);
std::vector<std::string> names(const Json& j, const std::string& what);
// Throws for any key of `params` not in `allowed`.
void only(const Json& params, std::initializer_list<const char*> allowed);
// The logical axes of parameter `name`: the node's override if any, else `fallback`; checks the rank.
std::vector<std::string> param_axes(const Node& node, const std::string& name, std::vector<std::string> fallback,
                                    size_t rank);
}  // namespace fields

}  // namespace shardlab::graph
