// The window fields a convolution and a pool share: a window size, strides, dilation and padding
// over (height, width), read from a node's params with errors that name the field, and the
// geometry they give an image (Flax's/lax's SAME and VALID).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/layer.h"

namespace shardlab::graph::fields {

struct Window2D {
  std::array<int64_t, 2> size{1, 1}, strides{1, 1}, dilation{1, 1};
  // SAME: out = ceil(in / stride), the padding split with the odd one after (lax.padtype_to_pads);
  // VALID: no padding.
  bool same = false;
  std::string field = "kernel_size";  // the window's field, which errors name

  // {top, bottom, left, right} for an image of h x w.
  std::vector<int64_t> pads(int64_t h, int64_t w) const;
  // The output's (height, width); throws Error naming the field where the window does not fit.
  std::array<int64_t, 2> output(int64_t h, int64_t w) const;
  // Patches' attributes for an image of h x w.
  ir::Attrs patches(int64_t h, int64_t w, bool pad_lowest) const;
};

// A list of 2 positive integers, or one that stands for both; `fallback` where it is left out.
std::array<int64_t, 2> int_pair(const Json& params, const char* key, std::array<int64_t, 2> fallback);
// "SAME" or "VALID".
bool same_padding(const Json& params, const char* key, bool fallback);
// A Conv2D's window from its params: kernel_size (required), strides, dilation, padding (SAME).
Window2D conv_window(const Json& params);
// A pool's: window (required), strides (the window where left out or empty), padding (VALID).
Window2D pool_window(const Json& params);
// The image a window layer reads: (batch, height, width[, channels]); a missing channel dim is 1.
void check_image(const ArrayInfo& x);

}  // namespace shardlab::graph::fields
