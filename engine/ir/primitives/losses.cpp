// Scalar losses (mean over the batch) and metrics, always float32 (mixed precision converts the
// predictions first). Labels are class indices, int32 (or whole numbers in a float type).
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

std::vector<DType> scalar_f32(const std::vector<DType>& in, const Attrs&) {
  if (in[0] != DType::F32) throw Error(std::string("the predictions are ") + dtype_name(in[0]) + "; a loss or metric reads float32");
  return {DType::F32};
}
// A loss's gradient: the predictions' dtype, whatever the labels' and the cotangent's.
std::vector<DType> like_predictions(const std::vector<DType>& in, const Attrs&) { return {in[0]}; }

std::vector<Shape> classification(const std::vector<Shape>& in, const Attrs&) {
  if (in[0].empty() || leading(in[0]) != in[1])
    throw Error("logits " + shape_str(in[0]) + " do not match labels " + shape_str(in[1]) +
                " (labels need the logits' shape without the class dimension)");
  return {Shape{}};
}

// Means over the batch: each device averages its own block (the class dimension whole, for the
// softmax), then the blocks' means are averaged over the axes that split it.
std::vector<std::string> split_axes(const Layout& s) {
  std::vector<std::string> axes;
  for (const auto& d : s.dims) axes.insert(axes.end(), d.begin(), d.end());
  return axes;
}

Layout prediction_layout(PartitionContext& c, const Instr& ins, bool whole_last) {
  Layout s = c.layout(ins.in[0]).without_partial();
  if (whole_last) s.dims.back().clear();
  return s;
}

Layout target_layout(const Layout& s, bool same_rank) {
  return same_rank ? s : Layout{std::vector<std::vector<std::string>>(s.dims.begin(), s.dims.end() - 1), {}};
}

void mean_rule(PartitionContext& c, const Instr& ins) {
  const bool mse = ins.op == Op::Mse;
  const Layout s = prediction_layout(c, ins, !mse);
  const int x = c.reshard(ins.in[0], s, ins.node), t = c.reshard(ins.in[1], target_layout(s, mse), ins.node);
  int out = c.apply(ins.op, {x, t}, ins.attrs, ins.node, c.name(ins.out[0]));
  const auto axes = split_axes(s);
  if (!axes.empty()) {
    out = c.all_reduce(out, axes, ins.node, c.name(ins.out[0]));
    Attrs scale;
    scale.alpha = 1.0 / double(c.group_size(axes));
    out = c.apply(Op::Scale, {out}, scale, ins.node);
  }
  c.define(ins.out[0], out, Layout::replicated(0));
}

void mean_grad_rule(PartitionContext& c, const Instr& ins) {
  const bool mse = ins.op == Op::MseGrad;
  const Layout s = prediction_layout(c, ins, !mse);
  const int x = c.reshard(ins.in[0], s, ins.node), t = c.reshard(ins.in[1], target_layout(s, mse), ins.node);
  const int g = c.reshard(ins.in[2], Layout::replicated(0), ins.node);
  int out = c.apply(ins.op, {x, t, g}, ins.attrs, ins.node);
  const auto axes = split_axes(s);
  if (!axes.empty()) {  // each block's mean is over fewer elements
    Attrs scale;
    scale.alpha = 1.0 / double(c.group_size(axes));
    out = c.apply(Op::Scale, {out}, scale, ins.node);
  }
  c.define(ins.out[0], out, s);
}

}  // namespace

void register_losses(std::vector<Primitive>& t) {
  Primitive xent;
  xent.op = Op::SoftmaxXent;
  xent.name = "softmax_cross_entropy";
  xent.num_inputs = 2;
  xent.partition = mean_rule;
  xent.shapes = classification;
  xent.dtypes = scalar_f32;
  xent.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 4.0 * double(numel(in[0])); };
  xent.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Cotangents r(2);
    r[0] = p.apply1(Op::SoftmaxXentGrad, {ins.in[0], ins.in[1], *ct[0]}, {}, ins.node);
    return r;  // labels are not differentiable
  };
  t.push_back(xent);

  Primitive xent_grad;  // (logits, labels, g) -> g * (softmax(logits) - onehot) / batch; backward only
  xent_grad.op = Op::SoftmaxXentGrad;
  xent_grad.name = "softmax_cross_entropy_grad";
  xent_grad.num_inputs = 3;
  xent_grad.partition = mean_grad_rule;
  xent_grad.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    classification({in[0], in[1]}, a);
    return std::vector<Shape>{in[0]};
  };
  xent_grad.flops = xent.flops;
  xent_grad.dtypes = like_predictions;
  t.push_back(xent_grad);

  Primitive mse;
  mse.op = Op::Mse;
  mse.name = "mean_squared_error";
  mse.num_inputs = 2;
  mse.partition = mean_rule;
  mse.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0] != in[1]) throw Error("predictions " + shape_str(in[0]) + " and targets " + shape_str(in[1]) + " differ");
    return std::vector<Shape>{Shape{}};
  };
  mse.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 3.0 * double(numel(in[0])); };
  mse.dtypes = scalar_f32;
  mse.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    int d = p.apply1(Op::MseGrad, {ins.in[0], ins.in[1], *ct[0]}, {}, ins.node);
    if (needs[0]) r[0] = d;
    if (needs[1]) {
      Attrs neg;
      neg.alpha = -1.0;
      r[1] = p.apply1(Op::Scale, {d}, neg, ins.node);
    }
    return r;
  };
  t.push_back(mse);

  Primitive mse_grad;  // (pred, target, g) -> g * 2 (pred - target) / numel; backward only
  mse_grad.op = Op::MseGrad;
  mse_grad.name = "mean_squared_error_grad";
  mse_grad.num_inputs = 3;
  mse_grad.partition = mean_grad_rule;
  mse_grad.shapes = [](const std::vector<Shape>& in, const Attrs&) { return std::vector<Shape>{in[0]}; };
  mse_grad.flops = mse.flops;
  mse_grad.dtypes = like_predictions;
  t.push_back(mse_grad);

  Primitive acc;  // fraction of rows whose arg-max equals the label; a metric, never differentiated
  acc.op = Op::Accuracy;
  acc.name = "accuracy";
  acc.num_inputs = 2;
  acc.partition = mean_rule;
  acc.shapes = classification;
  acc.dtypes = scalar_f32;
  acc.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  t.push_back(acc);
}

}  // namespace shardlab::ir
