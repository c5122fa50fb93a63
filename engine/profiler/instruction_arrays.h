// Which arrays each instruction of a step program reads and writes, in the names the Sharding view
// uses, so a trace span can say what it touched in the user's words rather than the program's own
// value names ("blocks/W1/matmul" is a temporary, not an array anyone can open); and the category
// and FLOPs every backend's spans give an instruction. Worked out once per program, before it runs;
// the executor hands the result to every span of that instruction.
#pragma once

#include <vector>

#include "engine/ir/program.h"
#include "engine/profiler/trace.h"

namespace shardlab::profiler {

// Per value of `p`: the array it is (or a block, a layer's slice or a partial sum of), "" for a
// temporary. Parameters and optimizer state keep their names; an input is named by its node ("x"
// for "input:x"); a Repeat's per-layer slice of a stacked parameter is that parameter; what an
// optimizer update reads as the gradient is "d_" + the parameter (and so are the per-layer pieces
// stacked into it); a value of the forward pass that a node computes and another node (or the loss)
// reads is that node's activation. A collective moves one array: what it reads and writes is the
// same array.
std::vector<std::string> value_arrays(const ir::Program& p);

// Per instruction of `p`: the distinct arrays among its operands and results, in operand order.
std::vector<SpanArrays> instruction_arrays(const ir::Program& p);

// A span's category for an instruction: a collective, an optimizer update, or compute.
Category instruction_category(ir::Op op);
// The instruction's FLOPs by its primitive's count (a collective's: the elements it moves).
double instruction_flops(const ir::Program& p, const ir::Instr& ins);

}  // namespace shardlab::profiler
