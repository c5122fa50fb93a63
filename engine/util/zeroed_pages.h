// Zero-filled memory straight from the kernel (an anonymous mapping): a page takes no physical
// memory until it is first touched. For the CPU executor's persistent block, whose parameters held
// once for every virtual device (backends/cpu/shared_replicas.h) are never touched in the other
// devices' blocks, so 8 devices of data parallelism do not keep 8 resident copies.
#pragma once

#include <cstddef>

namespace shardlab::util {

class ZeroedPages {
 public:
  ZeroedPages() = default;
  // Throws std::bad_alloc where the kernel refuses.
  explicit ZeroedPages(size_t bytes);
  ~ZeroedPages();
  ZeroedPages(ZeroedPages&& o) noexcept;
  ZeroedPages& operator=(ZeroedPages&& o) noexcept;
  ZeroedPages(const ZeroedPages&) = delete;
  ZeroedPages& operator=(const ZeroedPages&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace shardlab::util
