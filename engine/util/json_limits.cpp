#include "engine/util/json_limits.h"

#include <unordered_set>
#include <utility>

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

namespace {

using Json = nlohmann::ordered_json;

// nlohmann's SAX events into an ordered_json, each object member appended at the end of its
// object (no search), the keys of each open object in a hash set to find a repeat.
class LinearBuilder {
 public:
  LinearBuilder(const std::string& who, const DuplicateKeyMessage& duplicate, size_t max_string)
      : who_(who), duplicate_(duplicate), max_string_(max_string) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(Json(v)); }
  bool string(std::string& v) {
    check_length(v);
    return put(Json(std::move(v)));
  }
  bool binary(Json::binary_t& v) { return put(Json(std::move(v))); }
  bool start_object(std::size_t) {
    open(Json::object());
    keys_.emplace_back();
    return true;
  }
  bool key(std::string& k) {
    check_length(k);
    if (!keys_.back().insert(k).second) {
      std::vector<std::string> path;
      for (size_t i = 0; i + 1 < path_.size(); ++i) path.push_back(path_[i]);
      std::string where;
      for (const std::string& part : path) where += (where.empty() || part.front() == '[' ? "" : ".") + part;
      const std::string message = duplicate_ ? duplicate_(path, k)
                                             : "duplicate key \"" + excerpt(k, 80) + "\"" + (where.empty() ? "" : " in " + where);
      throw Error(who_ + ": " + message);
    }
    path_.back() = k;
    pending_ = std::move(k);
    return true;
  }
  bool end_object() {
    keys_.pop_back();
    close();
    return true;
  }
  bool start_array(std::size_t) {
    open(Json::array());
    return true;
  }
  bool end_array() {
    close();
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    error_byte_ = byte;
    error_ = json_error_text(e);
    return false;
  }

  Json take() { return std::move(root_); }
  const std::string& error() const { return error_; }
  size_t error_byte() const { return error_byte_; }

 private:
  // Where the next value goes: the root, the end of the open array, or the open object under the
  // key just read.
  Json* put(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      auto& a = top.get_ref<Json::array_t&>();
      path_.back() = "[" + std::to_string(a.size()) + "]";
      a.push_back(std::move(v));
      return &a.back();
    }
    auto& members = static_cast<std::vector<std::pair<const std::string, Json>>&>(top.get_ref<Json::object_t&>());
    members.emplace_back(std::move(pending_), std::move(v));
    return &members.back().second;
  }
  // The path of the value being read, as "a.b[3]".
  std::string where() const {
    std::string w;
    for (const std::string& part : path_)
      if (!part.empty()) w += (w.empty() || part.front() == '[' ? "" : ".") + part;
    return w;
  }
  void check_length(const std::string& s) const {
    if (max_string_ == 0 || s.size() <= max_string_) return;
    const std::string w = where();
    throw Error(who_ + ": a string of " + std::to_string(s.size()) + " bytes" + (w.empty() ? "" : " at " + w) + " (at most " +
                std::to_string(max_string_) + ")");
  }
  void open(Json v) {
    stack_.push_back(put(std::move(v)));
    path_.emplace_back();
  }
  void close() {
    stack_.pop_back();
    path_.pop_back();
  }

  const std::string& who_;
  const DuplicateKeyMessage& duplicate_;
  size_t max_string_ = 0;
  Json root_;
  std::vector<Json*> stack_;   // the open containers, innermost last (a parent is not appended to while a child is open)
  std::vector<std::string> path_;  // per open container: the key or index of the member being read
  std::vector<std::unordered_set<std::string>> keys_;  // per open object
  std::string pending_;
  std::string error_;
  size_t error_byte_ = 0;
};

}  // namespace

nlohmann::ordered_json parse_json_limited(std::string_view text, const std::string& who, size_t max_depth,
                                          const DuplicateKeyMessage& duplicate, size_t max_string_bytes) {
  check_json_depth(text, max_depth, who);
  LinearBuilder b(who, duplicate, max_string_bytes);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &b);
  } catch (const nlohmann::ordered_json::exception& e) {
    throw JsonSyntaxError(who + ": malformed JSON: " + json_error_text(e), 0, json_error_text(e));
  }
  if (!ok) throw JsonSyntaxError(who + ": malformed JSON: " + b.error(), b.error_byte(), b.error());
  return b.take();
}

}  // namespace shardlab::util
