#include "engine/util/zeroed_pages.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

// Under AddressSanitizer the block comes from the heap instead, with red zones, so a kernel that
// runs past it is still caught (every page is then touched; sanitizer builds do not measure RSS).
#if defined(__SANITIZE_ADDRESS__)
#define SHARDLAB_ZEROED_FROM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDLAB_ZEROED_FROM_HEAP 1
#endif
#endif

namespace shardlab::util {

namespace {
constexpr std::align_val_t kAlign{64};
}

ZeroedPages::ZeroedPages(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
#if defined(SHARDLAB_ZEROED_FROM_HEAP)
  data_ = static_cast<std::byte*>(::operator new(bytes, kAlign));
  std::memset(data_, 0, bytes);
#else
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
#endif
}

ZeroedPages::~ZeroedPages() {
  if (!data_) return;
#if defined(SHARDLAB_ZEROED_FROM_HEAP)
  ::operator delete(data_, kAlign);
#else
  munmap(data_, size_);
#endif
}

ZeroedPages::ZeroedPages(ZeroedPages&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

ZeroedPages& ZeroedPages::operator=(ZeroedPages&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

}  // namespace shardlab::util
