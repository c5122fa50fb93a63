#include "ui/trace/trace_run.h"

#include <QFileInfo>
#include <algorithm>

// Not yet in the engine.h umbrella: the trace file reader is the profiler's, Qt-free like the rest.

namespace shardlab::ui {

namespace {

bool sameSpan(const profiler::Span& a, const profiler::Span& b) {
  return a.device == b.device && a.start_us == b.start_us && a.dur_us == b.dur_us && a.step == b.step &&
         a.category == b.category;
}

}  // namespace

TraceRun::TraceRun(std::shared_ptr<profiler::Trace> trace, QString label, double peakFlops, bool live, std::string processName)
    : trace_(std::move(trace)),
      label_(std::move(label)),
      peakFlops_(peakFlops),
      live_(live),
      processName_(std::move(processName)),
      spans_(std::make_shared<const std::vector<profiler::Span>>()) {
  refresh();
}

std::unique_ptr<TraceRun> TraceRun::fromFile(const QString& path) {
  const profiler::TraceContents c = profiler::read_chrome_trace(path.toStdString());
  if (c.spans.empty())
    throw Error(path.toStdString() + ": holds no spans (a trace recorded in light mode keeps only step totals)");
  return std::make_unique<TraceRun>(profiler::make_trace(c), QFileInfo(path).fileName(), 0.0, false, c.process_name);
}

bool TraceRun::refresh() {
  std::vector<profiler::Span> spans = trace_->spans();
  std::vector<profiler::StepSummary> summaries = trace_->summaries();
  // The trace only grows at its end and drops whole steps at its front, so its ends and size tell.
  const auto& old = *spans_;
  const bool spansSame = spans.size() == old.size() &&
                         (spans.empty() || (sameSpan(spans.front(), old.front()) && sameSpan(spans.back(), old.back())));
  if (spansSame && summaries.size() == traceSummaryCount_) return false;
  traceSummaryCount_ = summaries.size();
  if (summaries.empty() && !spans.empty()) summaries = profiler::summarize_spans(spans);
  int devices = 0;
  for (const auto& s : spans) devices = std::max(devices, s.device + 1);
  for (const auto& s : summaries) devices = std::max(devices, s.device + 1);
  devices_ = devices;
  summaries_ = std::move(summaries);
  spans_ = std::make_shared<const std::vector<profiler::Span>>(std::move(spans));
  return true;
}

}  // namespace shardlab::ui
