// The device's GEMM peak, measured on the engine's own kernel: what MFU is a fraction of.
#pragma once

namespace shardlab::profiler {

// FLOP/s of the best of a few 512x1024x1024 products on `threads` cores (0: all of them), on the
// kernel the CPU backend uses; a fraction of a second, so callers with a UI run it off their UI thread.
double measure_gemm_peak_flops(int threads = 0);

}  // namespace shardlab::profiler
