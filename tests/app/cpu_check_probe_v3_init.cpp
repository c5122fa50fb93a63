// A static initializer compiled for x86-64-v3, as the engine's are: the start-up CPU check must run
// before it, or on an old CPU it would die of SIGILL before any message. It says when it ran, so the
// test sees the order.
#include <cstdio>
#include <immintrin.h>

namespace {

// An AVX2 + FMA computation (the instructions an older CPU lacks), kept from being folded away.
__attribute__((noinline)) float v3_work() {
  volatile float seed = 2.0f;
  const __m256 x = _mm256_set1_ps(seed);
  const __m256 y = _mm256_fmadd_ps(x, x, x);  // 2 * 2 + 2
  return _mm256_cvtss_f32(y);
}

const int announced = [] {
  std::printf("probe: v3 static initializer ran (%g)\n", double(v3_work()));
  std::fflush(stdout);
  return 1;
}();

}  // namespace
