// A program of primitives over named values: what a training step (forward, backward, optimizer
// update) lowers to. Static: every value has a fixed shape, like a jitted XLA computation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/tensor/dtype.h"
#include "engine/tensor/tensor.h"

namespace shardlab::ir {

enum class Op {
  // dense algebra
  MatMul,        // op(a) @ op(b); a and b viewed as 2-D (leading dims folded into rows)
  BatchMatMul,   // op(a) @ op(b) over the last two dims, one product per index of the leading dims
  // elementwise
  Add, Sub, Mul, Scale,
  Relu, ReluGrad, Gelu, GeluGrad, Tanh, TanhGrad, Sigmoid, SigmoidGrad,
  Dropout,
  // row broadcasts and reductions over the last dimension
  BiasAdd, MulRow, ReduceRows,
  LayerNorm, LayerNormGrad,
  RmsNorm, RmsNormGrad,  // x / sqrt(mean(x^2) + eps) over the last dimension (Llama's RMSNorm)
  Softmax, SoftmaxGrad,  // over the last dimension; `causal` masks keys after the query (attention)
  // over one dimension `dim`: sum it away, or broadcast along a new one
  ReduceAxis, Broadcast,
  // embedding lookups: rows of a table by index, and their gradient summed back into the table
  Gather, ScatterAdd,
  // convolution and pooling windows over (batch, height, width, channels): Patches copies every
  // window out, (batch, out_h, out_w, window_h, window_w, channels), for a GEMM or a reduction;
  // PatchesGrad adds such windows back into the image (its transpose). ReduceMax takes the largest
  // along `dim`; ReduceMaxGrad routes a cotangent to the first largest (max pooling's gradient).
  Patches, PatchesGrad, ReduceMax, ReduceMaxGrad,
  // rotary position embedding over (..., seq at `dim`, ..., features): feature i and i + d/2 of the
  // element at position s turn by s * theta^(-2i/d) (transformers' rotate_half); `rope_inverse`
  // turns them back (its VJP)
  Rope,
  // structure. Concat joins its operands along `dim` (equal in every other dim); Split cuts its
  // operand along `dim` into parts of the sizes in `shape` (Concat's inverse and VJP).
  Reshape, Transpose, Stack, Unstack, Concat, Split, Fill,
  Convert,  // to attrs.dtype (mixed precision: parameters to the compute dtype, logits to float32)
  // How many elements of its operands are not finite (inf or NaN), summed over the mesh: whether a
  // step under dynamic loss scaling overflowed. A float32 scalar.
  CountNonFinite,
  // losses and metrics
  SoftmaxXent, SoftmaxXentGrad, Mse, MseGrad, Accuracy,
  // optimizer updates: read the gradient, update parameter and state in place
  SgdUpdate, AdamUpdate,
  // communication between the devices of a mesh (inserted by the partitioner)
  AllReduce, AllGather, ReduceScatter, AllToAll, ShardSlice,
  AllGatherInPlace,  // each device holds its own block of its operand; afterwards it holds them all
  // between pipeline stages (inserted by the partitioner): Send copies its operand out to the device
  // of stage `peer` with the same other coordinates and goes on; Recv waits for it (matched by `tag`)
  Send, Recv,
  kCount
};

// Where a value's storage comes from: persistent state outlives the step, inputs are fed per step,
// temporaries live in the step's arena for their live range only.
enum class ValueKind { Param, OptState, Input, Target, Temp };

struct Value {
  std::string name;
  Shape shape;
  ValueKind kind = ValueKind::Temp;
  DType dtype = DType::F32;
  std::vector<std::string> axes;  // logical axis names per dimension, where known
  // The user pinned this value's layout (a node's output_axes, like with_logical_constraint).
  bool constrained = false;
};

struct Attrs {
  bool trans_a = false, trans_b = false;   // MatMul
  double alpha = 1.0;                      // Scale factor, Fill value, Dropout rate
  double eps = 0.0;                        // LayerNorm epsilon
  uint64_t seed = 0;                       // Dropout stream key
  Shape shape;                             // Reshape/Fill/Broadcast/ScatterAdd result shape
  std::vector<int64_t> perm;               // Transpose: result dim d is operand dim perm[d]
  bool causal = false;                     // Softmax: query i sees keys 0..i only
  DType dtype = DType::F32;                // Convert's result, Fill's and Recv's
  // MatMul, BatchMatMul: how float32 operands are rounded before their products (the project's
  // matmul_precision; float32 accumulation whatever it is).
  MatmulPrecision precision = MatmulPrecision::Highest;
  // MatMul, BatchMatMul with Converts folded in (ir/cast_folding.h): float32 operands read rounded
  // to this 16-bit dtype, as if converted first; the result stored in result_dtype (float32: it is
  // still rounded to the 16-bit dtype of its operands, as if converted back at once).
  std::optional<DType> round_operands, result_dtype;
  // Fill: the step's loss scale instead of alpha (the loss's cotangent under dynamic loss scaling).
  // An optimizer update: its gradient is scaled by the loss scale, which it divides out; its last
  // operand counts the step's non-finite gradient elements, and where that is not 0 it skips.
  bool loss_scaled = false;
  // optimizer hyper-parameters (learning rate comes from the step context: schedules vary it)
  double b1 = 0.9, b2 = 0.999, opt_eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
  bool nesterov = false;
  // communication: over which mesh axes (a group of group_size devices), along which dimension.
  // An optimizer update with group_size > 1 updates only this device's block of its parameter
  // along `dim`; its gradient and state are that block (a sharded weight update).
  std::vector<std::string> mesh_axes;
  int64_t group_size = 1;
  int64_t dim = 0;
  int64_t split_dim = 0;  // AllToAll: `dim` is gathered, `split_dim` scattered
  // Dropout on a device's block: the mesh axes splitting each dim of `shape`, the whole array's
  // shape (empty: the operand is the whole array).
  std::vector<std::vector<std::string>> layout;
  // Patches, PatchesGrad: per spatial dim (height, width) the window, its stride and dilation, and
  // the padding {top, bottom, left, right}; pad_lowest: padding reads as -inf (max pooling), else 0.
  // PatchesGrad's `shape` is the image's.
  std::vector<int64_t> window, strides, dilation, pads;
  bool pad_lowest = false;
  double rope_theta = 10000.0;  // Rope: the base of its frequencies
  bool rope_inverse = false;    // Rope: rotate by -angle
  int64_t peer = -1;      // Send: the stage it goes to; Recv: the stage it comes from
  int64_t tag = 0;        // Send/Recv: pairs one send with its recv
};

struct Instr {
  Op op;
  std::vector<int> in;
  std::vector<int> out;
  Attrs attrs;
  std::string node;  // the layer node it came from ("" for the loss or optimizer)
  // Where a pipeline runs it (engine/sharding/pipeline.h). `layer` of `layers`: the Repeat layer it
  // computes (its forward or its VJP), -1 outside a Repeat. `microbatch`: which one's forward
  // (backward = false) or backward pass it belongs to, -1 for the once-per-step updates. `stage`:
  // the pipeline stage whose devices run it, -1 for every device.
  int64_t layer = -1, layers = 0;
  int64_t microbatch = -1;
  bool backward = false;
  int64_t stage = -1;
};

// Whether a device of pipeline stage `stage` runs `ins` (every device does without a pipeline).
inline bool runs_on_stage(const Instr& ins, int64_t stage) { return ins.stage < 0 || stage < 0 || ins.stage == stage; }

struct Program {
  std::vector<Value> values;
  std::vector<Instr> instrs;
  // A pipelined per-device program: the mesh axis whose coordinate is a device's stage, and how
  // many stages (1: no pipeline, every device runs every instruction).
  std::string stage_axis;
  int64_t stages = 1;

  int add_value(std::string name, Shape shape, ValueKind kind = ValueKind::Temp,
                std::vector<std::string> axes = {}, DType dtype = DType::F32);
  // Appends an instruction; output shapes and dtypes come from the primitive's rules.
  std::vector<int> apply(Op op, std::vector<int> in, Attrs attrs = {}, const std::string& node = {},
                        const std::string& out_name = {});
  int apply1(Op op, std::vector<int> in, Attrs attrs = {}, const std::string& node = {},
            const std::string& out_name = {}) {
    return apply(op, std::move(in), std::move(attrs), node, out_name).at(0);
  }
  const Shape& shape(int v) const { return values.at(size_t(v)).shape; }
  DType dtype(int v) const { return values.at(size_t(v)).dtype; }
  // Bytes of a value: its elements times its dtype's size.
  int64_t bytes(int v) const { return numel(shape(v)) * int64_t(dtype_size(dtype(v))); }
};

// `v` in `dtype`: itself where it already is, else a Convert appended for `node`.
int convert_to(Program& p, int v, DType dtype, const std::string& node);

// Builds gradients of a scalar `loss` w.r.t. `wrt` by appending each primitive's VJP in reverse
// order; returns the gradient value per entry of `wrt` (a Fill of zeros where loss ignores it).
// Only instructions from `first` on are differentiated: what earlier ones make is taken as constant
// (a microbatch's forward pass starts there, and the earlier microbatches' work is not walked again).
// `loss_scaled`: the loss's cotangent is the step's loss scale rather than 1 (dynamic loss scaling),
// so every gradient comes out multiplied by it.
std::vector<int> append_gradients(Program& p, int loss, const std::vector<int>& wrt, size_t first = 0, bool loss_scaled = false);

std::string to_string(const Program& p);

}  // namespace shardlab::ir
