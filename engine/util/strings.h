// Small text helpers shared by the command-line syntaxes ("data=2,model=4", "batch=data,...") and
// by the loaders' error messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardlab::util {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// At most about `max` bytes of a value read from a file, for an error message: a name of a million
// bytes must not become a message of a million bytes. A cut never splits a UTF-8 sequence and says
// how long the whole was: "abcd... (1000000 bytes)".
inline std::string excerpt(std::string_view text, size_t max = 60) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace shardlab::util
