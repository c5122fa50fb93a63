// Opening the files of a checkpoint for reading without trusting what is at the path: a FIFO, a
// device or a directory in place of a file is refused before anything is read (the file is opened
// with O_NONBLOCK and checked with fstat, so a FIFO with no writer never blocks), and reads take
// exactly the bytes asked for, at the offset asked for, never the whole file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace shardlab::checkpoint {

class RegularFile {
 public:
  // Throws Error naming `path`: missing or unreadable ("cannot open"), or not a regular file
  // ("is a FIFO", "is a directory", "is a device", "is a socket").
  explicit RegularFile(const std::filesystem::path& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }

  // Reads bytes [offset, offset + n) into `dst`; Error naming the file if they are not all there
  // (the file shrank, or an I/O error).
  void read_at(uint64_t offset, void* dst, uint64_t n) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;
};

// The whole of a small file (JSON beside the tensors): refused, naming the file, when it is not a
// regular file or is larger than `max_bytes`.
std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace shardlab::checkpoint
