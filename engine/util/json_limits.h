// JSON from files a user or another tool may have written: a nesting depth limit checked before
// parsing, so that `[[[[...` a million deep is a short error instead of a stack overflow in code
// that walks the parsed value recursively (dump, copies, comparisons), and parse errors that name
// the file instead of nlohmann's bare "[json.exception.parse_error.101]".
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace shardlab::util {

// Deep enough for any project or checkpoint Shardlab writes (a few levels), far from any stack limit.
inline constexpr size_t kDefaultJsonDepth = 64;

// The deepest nesting of [ and { in `text` outside strings, stopping early once it passes `limit`
// (the returned value is then limit + 1). Does not validate the JSON.
size_t json_depth(std::string_view text, size_t limit);

// Throws Error "<who>: JSON nested deeper than <max_depth> levels (at byte <offset>)" when it is.
void check_json_depth(std::string_view text, size_t max_depth, const std::string& who);

// nlohmann's exception text for a person: without its "[json.exception.parse_error.101] " prefix,
// and cut short (its "last read: '...'" quotes the whole of a long token, megabytes of it).
std::string json_error_text(const std::exception& e);

// Says what a key repeated within one object is, given the keys (and "[i]" array indices) of the
// values enclosing that object, outermost first.
using DuplicateKeyMessage = std::function<std::string(const std::vector<std::string>& path, const std::string& key)>;

// A syntax error, with the byte offset where the parser stopped (for a line and column).
class JsonSyntaxError : public Error {
 public:
  JsonSyntaxError(const std::string& what, size_t byte, std::string reason)
      : Error(what), byte(byte), reason(std::move(reason)) {}
  size_t byte;
  std::string reason;  // json_error_text's, without the offset
};

// check_json_depth, then parse in time linear in the text: objects keep their members in the
// file's order, appended without the linear key search an ordered_json object makes on insertion
// (which made 100,000 keys take a minute). A key repeated within one object is an Error, "<who>:
// duplicate key "k" in a.b[3]" or what `duplicate` says: nlohmann would silently keep one of them.
// A syntax error is a JsonSyntaxError, "<who>: malformed JSON: <reason>".
// `max_string_bytes` (0: no limit) bounds every string and key: "<who>: a string of N bytes at a.b
// (at most M)".
nlohmann::ordered_json parse_json_limited(std::string_view text, const std::string& who,
                                          size_t max_depth = kDefaultJsonDepth, const DuplicateKeyMessage& duplicate = {},
                                          size_t max_string_bytes = 0);

}  // namespace shardlab::util
