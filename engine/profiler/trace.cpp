#include "engine/profiler/trace.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/util/output_file.h"

namespace shardlab::profiler {

const char* category_name(Category c) {
  switch (c) {
    case Category::Compute: return "compute";
    case Category::Collective: return "collective";
    case Category::Optimizer: return "optimizer";
    case Category::Data: return "data";
    case Category::Step: return "step";
  }
  return "?";
}

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Tracks: device d's compute stream is 2d + 1, its data stream 2d + 2 (tid 0 is left unnamed).
int track(int device, Category c) { return 2 * device + (c == Category::Data ? 2 : 1); }
}  // namespace

Trace::Trace(Mode mode, int keep_steps)
    : mode_(mode),
      keep_steps_(std::max(1, keep_steps)),
      t0_ns_(steady_ns()),
      origin_unix_us_(double(std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count())) {}

double Trace::now_us() const { return double(steady_ns() - t0_ns_) / 1000.0; }

void Trace::add(const Span& s) {
  if (!detailed()) return;
  std::lock_guard<std::mutex> lock(mu_);
  spans_.push_back(s);
  if (s.category == Category::Step) trim();
}

void Trace::add(const MemorySample& m) {
  if (!detailed()) return;
  std::lock_guard<std::mutex> lock(mu_);
  memory_.push_back(m);
}

void Trace::add(const StepSummary& s) {
  std::lock_guard<std::mutex> lock(mu_);
  summaries_.push_back(s);
}

void Trace::trim() {
  int64_t newest = 0;
  for (const Span& s : spans_) newest = std::max(newest, s.step);
  const int64_t oldest_kept = newest - keep_steps_ + 1;
  while (!spans_.empty() && spans_.front().step < oldest_kept) spans_.pop_front();
  const double cut = spans_.empty() ? 0.0 : spans_.front().start_us;
  while (!memory_.empty() && memory_.front().ts_us < cut) memory_.pop_front();
}

std::vector<Span> Trace::spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {spans_.begin(), spans_.end()};
}

std::vector<StepSummary> Trace::summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summaries_;
}

std::string Trace::to_chrome_json(const std::string& process_name) const {
  using Json = nlohmann::ordered_json;
  std::lock_guard<std::mutex> lock(mu_);
  Json events = Json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", process_name}}}});
  std::set<int> tracks;
  for (const Span& s : spans_) tracks.insert(track(s.device, s.category));
  for (int t : tracks) {
    const int device = (t - 1) / 2;
    const bool data = (t - 1) % 2 == 1;
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", t},
                      {"args", {{"name", device_label_ + " " + std::to_string(device) + (data ? " data" : " compute")}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", t}, {"args", {{"sort_index", t}}}});
  }
  for (const Span& s : spans_) {
    Json args = {{"step", s.step}};
    if (!s.node.empty()) args["node"] = s.node;
    if (!s.array.empty()) args["array"] = s.array;
    if (s.arrays && !s.arrays->reads.empty()) args["reads"] = s.arrays->reads;
    if (s.arrays && !s.arrays->writes.empty()) args["writes"] = s.arrays->writes;
    if (s.flops > 0) args["flops"] = s.flops;
    if (s.bytes > 0) args["bytes"] = s.bytes;
    if (s.stage >= 0) args["stage"] = s.stage;
    if (s.microbatch >= 0) {
      args["microbatch"] = s.microbatch;
      args["pass"] = s.backward ? "backward" : "forward";
    }
    events.push_back({{"name", s.name}, {"cat", category_name(s.category)}, {"ph", "X"}, {"ts", s.start_us},
                      {"dur", s.dur_us}, {"pid", 0}, {"tid", track(s.device, s.category)}, {"args", args}});
  }
  for (const MemorySample& m : memory_)
    events.push_back({{"name", "memory " + device_label_ + " " + std::to_string(m.device)}, {"ph", "C"}, {"ts", m.ts_us}, {"pid", 0},
                      {"args", {{"live bytes", m.bytes}}}});
  return Json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

void Trace::write_chrome_json(const std::string& path) const { util::write_output_file(path, to_chrome_json(), "trace"); }

}  // namespace shardlab::profiler
