// First-fit placement of buffers with live ranges: the memory plan's arena offsets. Each buffer, in
// the order given, goes to the lowest offset where it overlaps no buffer placed before it that is
// live at the same time on the same pipeline stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardlab::plan {

// Live on `stage` from instruction `first` to `last`, both included (first >= -1: inputs are
// written before the step's first instruction).
struct LiveSpan {
  int64_t stage;
  int first, last;
};

struct Buffer {
  int64_t size;                // bytes
  std::vector<LiveSpan> live;  // at least one span, at most one per stage
};

// Offsets in bytes, one per buffer, placed in `order` (every index once). `steps`: the program's
// instruction count (every span's last < steps, or == steps for a value kept after the step).
// Throws util's overflow error where an offset plus a size passes int64.
std::vector<int64_t> place_first_fit(const std::vector<Buffer>& bufs, const std::vector<size_t>& order, int steps);

}  // namespace shardlab::plan
