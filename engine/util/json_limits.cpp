#include "engine/util/json_limits.h"

#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::util {

namespace {

// Depth and the offset where it first passed `limit` (npos when it never did).
std::pair<size_t, size_t> scan(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > deepest) deepest = depth;
        if (depth > limit) return {deepest, i};
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced input is the parser's to report
        break;
      default: break;
    }
  }
  return {deepest, std::string_view::npos};
}

}  // namespace

size_t json_depth(std::string_view text, size_t limit) { return scan(text, limit).first; }

void check_json_depth(std::string_view text, size_t max_depth, const std::string& who) {
  const auto [depth, at] = scan(text, max_depth);
  if (at != std::string_view::npos)
    throw Error(who + ": JSON nested deeper than " + std::to_string(max_depth) + " levels (at byte " +
                std::to_string(at) + ")");
}

std::string json_error_text(const std::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m.front() == '[') {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return excerpt(m, 160);
}

nlohmann::ordered_json parse_json_limited(std::string_view text, const std::string& who, size_t max_depth) {
  check_json_depth(text, max_depth, who);
  try {
    return nlohmann::ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::ordered_json::exception& e) {
    throw Error(who + ": malformed JSON: " + json_error_text(e));
  }
}

}  // namespace shardlab::util
