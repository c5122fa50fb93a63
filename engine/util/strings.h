// Small text helpers shared by the command-line syntaxes ("data=2,model=4", "batch=data,...") and
// the messages that suggest a name or quote a value read from a file.
#pragma once

#include <algorithm>
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

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean" suggestions.
inline size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate closest to `name` when it is a near miss (a typo: two edits, a swap of two letters
// included, or a third of a longer name; never the whole name), else "".
inline std::string nearest(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::min(std::max<size_t>(2, name.size() / 3), name.size() - (name.empty() ? 0 : 1)) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) best = c, best_d = d;
  }
  return best;
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
