// Casts folded into the matmuls around them, a pass over the step any backend consumes. Mixed
// precision casts a parameter to the compute dtype for its product (Flax's promote_dtype), and casts
// the product's weight gradient back to the parameter's float32 (the cast's VJP). Held as values,
// the cast copies of every weight would live from the forward pass to the backward one, and every
// weight gradient would be made twice. Folded, a matmul reads the float32 parameter rounded as the
// cast would round it, and writes its 16-bit product straight into float32 storage: the same
// numbers, without the copies.
#pragma once

#include <map>

#include "engine/ir/program.h"

namespace shardlab::ir {

// (1) A Convert from float32 to a 16-bit dtype whose operand lives through the step anyway (a
// parameter, optimizer state, an input) and whose every reader is a matmul's operand: the readers
// read the operand itself with attrs.round_operands, and the Convert goes. (2) A matmul whose
// 16-bit product only a Convert to float32 reads: the matmul writes that Convert's result
// (attrs.result_dtype), and the Convert goes: its result is then what holds the product, which
// `moved` records (16-bit product -> the float32 value now made in its place). Run it before
// the optimizer updates are placed: a folded matmul reads the parameter itself, so its update must
// wait for that read.
// Returns how many Converts were folded.
int fold_casts(Program& p, std::map<int, int>* moved = nullptr);

}  // namespace shardlab::ir
