// Scalar losses (mean over the batch) and metrics. Labels are class indices stored as floats.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

std::vector<Shape> classification(const std::vector<Shape>& in, const Attrs&) {
  if (in[0].empty() || leading(in[0]) != in[1])
    throw Error("logits " + shape_str(in[0]) + " do not match labels " + shape_str(in[1]) +
                " (labels need the logits' shape without the class dimension)");
  return {Shape{}};
}

}  // namespace

void register_losses(std::vector<Primitive>& t) {
  Primitive xent;
  xent.op = Op::SoftmaxXent;
  xent.name = "softmax_cross_entropy";
  xent.num_inputs = 2;
  xent.shapes = classification;
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
  xent_grad.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    classification({in[0], in[1]}, a);
    return std::vector<Shape>{in[0]};
  };
  xent_grad.flops = xent.flops;
  t.push_back(xent_grad);

  Primitive mse;
  mse.op = Op::Mse;
  mse.name = "mean_squared_error";
  mse.num_inputs = 2;
  mse.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0] != in[1]) throw Error("predictions " + shape_str(in[0]) + " and targets " + shape_str(in[1]) + " differ");
    return std::vector<Shape>{Shape{}};
  };
  mse.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 3.0 * double(numel(in[0])); };
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
  mse_grad.shapes = [](const std::vector<Shape>& in, const Attrs&) { return std::vector<Shape>{in[0]}; };
  mse_grad.flops = mse.flops;
  t.push_back(mse_grad);

  Primitive acc;  // fraction of rows whose arg-max equals the label; a metric, never differentiated
  acc.op = Op::Accuracy;
  acc.name = "accuracy";
  acc.num_inputs = 2;
  acc.shapes = classification;
  acc.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  t.push_back(acc);
}

}  // namespace shardlab::ir
