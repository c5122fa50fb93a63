// Reading a step trace back: the Chrome trace-event JSON that Trace::to_chrome_json writes, parsed
// into spans and memory samples again, with per-step, per-device summaries derived from the spans
// (the file format has no place for them). This is what lets a saved run be opened, shown and
// compared with a live one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/profiler/trace.h"

namespace shardlab::profiler {

struct TraceContents {
  std::string process_name;           // the "process_name" metadata ("shardlab" by default)
  std::string device_label = "CPU";   // "CPU" or "GPU", from the memory counters' names
  std::vector<Span> spans;            // in file order
  std::vector<MemorySample> memory;   // in file order
  std::vector<StepSummary> summaries; // derived from the spans, ordered by (step, device)
};

// Parses Chrome trace JSON text. Throws Error naming `source` (the file) and, for a bad event, its
// index and name: text that is not JSON, no "traceEvents" array, an X event without "dur", a
// category this engine does not write, an unsupported phase.
TraceContents parse_chrome_trace(const std::string& json, const std::string& source);
// Reads and parses a file; throws Error naming it when it cannot be read or parsed.
TraceContents read_chrome_trace(const std::string& path);

// Per step and device, what the spans account for, by the executor's own definition: the step span
// (category Step) is the device's run of the step and the wall time is that plus the data wait; the
// host's data wait (recorded once, on device 0's data track) counts for every device in the step.
// Without a step span the wall time is the extent of the device's spans. Steps where a device has
// only data spans (steps outside a detailed range) give no summary for it.
std::vector<StepSummary> summarize_spans(const std::vector<Span>& spans);

// A detailed Trace holding everything in `contents`, every step kept, so a file and a live run are
// one type to the code that shows them; its to_chrome_json() writes the same spans back.
std::shared_ptr<Trace> make_trace(const TraceContents& contents);

}  // namespace shardlab::profiler
