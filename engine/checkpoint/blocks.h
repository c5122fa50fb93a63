// The block layout of a checkpoint saved over several processes (checkpoint.json version 2, key
// "blocks"), as Orbax's per-process saves: each process writes only the blocks its devices hold,
// into a tensor file of its own, and no process ever holds a whole array. A block is a tensor named
//
//   <array>@<start>,<start>,...      e.g. "params/Dense_0/kernel@0,256": rows from 0, columns from 256
//
// (its shape is the tensor's), and checkpoint.json's "blocks" gives every array's global shape.
// Every array's blocks must tile it: inside it, no two overlapping, covering every element. A
// reader that wants whole arrays assembles them (assemble_blocks); a process restoring onto its
// own devices reads only the blocks that overlap the regions it needs (region_from_blocks).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/tensor/tensor.h"

namespace shardlab::checkpoint {

// "params/x@0,256"; a scalar array's block is "params/x@".
std::string block_name(const std::string& array, const Shape& start);

struct BlockRef {
  std::string array;
  Shape start;
};
// The array and start a block's tensor name gives; false for a name that is not a block's.
bool parse_block_name(const std::string& name, BlockRef& out);

// True where the box [start, start + size) of one array overlaps [other_start, other_start + other_size).
bool boxes_overlap(const Shape& start, const Shape& size, const Shape& other_start, const Shape& other_size);

// Checks that the blocks (name -> shape, as the tensor files' headers give them) tile every array
// of `shapes` exactly; an Error starting with `who` names the array or block at fault (a block of
// an array checkpoint.json does not list, one outside its array, two overlapping, elements left
// uncovered).
void check_tiling(const std::map<std::string, Shape>& shapes, const std::vector<std::pair<std::string, Shape>>& blocks,
                  const std::string& who);

// The whole arrays the blocks of `f` make up, in `order` (each array's name and shape), as stored:
// an array's blocks must share one dtype. The tiling must have been checked. The metadata is kept
// less the blocks' checksums (each block was verified as it was read). Each block's bytes are
// dropped once copied, so the model is held about once, not twice.
SafetensorsFile assemble_blocks(SafetensorsFile f, const std::vector<std::pair<std::string, Shape>>& order,
                                const std::string& who);

// The region [start, start + size) of an array, as float32, copied from the blocks that overlap it;
// Error naming `array` if they leave part of the region uncovered.
Tensor region_from_blocks(const std::string& array, const std::vector<const StoredTensor*>& blocks, const Shape& start,
                          const Shape& size);

}  // namespace shardlab::checkpoint
