// Reverse-mode differentiation over a Program: walk the forward instructions backwards, asking each
// primitive for its VJP, and sum cotangents that reach the same value.
#include <optional>
#include <unordered_set>

#include "engine/ir/primitive.h"
#include "engine/util/error.h"

namespace shardlab::ir {

std::vector<int> append_gradients(Program& p, int loss, const std::vector<int>& wrt, size_t first, bool loss_scaled) {
  if (numel(p.shape(loss)) != 1) throw Error("internal: the loss must be a scalar, got " + shape_str(p.shape(loss)));
  const size_t forward_end = p.instrs.size();

  // Values that depend on a differentiated input: only those need cotangents.
  std::vector<bool> depends(p.values.size(), false);
  for (int v : wrt) depends[size_t(v)] = true;
  for (size_t i = first; i < forward_end; ++i) {
    const Instr& ins = p.instrs[i];
    bool any = false;
    for (int v : ins.in) any = any || depends[size_t(v)];
    if (any)
      for (int v : ins.out) depends[size_t(v)] = true;
  }

  std::vector<std::optional<int>> ct(p.values.size());
  Attrs one;
  one.alpha = 1.0;
  one.shape = p.shape(loss);
  one.dtype = p.dtype(loss);
  one.loss_scaled = loss_scaled;
  ct[size_t(loss)] = p.apply1(Op::Fill, {}, one, "", "d_loss");

  for (size_t i = forward_end; i-- > first;) {
    const Instr ins = p.instrs[i];  // copy: emitting may reallocate the vector
    Cotangents out_ct;
    bool any = false;
    for (int v : ins.out) {
      out_ct.push_back(v < int(ct.size()) ? ct[size_t(v)] : std::nullopt);
      any = any || out_ct.back().has_value();
    }
    if (!any) continue;
    std::vector<bool> needs;
    bool need_any = false;
    for (int v : ins.in) {
      needs.push_back(depends[size_t(v)]);
      need_any = need_any || needs.back();
    }
    if (!need_any) continue;
    const Primitive& prim = primitive(ins.op);
    if (!prim.vjp) throw Error(std::string("internal: primitive ") + prim.name + " is not differentiable");
    const size_t vjp_begin = p.instrs.size();
    Cotangents in_ct = prim.vjp(p, ins, out_ct, needs);
    if (ct.size() < p.values.size()) ct.resize(p.values.size());
    for (size_t k = 0; k < ins.in.size(); ++k) {
      if (!needs[k] || !in_ct.at(k)) continue;
      auto& slot = ct[size_t(ins.in[k])];
      slot = slot ? p.apply1(Op::Add, {*slot, *in_ct[k]}, {}, ins.node) : *in_ct[k];
    }
    // A VJP computes what its forward instruction did: the same Repeat layer (and pipeline stage).
    for (size_t k = vjp_begin; k < p.instrs.size(); ++k) {
      p.instrs[k].layer = ins.layer;
      p.instrs[k].layers = ins.layers;
    }
    if (ct.size() < p.values.size()) ct.resize(p.values.size());
  }

  std::vector<int> grads;
  for (int v : wrt) {
    if (ct[size_t(v)]) {
      grads.push_back(*ct[size_t(v)]);
    } else {
      Attrs zero;
      zero.alpha = 0.0;
      zero.shape = p.shape(v);
      zero.dtype = p.dtype(v);
      grads.push_back(p.apply1(Op::Fill, {}, zero, "", "d_" + p.values[size_t(v)].name));
    }
  }
  return grads;
}

}  // namespace shardlab::ir
