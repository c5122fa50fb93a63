#include "engine/graph/layers/window_fields.h"

#include <string>

#include "engine/util/error.h"

namespace shardlab::graph::fields {

std::array<int64_t, 2> int_pair(const Json& p, const char* key, std::array<int64_t, 2> fallback) {
  if (!p.contains(key)) return fallback;
  const Json& v = p[key];
  auto positive = [](const Json& e) { return e.is_number_integer() && e.get<int64_t>() > 0; };
  if (positive(v)) return {v.get<int64_t>(), v.get<int64_t>()};
  if (v.is_array() && v.size() == 1 && positive(v[0])) return {v[0].get<int64_t>(), v[0].get<int64_t>()};
  if (v.is_array() && v.size() == 2 && positive(v[0]) && positive(v[1])) return {v[0].get<int64_t>(), v[1].get<int64_t>()};
  throw Error(std::string(key) + ": bad value " + v.dump() + " (expected a positive integer, or two: height, width)");
}

bool same_padding(const Json& p, const char* key, bool fallback) {
  if (!p.contains(key)) return fallback;
  const Json& v = p[key];
  if (v == "SAME" || v == "same") return true;
  if (v == "VALID" || v == "valid") return false;
  throw Error(std::string(key) + ": bad value " + v.dump() + " (expected \"SAME\" or \"VALID\")");
}

Window2D conv_window(const Json& p) {
  if (!p.contains("kernel_size")) throw Error("kernel_size: missing (the window's height and width, e.g. [3, 3])");
  Window2D w;
  w.size = int_pair(p, "kernel_size", {3, 3});
  w.strides = int_pair(p, "strides", {1, 1});
  w.dilation = int_pair(p, "dilation", {1, 1});
  w.same = same_padding(p, "padding", true);
  return w;
}

Window2D pool_window(const Json& p) {
  if (!p.contains("window")) throw Error("window: missing (the window's height and width, e.g. [2, 2])");
  Window2D w;
  w.field = "window";
  w.size = int_pair(p, "window", {2, 2});
  const bool no_strides = !p.contains("strides") || (p["strides"].is_array() && p["strides"].empty());
  w.strides = no_strides ? w.size : int_pair(p, "strides", w.size);
  w.same = same_padding(p, "padding", false);
  return w;
}

void check_image(const ArrayInfo& x) {
  if (x.shape.size() != 3 && x.shape.size() != 4)
    throw Error("input " + describe(x) + " must be an image: (batch, height, width) or (batch, height, width, channels)");
}

std::vector<int64_t> Window2D::pads(int64_t h, int64_t w) const {
  std::vector<int64_t> p(4, 0);
  if (!same) return p;
  const int64_t in[2] = {h, w};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t out = (in[d] + strides[d] - 1) / strides[d], span = dilation[d] * (size[d] - 1) + 1;
    const int64_t total = std::max<int64_t>((out - 1) * strides[d] + span - in[d], 0);
    p[2 * d] = total / 2;
    p[2 * d + 1] = total - total / 2;
  }
  return p;
}

std::array<int64_t, 2> Window2D::output(int64_t h, int64_t w) const {
  const std::vector<int64_t> p = pads(h, w);
  const int64_t in[2] = {h, w};
  std::array<int64_t, 2> out{};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = dilation[d] * (size[d] - 1) + 1, padded = in[d] + p[2 * d] + p[2 * d + 1];
    if (span > padded)
      throw Error(field + ": a window " + std::to_string(span) + (d ? " wide" : " high") + " (with its dilation) does not fit the " +
                  (d ? "width " : "height ") + std::to_string(in[d]) + "; use padding \"SAME\" or a smaller window");
    out[d] = (padded - span) / strides[d] + 1;
  }
  return out;
}

ir::Attrs Window2D::patches(int64_t h, int64_t w, bool pad_lowest) const {
  ir::Attrs a;
  a.window = {size[0], size[1]};
  a.strides = {strides[0], strides[1]};
  a.dilation = {dilation[0], dilation[1]};
  a.pads = pads(h, w);
  a.pad_lowest = pad_lowest;
  return a;
}

}  // namespace shardlab::graph::fields
