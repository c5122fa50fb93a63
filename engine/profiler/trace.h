// Step traces: what every device did and when, per primitive and collective, with the layer it came
// from, the arrays it read and wrote (in the Sharding view's names) and the FLOPs or bytes the plan
// predicted for it. Light mode keeps
// per-step totals by category only; detailed mode keeps every span of the last K steps (a ring),
// plus the totals of all steps. Exported as Chrome trace-event JSON, which Perfetto opens.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace shardlab::profiler {

enum class Category { Compute, Collective, Optimizer, Data, Step };
const char* category_name(Category c);

// The arrays one instruction of the step read and wrote, named as the Sharding view names them:
// parameters "blocks/W1/kernel", their gradients "d_blocks/W1/kernel" and optimizer state
// "blocks/W1/kernel/mu", inputs and activations by their node ("x", "blocks/W1"). Temporaries
// inside a layer (a matmul before its bias) are no array and are left out.
struct SpanArrays {
  std::vector<std::string> reads, writes;
  bool empty() const { return reads.empty() && writes.empty(); }
};

struct Span {
  int device = 0;
  Category category = Category::Compute;
  std::string name;   // primitive ("matmul", "all_reduce") or "step", "data"
  std::string node;   // layer node ("dense1", "blocks/W1"); "" for the loss and data
  // What it produced (or, for a collective, moved): an array name as in SpanArrays, "" for a
  // temporary; "batch" for the loader's wait. Traces written before SpanArrays existed hold the
  // step program's own value names here ("blocks/W1/matmul"), which are no array.
  std::string array;
  double start_us = 0, dur_us = 0;
  double flops = 0, bytes = 0;
  int64_t step = 0;
  // Shared by every span of the same instruction (the executor describes each once), so a span
  // costs a reference count, not a copy of the names; null when it touched no array.
  std::shared_ptr<const SpanArrays> arrays = nullptr;
  // In a pipeline: the device's stage and the microbatch whose forward or backward pass this is
  // (-1 outside a pipeline, or for once-per-step work such as the updates).
  int64_t stage = -1, microbatch = -1;
  bool backward = false;
};

struct MemorySample {
  int device = 0;
  double ts_us = 0;
  double bytes = 0;  // live step buffers after the span at ts
};

// Per device and step: wall time and how it divides.
struct StepSummary {
  int64_t step = 0;
  int device = 0;
  double wall_us = 0, compute_us = 0, collective_us = 0, optimizer_us = 0, data_us = 0;
  double flops = 0;
  double idle_us() const { return wall_us - compute_us - collective_us - optimizer_us - data_us; }
};

class Trace {
 public:
  enum class Mode { Light, Detailed };
  explicit Trace(Mode mode = Mode::Light, int keep_steps = 20);

  Mode mode() const { return mode_; }
  bool detailed() const { return mode_ == Mode::Detailed; }
  // Microseconds since the trace began (steady clock).
  double now_us() const;
  // When the trace began, in microseconds since the Unix epoch: what lines up the traces of
  // several processes (merge_process_traces).
  double origin_unix_us() const { return origin_unix_us_; }
  // What the devices are called in the Chrome trace's track and counter names: "CPU" (virtual
  // devices on threads) or "GPU". Set once, before the first step.
  void set_device_label(std::string label) { device_label_ = std::move(label); }
  const std::string& device_label() const { return device_label_; }

  // Thread-safe: devices record concurrently.
  void add(const Span& s);
  void add(const MemorySample& m);
  void add(const StepSummary& s);

  std::vector<Span> spans() const;
  std::vector<StepSummary> summaries() const;
  // Chrome trace-event JSON: one process per host, one track per device and stream.
  std::string to_chrome_json(const std::string& process_name = "shardlab") const;
  void write_chrome_json(const std::string& path) const;

 private:
  void trim();  // drop spans of steps older than the last keep_steps_

  Mode mode_;
  int keep_steps_;
  int64_t t0_ns_;
  double origin_unix_us_;
  std::string device_label_ = "CPU";
  mutable std::mutex mu_;
  std::deque<Span> spans_;
  std::deque<MemorySample> memory_;
  std::vector<StepSummary> summaries_;
};

}  // namespace shardlab::profiler
