// Writes a file so that a crash or a full disk never leaves it half-written: the bytes go to a
// temporary file beside it, are flushed to disk, and only then renamed over the target.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

namespace shardlab::util {

// Throws Error naming `file` and the reason; the previous file, if any, is then untouched.
void write_file_atomically(const std::filesystem::path& file, std::string_view bytes);
// The same for a file made of `pieces` one after another (written in turn, never copied into one).
void write_file_atomically(const std::filesystem::path& file, const std::vector<std::string_view>& pieces);
// The same for bytes made as they are written: `produce` hands each piece to the sink it is given,
// in order (a piece need live only until the sink returns). An Error it throws leaves no file.
using ByteSink = std::function<void(std::string_view)>;
void write_file_atomically(const std::filesystem::path& file, const std::function<void(const ByteSink&)>& produce);

}  // namespace shardlab::util
