// The device's GEMM peak, measured on the engine's own kernel: what MFU is a fraction of.
#pragma once

namespace shardlab::profiler {

// FLOP/s of the best of a few 512x1024x1024 products on the calling thread's core set; a fraction
// of a second, so callers with a UI run it off their UI thread.
double measure_gemm_peak_flops();

}  // namespace shardlab::profiler
