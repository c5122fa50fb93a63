#include "engine/util/zeroed_pages.h"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace shardlab::util {

ZeroedPages::ZeroedPages(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
}

ZeroedPages::~ZeroedPages() {
  if (data_) munmap(data_, size_);
}

ZeroedPages::ZeroedPages(ZeroedPages&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

ZeroedPages& ZeroedPages::operator=(ZeroedPages&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

}  // namespace shardlab::util
