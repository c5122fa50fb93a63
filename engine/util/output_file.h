// Where Shardlab writes a file a user named (a --log, a --trace, an export, a calibrated profile,
// a saved project or screenshot): never over something that is not a regular file, never through
// a link, never into a checkpoint directory (which only the checkpoint writer writes), and never
// with a write error left unsaid.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace shardlab::util {

// The files that make a directory a checkpoint's: a checkpoint root holds run.json and .lock, a
// step directory checkpoint.json and COMMITTED (checkpoint/run_identity.h and checkpoint.h name
// them; test_output_file checks that the two lists agree).
inline constexpr const char* kCheckpointMarkers[] = {"run.json", ".lock", "checkpoint.json", "COMMITTED"};

// The path to write for `path`, or an Error "<what> <path>: <why>" where it may not be written:
// - an existing target must be a regular file: a symbolic link (which may lead anywhere), a
//   device, a FIFO, a socket or a directory is refused;
// - the target's directory must exist, and neither it nor any directory above it may be a step
//   directory (step_N holding checkpoint.json or COMMITTED, or in a checkpoint root); in a
//   checkpoint root (its run.json is Shardlab's, or it holds .lock beside step_N directories) the
//   writer's own names (run.json, .lock, step_...) are refused, a log or an export beside the
//   steps is not.
std::filesystem::path output_path(const std::filesystem::path& path, const std::string& what);

// output_path, then write_file_atomically (a temporary file beside the target, renamed over it
// only once whole): a write error or a full disk leaves the previous file as it was.
void write_output_file(const std::filesystem::path& path, std::string_view bytes, const std::string& what);

// A file written a line at a time while a run goes on (the JSONL --log another program follows),
// opened after output_path's checks without following a link and truncated. Each line is written
// at once; a write that fails or falls short (a full disk, an I/O error) is an Error naming the
// file, never a log cut short in silence.
class LineFile {
 public:
  LineFile(const std::filesystem::path& path, const std::string& what);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;
  // `line` and a newline.
  void write_line(std::string_view line);
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  std::string name_;
  size_t size_ = 0;  // bytes of whole lines written
};

}  // namespace shardlab::util
