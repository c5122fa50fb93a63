// A std::allocator with 64-byte (cache line, AVX-512 vector) alignment, for the step's buffers.
#pragma once

#include <cstddef>
#include <new>

namespace shardlab::util {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

}  // namespace shardlab::util
