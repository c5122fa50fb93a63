#include "engine/profiler/trace_file.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/checkpoint/regular_file.h"
#include "engine/util/error.h"
#include "engine/util/json_limits.h"
#include "engine/util/strings.h"

namespace shardlab::profiler {

namespace {

using Json = nlohmann::json;

// A trace of a long detailed run is tens of megabytes; parsing a far larger file would take many
// times its size in memory.
constexpr uint64_t kMaxTraceBytes = uint64_t(512) << 20;
// Steps stay exact in a double (the file stores them as numbers) and far from overflowing.
constexpr double kMaxStep = 9007199254740992.0;  // 2^53

// As many devices as a mesh may have (engine/sharding/mesh.cpp); a viewer keeps a row per device.
constexpr int64_t kMaxDevices = int64_t(1) << 20;

// A value from the file, quoted and cut short for a message.
std::string quoted(const std::string& s) { return "\"" + util::excerpt(s) + "\""; }

bool parse_category(const std::string& name, Category* out) {
  for (Category c : {Category::Compute, Category::Collective, Category::Optimizer, Category::Data, Category::Step})
    if (name == category_name(c)) {
      *out = c;
      return true;
    }
  return false;
}

// Reads one event; `where` is "file: traceEvents[12] (\"matmul\")" for messages.
class EventReader {
 public:
  EventReader(const Json& e, std::string where) : e_(e), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& why) const { throw Error(where_ + ": " + why); }
  bool has(const char* key) const { return e_.contains(key); }

  double number(const char* key) const {
    auto it = e_.find(key);
    if (it == e_.end()) fail(std::string("no \"") + key + "\"");
    if (!it->is_number()) fail(std::string("\"") + key + "\" is not a number");
    return it->get<double>();
  }
  int64_t integer(const char* key) const {
    auto it = e_.find(key);
    if (it == e_.end()) fail(std::string("no \"") + key + "\"");
    if (!it->is_number_integer()) fail(std::string("\"") + key + "\" is not an integer");
    return it->get<int64_t>();
  }
  std::string string(const char* key) const {
    auto it = e_.find(key);
    if (it == e_.end()) fail(std::string("no \"") + key + "\"");
    if (!it->is_string()) fail(std::string("\"") + key + "\" is not a string");
    return it->get<std::string>();
  }
  // args is optional; when present it must be an object.
  const Json* args() const {
    auto it = e_.find("args");
    if (it == e_.end()) return nullptr;
    if (!it->is_object()) fail("\"args\" is not an object");
    return &*it;
  }
  std::string arg_string(const char* key) const {
    const Json* a = args();
    if (!a || !a->contains(key)) return {};
    if (!(*a)[key].is_string()) fail(std::string("args.") + key + " is not a string");
    return (*a)[key].get<std::string>();
  }
  // A list of strings; empty when absent (traces written before the key existed).
  std::vector<std::string> arg_strings(const char* key) const {
    const Json* a = args();
    if (!a || !a->contains(key)) return {};
    const Json& list = (*a)[key];
    if (!list.is_array()) fail(std::string("args.") + key + " is not a list");
    std::vector<std::string> out;
    for (const Json& x : list) {
      if (!x.is_string()) fail(std::string("args.") + key + " holds something other than names");
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  double arg_number(const char* key, double fallback) const {
    const Json* a = args();
    if (!a || !a->contains(key)) return fallback;
    if (!(*a)[key].is_number()) fail(std::string("args.") + key + " is not a number");
    return (*a)[key].get<double>();
  }

 private:
  const Json& e_;
  std::string where_;
};

// Spans of one instruction name the same arrays in every step and on every device: they share one
// SpanArrays, as the executor's spans do.
class ArraysInterner {
 public:
  std::shared_ptr<const SpanArrays> get(SpanArrays a) {
    if (a.empty()) return nullptr;
    std::string key;
    for (const auto* list : {&a.reads, &a.writes}) {
      for (const std::string& n : *list) key += n + '\n';
      key += '\0';
    }
    auto& slot = seen_[key];
    if (!slot) slot = std::make_shared<const SpanArrays>(std::move(a));
    return slot;
  }

 private:
  std::map<std::string, std::shared_ptr<const SpanArrays>> seen_;
};

Span read_span(const EventReader& r, ArraysInterner& arrays) {
  Span s;
  s.name = r.string("name");
  if (!parse_category(r.string("cat"), &s.category)) r.fail("unknown category " + quoted(r.string("cat")));
  s.start_us = r.number("ts");
  if (!r.has("dur")) r.fail("an X (complete) event without \"dur\"");
  s.dur_us = r.number("dur");
  if (s.dur_us < 0) r.fail("negative \"dur\"");
  // Track 2d + 1 is device d's compute stream, 2d + 2 its data stream (Trace::to_chrome_json).
  const int64_t tid = r.integer("tid");
  if (tid < 1 || (tid - 1) / 2 >= kMaxDevices) r.fail("\"tid\" " + std::to_string(tid) + " is not a device track");
  s.device = int((tid - 1) / 2);
  const double step = r.arg_number("step", 0);
  // Range first: converting a double past int64's range is undefined.
  if (!(step >= 0 && step <= kMaxStep) || step != double(int64_t(step))) r.fail("args.step is not a step number");
  s.step = int64_t(step);
  s.node = r.arg_string("node");
  s.array = r.arg_string("array");
  s.arrays = arrays.get(SpanArrays{r.arg_strings("reads"), r.arg_strings("writes")});
  s.flops = r.arg_number("flops", 0);
  s.bytes = r.arg_number("bytes", 0);
  // Pipeline stages (written since they exist; absent elsewhere).
  s.stage = int64_t(std::clamp(r.arg_number("stage", -1), -1.0, double(kMaxDevices)));
  s.microbatch = int64_t(std::clamp(r.arg_number("microbatch", -1), -1.0, double(kMaxStep)));
  s.backward = r.arg_string("pass") == "backward";
  return s;
}

}  // namespace

TraceContents parse_chrome_trace(const std::string& json, const std::string& source) {
  util::check_json_depth(json, util::kDefaultJsonDepth, source);  // before nlohmann's recursion sees it
  Json root;
  try {
    root = Json::parse(json);
  } catch (const std::exception& e) {
    throw Error(source + ": not JSON (" + util::json_error_text(e) + ")");
  }
  if (!root.is_object() || !root.contains("traceEvents"))
    throw Error(source + ": not a Chrome trace: no \"traceEvents\"");
  const Json& events = root["traceEvents"];
  if (!events.is_array()) throw Error(source + ": \"traceEvents\" is not an array");

  TraceContents out;
  ArraysInterner arrays;
  // Memory counters are named "memory CPU <d>" or, from the CUDA backend, "memory GPU <d>".
  const std::string memory_prefixes[] = {"memory CPU ", "memory GPU "};
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    std::string where = source + ": traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object()) throw Error(where + ": not an object");
    if (e.contains("name") && e["name"].is_string()) where += " (" + quoted(e["name"].get<std::string>()) + ")";
    EventReader r(e, where);
    const std::string ph = r.string("ph");
    if (ph == "X") {
      out.spans.push_back(read_span(r, arrays));
    } else if (ph == "C") {
      // Other counters carry nothing this format writes.
      const std::string name = r.string("name");
      const auto prefix = std::find_if(std::begin(memory_prefixes), std::end(memory_prefixes),
                                       [&](const std::string& p) { return name.rfind(p, 0) == 0; });
      if (prefix == std::end(memory_prefixes)) continue;
      if (prefix != std::begin(memory_prefixes)) out.device_label = "GPU";
      const size_t skip = prefix->size();
      MemorySample m;
      try {
        size_t used = 0;
        m.device = std::stoi(name.substr(skip), &used);
        if (used != name.size() - skip || m.device < 0 || m.device >= kMaxDevices)
          throw std::invalid_argument(name);
      } catch (const std::exception&) {
        r.fail("counter " + quoted(name) + " names no device");
      }
      m.ts_us = r.number("ts");
      const Json* args = r.args();
      if (!args || !args->contains("live bytes")) r.fail("no args.\"live bytes\"");
      m.bytes = r.arg_number("live bytes", 0);
      out.memory.push_back(m);
    } else if (ph == "M") {
      if (r.string("name") == "process_name") out.process_name = r.arg_string("name");
    } else {
      r.fail("phase " + quoted(ph) + " is not supported (a shardlab trace has X spans, C counters and M metadata)");
    }
  }
  if (out.process_name.empty()) out.process_name = "shardlab";
  out.summaries = summarize_spans(out.spans);
  return out;
}

TraceContents read_chrome_trace(const std::string& path) {
  // A regular file of sane size (a FIFO or a device never blocks or streams forever here).
  return parse_chrome_trace(checkpoint::read_small_file(path, kMaxTraceBytes), path);
}

std::vector<StepSummary> summarize_spans(const std::vector<Span>& spans) {
  struct Acc {
    double compute = 0, collective = 0, optimizer = 0, data = 0, flops = 0;
    bool has_work = false, has_step = false, has_data = false;
    double step_dur = 0;
    double first = 1e300, last = -1e300;  // extent of its non-step spans, data included
    double work_first = 1e300, work_last = -1e300;  // extent without data
  };
  std::map<std::pair<int64_t, int>, Acc> acc;  // (step, device)
  std::map<int64_t, double> host_data;         // per step: the most any one device waited for data
  for (const Span& s : spans) {
    Acc& a = acc[{s.step, s.device}];
    const double end = s.start_us + s.dur_us;
    switch (s.category) {
      case Category::Step:
        a.has_step = true;
        a.step_dur += s.dur_us;
        continue;
      case Category::Data:
        a.data += s.dur_us;
        a.has_data = true;
        break;
      case Category::Compute: a.compute += s.dur_us; break;
      case Category::Collective: a.collective += s.dur_us; break;
      case Category::Optimizer: a.optimizer += s.dur_us; break;
    }
    a.first = std::min(a.first, s.start_us);
    a.last = std::max(a.last, end);
    if (s.category != Category::Data) {
      a.has_work = true;
      a.flops += s.flops;
      a.work_first = std::min(a.work_first, s.start_us);
      a.work_last = std::max(a.work_last, end);
    }
  }
  for (const auto& [key, a] : acc)
    if (a.has_data) host_data[key.first] = std::max(host_data[key.first], a.data);

  std::vector<StepSummary> out;
  for (const auto& [key, a] : acc) {
    if (!a.has_work && !a.has_step) continue;  // only the loader's wait: the device did not run this step traced
    StepSummary s;
    s.step = key.first;
    s.device = key.second;
    s.compute_us = a.compute;
    s.collective_us = a.collective;
    s.optimizer_us = a.optimizer;
    s.flops = a.flops;
    auto hd = host_data.find(key.first);
    s.data_us = a.has_data ? a.data : (hd != host_data.end() ? hd->second : 0.0);
    if (a.has_step)
      s.wall_us = a.step_dur + s.data_us;
    else if (a.has_data)
      s.wall_us = a.last - a.first;
    else
      s.wall_us = (a.work_last - a.work_first) + s.data_us;
    out.push_back(s);
  }
  return out;  // std::map order: (step, device)
}

std::shared_ptr<Trace> make_trace(const TraceContents& contents) {
  // Keep every step: the ring must span the oldest to the newest step in the file.
  int64_t lo = 0, hi = 0;
  if (!contents.spans.empty()) {
    auto [mn, mx] = std::minmax_element(contents.spans.begin(), contents.spans.end(),
                                        [](const Span& a, const Span& b) { return a.step < b.step; });
    lo = mn->step;
    hi = mx->step;
  }
  const int64_t keep = std::min<int64_t>(INT_MAX, hi - lo + 1);
  auto trace = std::make_shared<Trace>(Trace::Mode::Detailed, int(keep));
  trace->set_device_label(contents.device_label);
  for (const Span& s : contents.spans) trace->add(s);
  for (const MemorySample& m : contents.memory) trace->add(m);
  for (const StepSummary& s : contents.summaries) trace->add(s);
  return trace;
}

}  // namespace shardlab::profiler
