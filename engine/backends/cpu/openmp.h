// The few OpenMP calls the CPU backend makes, also in a build without OpenMP (SHARDLAB_OPENMP=OFF,
// the ThreadSanitizer build: libgomp is not built with TSan, so its threads would only give false
// reports). Without OpenMP every parallel region runs on the calling thread: a team of one.
#pragma once

#ifdef _OPENMP
#include <omp.h>
#endif

namespace shardlab::backends::cpu::openmp {

#ifdef _OPENMP
inline void set_num_threads(int n) { omp_set_num_threads(n); }
inline int max_threads() { return omp_get_max_threads(); }
inline int thread_num() { return omp_get_thread_num(); }
inline int num_threads() { return omp_get_num_threads(); }
#else
inline void set_num_threads(int) {}
inline int max_threads() { return 1; }
inline int thread_num() { return 0; }
inline int num_threads() { return 1; }
#endif

}  // namespace shardlab::backends::cpu::openmp
