// The ONNX exporter proper, built where CMake found ONNX and protobuf (onnx_unavailable.cpp stands in
// elsewhere). It walks the analysed layer graph, not the lowered primitives, so the ONNX graph keeps
// the project's node names and reads like the model that was drawn.
//
// Besides the layers onnx_export.h lists:
//   Softmax            Softmax(axis=-1)
//   Reshape            Reshape to (0, shape...): the batch dimension kept
//   Embed              Cast of the (float) ids to INT64, then Gather(embedding, ids, axis=0)
//   PatchEmbed         as the layer lowers: Reshape (batch, H/p, p, W/p, p, C), Transpose (0, 1, 3, 2, 4, 5),
//                      Reshape (batch, patches, p*p*C), MatMul by the kernel reshaped (p*p*C, F), Add the bias
//   PositionEmbedding  Add of the (seq, F) embedding, broadcast over the batch
//   MultiHeadAttention q, k, v: MatMul by the (E, H, D) kernel reshaped (E, H*D), Reshape (batch, S, H, D),
//                      Add the (H, D) bias, Transpose to (batch, H, S, D); q times 1/sqrt(D); scores
//                      q @ k^T (k transposed to (batch, H, D, S)); causal: Add of a constant (S, S) mask,
//                      0 where key <= query and -inf elsewhere; Softmax over the keys (no dropout);
//                      @ v, Transpose back to (batch, S, H, D), Reshape (batch, S, H*D), MatMul by the
//                      (H, D, out) kernel reshaped (H*D, out), Add the out bias
//   MeanPool           ReduceMean(axes=[1], keepdims=0)
//   GroupNorm          as the layer lowers: Reshape (batch, S, G, C/G), Transpose (0, 2, 1, 3), Reshape
//                      (batch, G, S*C/G), LayerNormalization over the last axis (scale of ones, no bias),
//                      back the same way, then Mul scale and Add bias per channel (opset 17's
//                      GroupNormalization scales per group, not per channel)
// Parameters keep the project's shapes as initializers (reshaped in the graph where an op needs it);
// shapes for Reshape are INT64 initializers "const/shape/<dims>".
#include "engine/export/onnx_export.h"
#include "engine/graph/layers/window_fields.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include <onnx/onnx_pb.h>

#include "engine/util/output_file.h"
#include "engine/tensor/convert.h"
#include "engine/util/error.h"

namespace shardlab::exporter {

namespace {

namespace fs = std::filesystem;
using graph::NodeReport;

static_assert(std::endian::native == std::endian::little, "initializers are written as the host's floats");

// A parameter's values as the current scope sees them: a whole array, or one layer's slice of a
// Repeat's stacked array.
struct ParamRef {
  Shape shape;
  const float* data = nullptr;
};
using ParamFn = std::function<ParamRef(const std::string& path)>;

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// A layer field as the node has it, else the layer's default (so the defaults live in one place).
graph::Json field(const graph::Node& node, const std::string& key) {
  if (node.params.contains(key)) return node.params[key];
  auto layer = graph::create_layer(node.type);
  if (layer)
    for (const graph::FieldInfo& f : layer->fields())
      if (f.key == key) return f.value;
  throw Error("node " + in_quotes(node.name) + ": no field " + in_quotes(key));
}

bool has_param(const NodeReport& r, const std::string& name) {
  for (const graph::ParamInfo& p : r.params)
    if (p.name == name) return true;
  return false;
}

void set_shape(onnx::ValueInfoProto& v, const Shape& per_example) {
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  auto* shape = t->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  for (int64_t d : per_example) shape->add_dim()->set_dim_value(d);
}

class Exporter {
 public:
  Exporter(onnx::GraphProto& g, DType dtype) : g_(g), dtype_(dtype) {}

  // Emits the nodes of `g` (analysed as `nodes`, whose names start with `report_prefix`) with
  // names under `scope`; `carry` feeds a block's "@in". Returns each local node's output tensor.
  std::map<std::string, std::string> emit(const graph::Graph& g, const std::vector<NodeReport>& nodes,
                                          const std::string& report_prefix, const std::string& scope,
                                          const std::string& carry, const ParamFn& param) {
    std::map<std::string, std::string> out;
    if (!carry.empty()) out[graph::kCarryNode] = carry;
    std::map<std::string, std::string> source;
    for (const graph::Edge& e : g.edges) source[e.to.str()] = e.from.node;
    for (const NodeReport& r : nodes) {
      const std::string local = r.name.substr(report_prefix.size());
      const graph::Node* node = g.find(local);
      if (!node || !r.layer) throw Error("node " + in_quotes(r.name) + ": not analysed (the project has errors)");
      std::vector<std::string> in;
      for (const std::string& port : r.layer->input_ports()) {
        auto s = source.find(local + "." + port);
        if (s == source.end() || !out.count(s->second))
          throw Error("node " + in_quotes(r.name) + ": input " + in_quotes(port) + " is not connected");
        in.push_back(computable(out.at(s->second), r.type));
      }
      out[local] = emit_node(r, *node, scope + local, in, [&](const std::string& p) {
        for (const graph::ParamInfo& info : r.params)  // a shared parameter is the earlier node's
          if (info.name == p && !info.tied.empty()) return param(info.tied);
        return param(local + "/" + p);
      });
    }
    return out;
  }

 private:
  // One layer's ONNX nodes named under `name`; returns the tensor it outputs (named `name` where it
  // makes one). `node_param` resolves the layer's own parameters ("kernel"; "W1/kernel" in a Repeat).
  std::string emit_node(const NodeReport& r, const graph::Node& node, const std::string& name,
                        const std::vector<std::string>& in, const ParamFn& node_param) {
    const std::string& type = r.type;
    auto param = [&](const std::string& p) { return initializer(name + "/" + p, r, p, node_param(p)); };
    if (type == "Input") {
      if (!in.empty() || r.output.shape.empty()) throw unsupported(r, "an Input inside a block");
      auto* v = g_.add_input();
      v->set_name(name);
      set_shape(*v, Shape(r.output.shape.begin() + 1, r.output.shape.end()));
      float_input_ = name;
      return name;
    }
    if (type == "Dense") {
      const std::string kernel = param("kernel");
      if (!has_param(r, "bias")) return op("MatMul", name + "/MatMul", {in.at(0), kernel}, name);
      const std::string y = op("MatMul", name + "/MatMul", {in.at(0), kernel}, name + "/MatMul");
      return op("Add", name + "/Add", {y, param("bias")}, name);
    }
    if (type == "ReLU") return op("Relu", name + "/Relu", {in.at(0)}, name);
    if (type == "Tanh") return op("Tanh", name + "/Tanh", {in.at(0)}, name);
    if (type == "Sigmoid") return op("Sigmoid", name + "/Sigmoid", {in.at(0)}, name);
    if (type == "SiLU") {
      const std::string sig = op("Sigmoid", name + "/Sigmoid", {in.at(0)}, name + "/sigmoid");
      return op("Mul", name + "/Mul", {in.at(0), sig}, name);
    }
    if (type == "Multiply") return op("Mul", name + "/Mul", {in.at(0), in.at(1)}, name);
    if (type == "RMSNorm") {
      // x / sqrt(mean(x^2) + eps) * scale: opset 17 has no RMSNormalization.
      const std::string& x = in.at(0);
      const std::string sq = op("Mul", name + "/square", {x, x}, name + "/square");
      const std::string ms = op("ReduceMean", name + "/ReduceMean", {sq}, name + "/mean_square");
      attr_ints("axes", {-1});
      attr_int("keepdims", 1);
      const std::string eps = scalar(name + "/epsilon", field(node, "epsilon").get<float>());
      const std::string root = op("Sqrt", name + "/Sqrt", {op("Add", name + "/Add", {ms, eps}, name + "/plus_eps")}, name + "/root");
      if (!has_param(r, "scale")) return op("Div", name + "/Div", {x, root}, name);
      const std::string y = op("Div", name + "/Div", {x, root}, name + "/normalised");
      return op("Mul", name + "/Mul", {y, param("scale")}, name);
    }
    if (type == "GELU") {
      // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), in the engine's order of operations.
      const std::string& x = in.at(0);
      const std::string x2 = op("Mul", name + "/x2", {x, x}, name + "/x2");
      const std::string x3 = op("Mul", name + "/x3", {x2, x}, name + "/x3");
      const std::string kx3 = op("Mul", name + "/k_x3", {x3, scalar("gelu/k", 0.044715f)}, name + "/k_x3");
      const std::string inner = op("Add", name + "/inner", {x, kx3}, name + "/inner");
      const std::string scaled =
          op("Mul", name + "/scaled", {inner, scalar("gelu/sqrt_2_over_pi", 0.7978845608028654f)}, name + "/scaled");
      const std::string t = op("Tanh", name + "/Tanh", {scaled}, name + "/Tanh");
      const std::string one_t = op("Add", name + "/one_plus", {t, scalar("one", 1.0f)}, name + "/one_plus");
      const std::string half_x = op("Mul", name + "/half_x", {x, scalar("half", 0.5f)}, name + "/half_x");
      return op("Mul", name + "/Mul", {half_x, one_t}, name);
    }
    if (type == "LayerNorm") {
      const int64_t features = r.output.shape.back();
      const std::string scale = has_param(r, "scale") ? param("scale") : ones(name + "/scale", features);
      std::vector<std::string> inputs{in.at(0), scale};
      if (has_param(r, "bias")) inputs.push_back(param("bias"));
      const std::string y = op("LayerNormalization", name + "/LayerNormalization", inputs, name);
      auto* n = g_.mutable_node(g_.node_size() - 1);
      auto* axis = n->add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto_AttributeType_INT);
      axis->set_i(-1);
      auto* eps = n->add_attribute();
      eps->set_name("epsilon");
      eps->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      eps->set_f(field(node, "epsilon").get<float>());
      return y;
    }
    if (type == "Add") return op("Add", name + "/Add", {in.at(0), in.at(1)}, name);
    if (type == "Concatenate") {
      const std::string y = op("Concat", name + "/Concat", {in.at(0), in.at(1)}, name);
      attr_int("axis", field(node, "axis").get<int64_t>());  // as the layer counts it: the batch is axis 0
      return y;
    }
    if (type == "GroupNorm") return group_norm(r, node, name, in.at(0), param);
    if (type == "Flatten") {
      const std::string y = op("Flatten", name + "/Flatten", {in.at(0)}, name);
      auto* axis = g_.mutable_node(g_.node_size() - 1)->add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto_AttributeType_INT);
      axis->set_i(1);
      return y;
    }
    if (type == "Dropout") return op("Identity", name + "/Identity", {in.at(0)}, name);  // off at inference
    if (type == "Softmax") {
      const std::string y = op("Softmax", name + "/Softmax", {in.at(0)}, name);
      attr_int("axis", -1);
      return y;
    }
    if (type == "Reshape") {
      Shape to{0};  // Reshape's 0: the input's batch dimension, whatever it is
      to.insert(to.end(), r.output.shape.begin() + 1, r.output.shape.end());
      return op("Reshape", name + "/Reshape", {in.at(0), shape_const(to)}, name);
    }
    if (type == "Embed") {
      const std::string ids = op("Cast", name + "/Cast", {in.at(0)}, name + "/ids");
      attr_int("to", onnx::TensorProto_DataType_INT64);
      const std::string y = op("Gather", name + "/Gather", {param("embedding"), ids}, name);
      attr_int("axis", 0);
      return y;
    }
    if (type == "PatchEmbed") {
      const Shape& xs = r.inputs.at(0).shape;
      const Shape& ks = param_shape(r, "kernel");  // (p, p, C, F)
      const int64_t p = ks.at(0), c = ks.at(2), f = ks.at(3), gh = xs.at(1) / p, gw = xs.at(2) / p;
      const std::string tiles = op("Reshape", name + "/tiles", {in.at(0), shape_const({0, gh, p, gw, p, c})}, name + "/tiles");
      const std::string grid = op("Transpose", name + "/grid", {tiles}, name + "/grid");
      attr_ints("perm", {0, 1, 3, 2, 4, 5});  // (batch, gh, gw, p, p, C)
      const std::string rows = op("Reshape", name + "/rows", {grid, shape_const({0, gh * gw, p * p * c})}, name + "/rows");
      const std::string kernel =
          op("Reshape", name + "/kernel/Reshape", {param("kernel"), shape_const({p * p * c, f})}, name + "/kernel/flat");
      if (!has_param(r, "bias")) return op("MatMul", name + "/MatMul", {rows, kernel}, name);
      const std::string y = op("MatMul", name + "/MatMul", {rows, kernel}, name + "/MatMul");
      return op("Add", name + "/Add", {y, param("bias")}, name);
    }
    if (type == "PositionEmbedding") return op("Add", name + "/Add", {in.at(0), param("embedding")}, name);
    if (type == "Attend") {
      // The Embed node's initializer itself (one copy in the file), transposed.
      const graph::ParamInfo& shared = r.params.at(0);
      const std::string table = initializer(shared.tied, r, shared.name, node_param(shared.name));
      const std::string t = op("Transpose", name + "/Transpose", {table}, name + "/table_T");
      attr_ints("perm", {1, 0});
      return op("MatMul", name + "/MatMul", {in.at(0), t}, name);
    }
    if (type == "MeanPool") {
      const std::string y = op("ReduceMean", name + "/ReduceMean", {in.at(0)}, name);
      attr_ints("axes", {1});  // an attribute up to opset 17 (an input from 18)
      attr_int("keepdims", 0);
      return y;
    }
    if (type == "MultiHeadAttention") return attention(r, node, name, in.at(0), param);
    if (type == "Conv2D" || type == "MaxPool2D" || type == "AvgPool2D") return window(r, node, name, in.at(0), param);
    if (type == "Repeat") {
      if (!node.body) throw unsupported(r, "a Repeat without a block");
      const int64_t count = field(node, "count").get<int64_t>();
      std::string carry = in.at(0);
      for (int64_t i = 0; i < count; ++i) {
        // Layer i sees the i-th slice of each stacked parameter ("W1/kernel" -> "blocks/W1/kernel"[i]).
        const ParamFn slice = [&, i](const std::string& path) {
          const ParamRef whole = node_param(path);
          if (whole.shape.empty() || whole.shape[0] != count)
            throw Error("parameter " + in_quotes(r.name + "/" + path) + ": shape " + shape_str(whole.shape) +
                        " is not stacked over the Repeat's " + std::to_string(count) + " layers");
          ParamRef one{Shape(whole.shape.begin() + 1, whole.shape.end()), nullptr};
          one.data = whole.data + i * numel(one.shape);
          return one;
        };
        auto outs = emit(*node.body, r.body, r.name + "/", name + "/" + std::to_string(i) + "/", carry, slice);
        auto it = outs.find(node.body->output);
        if (it == outs.end()) throw Error("node " + in_quotes(r.name) + ": block output " + in_quotes(node.body->output) + " not found");
        carry = it->second;
      }
      return carry;
    }
    throw unsupported(r, "");
  }

  // Self-attention as attention.cpp lowers it, at inference (no dropout on the weights).
  std::string attention(const NodeReport& r, const graph::Node& node, const std::string& name, const std::string& x,
                        const std::function<std::string(const std::string&)>& param) {
    const Shape& qs = param_shape(r, "query/kernel");  // (E, H, D)
    const Shape& os = param_shape(r, "out/kernel");    // (H, D, out)
    const int64_t e = qs.at(0), h = qs.at(1), d = qs.at(2), out = os.at(2), s = r.inputs.at(0).shape.at(1);
    const int64_t kvh = param_shape(r, "key/kernel").at(1);  // fewer than h: grouped-query attention
    const bool rope = field(node, "rope").get<bool>();
    const double theta = field(node, "rope_theta").get<double>();
    // (batch, S, E) @ (E, n*D) [+ (n, D)] -> (batch, n, S, D), turned by position first where rope is
    // on; k as (batch, n, D, S), ready for q @ k^T; grouped k and v repeated to the H heads.
    auto project = [&](const std::string& proj, const std::vector<int64_t>& perm) {
      const std::string base = name + "/" + proj;
      const int64_t n = proj == "query" ? h : kvh;
      const std::string kernel =
          op("Reshape", base + "/kernel/Reshape", {param(proj + "/kernel"), shape_const({e, n * d})}, base + "/kernel/flat");
      const std::string y = op("MatMul", base + "/MatMul", {x, kernel}, base + "/MatMul");
      std::string heads = op("Reshape", base + "/heads", {y, shape_const({0, s, n, d})}, base + "/heads");
      if (has_param(r, proj + "/bias")) heads = op("Add", base + "/Add", {heads, param(proj + "/bias")}, base + "/Add");
      if (rope && proj != "value") heads = rotary(base, heads, s, d, theta);
      const std::string t = op("Transpose", base + "/Transpose", {heads}, n == h ? base : base + "/grouped");
      attr_ints("perm", perm);
      if (n == h) return t;
      const int64_t a = perm[2] == 1 ? s : d, b = perm[3] == 1 ? s : d;
      const std::string one = op("Reshape", base + "/group", {t, shape_const({0, n, 1, a, b})}, base + "/group");
      const std::string rep = op("Expand", base + "/Expand", {one, shape_const({1, 1, h / n, 1, 1})}, base + "/repeated");
      return op("Reshape", base + "/Reshape", {rep, shape_const({0, h, a, b})}, base);
    };
    const std::string q0 = project("query", {0, 2, 1, 3});
    const std::string q = op("Mul", name + "/query/scale", {q0, scalar_exact(1.0 / std::sqrt(double(d)))}, name + "/query/scaled");
    const std::string kt = project("key", {0, 2, 3, 1});
    const std::string v = project("value", {0, 2, 1, 3});
    std::string scores = op("MatMul", name + "/scores", {q, kt}, name + "/scores");
    if (field(node, "causal").get<bool>())
      scores = op("Add", name + "/causal", {scores, causal_mask(s)}, name + "/masked_scores");
    const std::string w = op("Softmax", name + "/Softmax", {scores}, name + "/weights");
    attr_int("axis", -1);
    const std::string o = op("MatMul", name + "/context", {w, v}, name + "/context");
    const std::string ot = op("Transpose", name + "/context/Transpose", {o}, name + "/context/Transpose");
    attr_ints("perm", {0, 2, 1, 3});  // (batch, S, H, D)
    const std::string merged = op("Reshape", name + "/context/Reshape", {ot, shape_const({0, s, h * d})}, name + "/merged");
    const std::string kernel =
        op("Reshape", name + "/out/kernel/Reshape", {param("out/kernel"), shape_const({h * d, out})}, name + "/out/kernel/flat");
    if (!has_param(r, "out/bias")) return op("MatMul", name + "/out/MatMul", {merged, kernel}, name);
    const std::string y = op("MatMul", name + "/out/MatMul", {merged, kernel}, name + "/out/MatMul");
    return op("Add", name + "/out/Add", {y, param("out/bias")}, name);
  }

  // GroupNorm as the layer lowers it (see the list at the top of this file).
  std::string group_norm(const NodeReport& r, const graph::Node& node, const std::string& name, const std::string& x,
                         const std::function<std::string(const std::string&)>& param) {
    const Shape& xs = r.inputs.at(0).shape;
    const int64_t c = xs.back(), g = field(node, "num_groups").get<int64_t>(), per = c / g;
    int64_t spatial = 1;
    for (size_t d = 1; d + 1 < xs.size(); ++d) spatial *= xs[d];
    const std::string split = op("Reshape", name + "/split", {x, shape_const({0, spatial, g, per})}, name + "/split");
    const std::string grouped = op("Transpose", name + "/group", {split}, name + "/grouped");
    attr_ints("perm", {0, 2, 1, 3});
    const std::string rows = op("Reshape", name + "/rows", {grouped, shape_const({0, g, spatial * per})}, name + "/rows");
    const std::string normed =
        op("LayerNormalization", name + "/LayerNormalization", {rows, ones(name + "/group_scale", spatial * per)}, name + "/normalised");
    attr_int("axis", -1);
    auto* eps = g_.mutable_node(g_.node_size() - 1)->add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    eps->set_f(field(node, "epsilon").get<float>());
    const std::string back = op("Reshape", name + "/unrows", {normed, shape_const({0, g, spatial, per})}, name + "/unrows");
    const std::string ungrouped = op("Transpose", name + "/ungroup", {back}, name + "/ungrouped");
    attr_ints("perm", {0, 2, 1, 3});
    Shape whole{0};
    whole.insert(whole.end(), xs.begin() + 1, xs.end());
    const bool scale = has_param(r, "scale"), bias = has_param(r, "bias");
    std::string y = op("Reshape", name + "/Reshape", {ungrouped, shape_const(whole)}, scale || bias ? name + "/reshaped" : name);
    if (scale) y = op("Mul", name + "/Mul", {y, param("scale")}, bias ? name + "/scaled" : name);
    if (bias) y = op("Add", name + "/Add", {y, param("bias")}, name);
    return y;
  }

  // A convolution or pool as the layers lower it: ONNX's Conv and pools read NCHW, so the NHWC
  // image is transposed in and the result back out; the kernel (kh, kw, in / groups, out) becomes
  // ONNX's (out, in / groups, kh, kw). Pads are ONNX's order: top, left, bottom, right.
  std::string window(const NodeReport& r, const graph::Node& node, const std::string& name, const std::string& x,
                     const std::function<std::string(const std::string&)>& param) {
    const Shape& xs = r.inputs.at(0).shape;
    const bool conv = r.type == "Conv2D", gray = xs.size() == 3;
    const graph::Json& p = node.params;
    const graph::fields::Window2D w = conv ? graph::fields::conv_window(p) : graph::fields::pool_window(p);
    const std::vector<int64_t> pads = w.pads(xs.at(1), xs.at(2));
    std::string image = x;
    if (gray) image = op("Reshape", name + "/channel", {x, shape_const({0, xs[1], xs[2], 1})}, name + "/channel");
    const std::string nchw = op("Transpose", name + "/to_nchw", {image}, name + "/nchw");
    attr_ints("perm", {0, 3, 1, 2});
    std::string y;
    if (conv) {
      const std::string kernel = op("Transpose", name + "/kernel/Transpose", {param("kernel")}, name + "/kernel/oihw");
      attr_ints("perm", {3, 2, 0, 1});
      std::vector<std::string> inputs{nchw, kernel};
      if (has_param(r, "bias")) inputs.push_back(param("bias"));
      y = op("Conv", name + "/Conv", inputs, name + "/Conv");
      attr_ints("dilations", {w.dilation[0], w.dilation[1]});
      attr_int("group", p.value("feature_groups", int64_t(1)));
    } else {
      const bool max = r.type == "MaxPool2D";
      y = op(max ? "MaxPool" : "AveragePool", name + (max ? "/MaxPool" : "/AveragePool"), {nchw}, name + "/pooled");
      if (!max) attr_int("count_include_pad", 1);  // Flax's avg_pool divides by the whole window
    }
    attr_ints("kernel_shape", {w.size[0], w.size[1]});
    attr_ints("strides", {w.strides[0], w.strides[1]});
    attr_ints("pads", {pads[0], pads[2], pads[1], pads[3]});
    const std::string nhwc = op("Transpose", name + "/to_nhwc", {y}, gray && !conv ? name + "/nhwc" : name);
    attr_ints("perm", {0, 2, 3, 1});
    if (!gray || conv) return nhwc;
    return op("Reshape", name + "/squeeze", {nhwc, shape_const({0, r.output.shape.at(1), r.output.shape.at(2)})}, name);
  }

  // Rotary position embedding of (batch, S, n, D) as the engine's Rope computes it: features i and
  // i + D/2 at position p turn by p * theta^(-2i/D), i.e. t * cos + rotate_half(t) * sin with
  // tables of (S, 1, D).
  std::string rotary(const std::string& base, const std::string& t, int64_t s, int64_t d, double theta) {
    const int64_t half = d / 2;
    std::vector<float> cs(size_t(s * d)), sn(size_t(s * d));
    for (int64_t p = 0; p < s; ++p)
      for (int64_t i = 0; i < d; ++i) {
        const float inv_freq = 1.0f / std::pow(float(theta), float(2 * (i % half)) / float(d));
        const float angle = float(p) * inv_freq;
        cs[size_t(p * d + i)] = std::cos(angle);
        sn[size_t(p * d + i)] = std::sin(angle);
      }
    const std::string key = "const/rope/" + std::to_string(s) + "_" + std::to_string(d) + "_" + std::to_string(int64_t(theta));
    add_initializer(key + "/cos", {s, 1, d}, cs.data());
    add_initializer(key + "/sin", {s, 1, d}, sn.data());
    const std::string lo = op("Slice", base + "/rope/low", {t, shape_const({0}), shape_const({half}), shape_const({3})}, base + "/rope/low");
    const std::string hi = op("Slice", base + "/rope/high", {t, shape_const({half}), shape_const({d}), shape_const({3})}, base + "/rope/high");
    const std::string neg = op("Neg", base + "/rope/Neg", {hi}, base + "/rope/neg_high");
    const std::string rot = op("Concat", base + "/rope/Concat", {neg, lo}, base + "/rope/rotated_half");
    attr_int("axis", 3);
    const std::string a = op("Mul", base + "/rope/cos", {t, key + "/cos"}, base + "/rope/t_cos");
    const std::string b = op("Mul", base + "/rope/sin", {rot, key + "/sin"}, base + "/rope/rot_sin");
    return op("Add", base + "/rope/Add", {a, b}, base + "/rope");
  }

  // A parameter's shape as the project gives it (one layer's inside a Repeat).
  static const Shape& param_shape(const NodeReport& r, const std::string& pname) {
    for (const graph::ParamInfo& p : r.params)
      if (p.name == pname) return p.shape;
    throw Error("node " + in_quotes(r.name) + ": no parameter " + in_quotes(pname));
  }

  // Attributes of the node emitted last.
  void attr_int(const std::string& name, int64_t v) {
    auto* a = g_.mutable_node(g_.node_size() - 1)->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  void attr_ints(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = g_.mutable_node(g_.node_size() - 1)->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t i : v) a->add_ints(i);
  }

  Error unsupported(const NodeReport& r, const std::string& what) const {
    return Error("node " + in_quotes(r.name) + " (type " + in_quotes(r.type) + "): ONNX export does not support " +
                 (what.empty() ? "this layer type" : what) +
                 " (it exports Input, Dense, ReLU, GELU, Tanh, Softmax, LayerNorm, Add, Flatten, Reshape, Dropout, Embed, "
                 "PatchEmbed, PositionEmbedding, MultiHeadAttention, MeanPool, Conv2D, MaxPool2D, AvgPool2D, Sigmoid, SiLU, Multiply, "
                 "RMSNorm, GroupNorm, Attend, Concatenate and Repeat)");
  }

  std::string op(const std::string& type, const std::string& name, const std::vector<std::string>& inputs,
                 const std::string& output) {
    auto* n = g_.add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return output;
  }

  // Float data in the graph's dtype (rounded to nearest even where it is 16-bit).
  void add_initializer(const std::string& name, const Shape& shape, const float* data) {
    if (!initializers_.insert(name).second) return;
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_type(dtype_));
    for (int64_t d : shape) t->add_dims(d);
    const size_t n = size_t(numel(shape));
    if (dtype_ == DType::F32) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(data), n * sizeof(float)));
      return;
    }
    std::vector<uint16_t> bits(n);
    from_float(data, bits.data(), dtype_, n);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), n * sizeof(uint16_t)));
  }

  static int onnx_type(DType d) {
    return d == DType::F16 ? onnx::TensorProto_DataType_FLOAT16 : d == DType::BF16 ? onnx::TensorProto_DataType_BFLOAT16
                                                                                   : onnx::TensorProto_DataType_FLOAT;
  }

  // Node r's parameter `pname` as an initializer called `name`, checked against the shape the
  // project gives it (one layer's shape inside a Repeat).
  std::string initializer(const std::string& name, const NodeReport& r, const std::string& pname, const ParamRef& p) {
    for (const graph::ParamInfo& info : r.params)
      if (info.name == pname && info.shape != p.shape)
        throw Error("parameter " + in_quotes(r.name + "/" + pname) + ": shape " + shape_str(p.shape) + " given, node " +
                    in_quotes(r.name) + " needs " + shape_str(info.shape));
    add_initializer(name, p.shape, p.data);
    return name;
  }

  std::string scalar(const std::string& name, float v) {
    const std::string full = "const/" + name;
    add_initializer(full, {}, &v);
    return full;
  }

  // The float nearest `v`, named after its bits so different values never share a name.
  std::string scalar_exact(double v) {
    const float f = float(v);
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", std::bit_cast<uint32_t>(f));
    return scalar(std::string("f32/") + hex, f);
  }

  // A shape for Reshape, as an INT64 initializer shared by every node that needs it.
  std::string shape_const(const Shape& dims) {
    std::string name = "const/shape/";
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i) name += '_';
      name += std::to_string(dims[i]);
    }
    if (!initializers_.insert(name).second) return name;
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    t->add_dims(int64_t(dims.size()));
    t->set_raw_data(std::string(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t)));
    return name;
  }

  // (s, s): 0 where query i may see key j (j <= i), -inf elsewhere, added to the scores before the
  // softmax so masked keys get exactly 0 weight, as the engine's causal softmax gives them.
  std::string causal_mask(int64_t s) {
    const std::string name = "const/causal_mask/" + std::to_string(s);
    std::vector<float> m(size_t(s * s), 0.0f);
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = i + 1; j < s; ++j) m[size_t(i * s + j)] = -std::numeric_limits<float>::infinity();
    add_initializer(name, {s, s}, m.data());
    return name;
  }

  std::string ones(const std::string& name, int64_t n) {
    const std::vector<float> v(size_t(n), 1.0f);
    add_initializer(name, {n}, v.data());
    return name;
  }

  onnx::GraphProto& g_;
  const DType dtype_;
  std::set<std::string> initializers_;
  // The graph input stays float32 where the graph computes in a 16-bit type: a layer that computes
  // on it reads one Cast of it (an Embed reads its ids as they are: a 16-bit float would round them).
  std::string float_input_, cast_input_;
  std::string computable(const std::string& tensor, const std::string& type) {
    if (dtype_ == DType::F32 || tensor != float_input_ || type == "Embed") return tensor;
    if (cast_input_.empty()) {
      cast_input_ = op("Cast", tensor + "/Cast", {tensor}, tensor + "/cast");
      auto* to = g_.mutable_node(g_.node_size() - 1)->add_attribute();
      to->set_name("to");
      to->set_type(onnx::AttributeProto_AttributeType_INT);
      to->set_i(onnx_type(dtype_));
    }
    return cast_input_;
  }
};

}  // namespace

bool onnx_available() { return true; }

OnnxModel onnx_model(const project::Project& project, const std::map<std::string, Tensor>& params, const std::string& doc,
                     DType dtype) {
  return onnx_model(project, project::analyze_project(project), params, doc, dtype);
}

OnnxModel onnx_model(const project::Project& project, const graph::GraphReport& report,
                     const std::map<std::string, Tensor>& params, const std::string& doc, DType dtype) {
  if (dtype != DType::F32 && !is_16bit(dtype))
    throw Error(std::string("ONNX export in ") + dtype_name(dtype) + ": expected one of " + float_dtype_names());
  if (!report.ok()) throw Error(project.display_name() + ": " + report.errors.front());
  onnx::ModelProto model;
  model.set_ir_version(kOnnxIrVersion);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  model.set_producer_name("Shardlab");
  model.set_doc_string(doc);
  auto* meta = model.add_metadata_props();
  meta->set_key("shardlab.project");
  meta->set_value(project.name);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(project.name.empty() ? "shardlab" : project.name);

  Exporter ex(g, dtype);
  const ParamFn whole = [&](const std::string& path) {
    auto it = params.find(path);
    if (it == params.end()) throw Error("parameter " + in_quotes(path) + ": not among the given parameters");
    if (it->second.size() != numel(it->second.shape))
      throw Error("parameter " + in_quotes(path) + ": holds " + std::to_string(it->second.size()) + " values for shape " +
                  shape_str(it->second.shape));
    return ParamRef{it->second.shape, it->second.ptr()};
  };
  auto outs = ex.emit(project.graph, report.nodes, "", "", "", whole);

  OnnxModel m;
  const NodeReport* out_node = report.find(project.loss.output);
  auto it = outs.find(project.loss.output);
  if (!out_node || it == outs.end()) throw Error("loss.output: there is no node " + in_quotes(project.loss.output) + " to export");
  if (g.input_size() != 1) throw Error(project.display_name() + ": ONNX export needs exactly one Input node");
  m.input = g.input(0).name();
  // The graph output carries the output node's name whichever node made the tensor.
  m.output = project.loss.output;
  if (it->second == m.input) m.output += "/output";
  // A 16-bit graph's output tensor is renamed, so that the Cast back to float32 takes the name.
  if (dtype != DType::F32 && it->second == m.output) {
    const std::string renamed = m.output + "/" + dtype_short(dtype);
    for (auto& n : *g.mutable_node()) {
      for (auto& o : *n.mutable_output())
        if (o == m.output) o = renamed;
      for (auto& i : *n.mutable_input())
        if (i == m.output) i = renamed;
    }
    it->second = renamed;
  }
  if (it->second != m.output) {
    auto* n = g.add_node();
    // Back to float32 where the graph computes in a 16-bit type.
    n->set_op_type(dtype == DType::F32 ? "Identity" : "Cast");
    n->set_name(m.output + "/output");
    n->add_input(it->second);
    n->add_output(m.output);
    if (dtype != DType::F32) {
      auto* to = n->add_attribute();
      to->set_name("to");
      to->set_type(onnx::AttributeProto_AttributeType_INT);
      to->set_i(onnx::TensorProto_DataType_FLOAT);
    }
  }
  set_shape(*g.add_output(), Shape(out_node->output.shape.begin() + 1, out_node->output.shape.end()));
  g.mutable_output(0)->set_name(m.output);

  m.nodes = g.node_size();
  m.initializers = g.initializer_size();
  if (!model.SerializeToString(&m.bytes)) throw Error("ONNX export: the model could not be serialised");
  return m;
}

std::string export_onnx(const project::Project& project, const std::map<std::string, Tensor>& params, const fs::path& out,
                        const std::string& doc, DType dtype) {
  OnnxModel m;
  try {
    m = onnx_model(project, params, doc, dtype);
  } catch (const Error& e) {
    // The model's refusals name a node, parameter or field; the file they stop is named here.
    throw Error("ONNX export to " + out.string() + ": " + e.what());
  }
  util::write_output_file(out, m.bytes, "ONNX export to");
  return "wrote " + out.string() + ": ONNX IR " + std::to_string(kOnnxIrVersion) + ", opset " + std::to_string(kOnnxOpset) + ", " +
         std::to_string(m.nodes) + " nodes, " + std::to_string(m.initializers) + " initializers, input '" + m.input +
         "', output '" + m.output + "'";
}

}  // namespace shardlab::exporter
