// One run as the Trace tab holds it: the trace (a live one the trainer records into, or one read
// from a file), its name, the peak FLOP/s its MFU is measured against, and the latest copy of its
// spans and step summaries that the views draw from (re-read on refresh(), so the views never
// touch the trace while the trainer writes it).
#pragma once

#include <QString>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class TraceRun {
 public:
  TraceRun(std::shared_ptr<profiler::Trace> trace, QString label, double peakFlops, bool live,
           std::string processName = "shardlab");
  // Reads a Chrome trace file written by Trace::to_chrome_json; throws shardlab::Error naming it.
  static std::unique_ptr<TraceRun> fromFile(const QString& path);

  // Copies the trace's spans and summaries again; true when something changed since the last time.
  bool refresh();

  QString label() const { return label_; }
  bool isLive() const { return live_; }
  void setLive(bool live) { live_ = live; }
  // 0: unknown (a file); MFU is then left blank.
  double peakFlops() const { return peakFlops_; }
  void setPeakFlops(double peak) { peakFlops_ = peak; }
  const std::shared_ptr<profiler::Trace>& trace() const { return trace_; }
  // What its devices are called: "CPU" (virtual devices) or "GPU", as the trace says.
  QString deviceLabel() const { return QString::fromStdString(trace_->device_label()); }

  // Every span of the latest copy, step spans included; shared with the timeline, never changed.
  std::shared_ptr<const std::vector<profiler::Span>> spans() const { return spans_; }
  // The trace's own summaries; for a trace that has spans but none (a synthetic one), derived from them.
  const std::vector<profiler::StepSummary>& summaries() const { return summaries_; }
  int deviceCount() const { return devices_; }
  // The trace as Chrome trace JSON, under the process name it was read with.
  std::string chromeJson() const { return trace_->to_chrome_json(processName_); }

 private:
  std::shared_ptr<profiler::Trace> trace_;
  QString label_;
  double peakFlops_ = 0;
  bool live_ = false;
  std::string processName_;
  std::shared_ptr<const std::vector<profiler::Span>> spans_;
  std::vector<profiler::StepSummary> summaries_;
  size_t traceSummaryCount_ = 0;  // how many summaries the trace itself had at the last refresh
  int devices_ = 0;
};

}  // namespace shardlab::ui
