// JSON from files a user or another tool may have written: a nesting depth limit checked before
// parsing, so that `[[[[...` a million deep is a short error instead of a stack overflow in code
// that walks the parsed value recursively (dump, copies, comparisons), and parse errors that name
// the file instead of nlohmann's bare "[json.exception.parse_error.101]".
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

// check_json_depth, then parse; a syntax error becomes Error "<who>: malformed JSON: <reason>".
nlohmann::ordered_json parse_json_limited(std::string_view text, const std::string& who,
                                          size_t max_depth = kDefaultJsonDepth);

}  // namespace shardlab::util
