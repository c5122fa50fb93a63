// Where each step's time went: one stacked bar per step (compute, collective, optimizer, data
// wait, idle) for one device or the mean over devices, painted with QPainter, with a headline of
// the mean step time, the achieved FLOP/s and the MFU against a given peak. Long runs fold
// neighbouring steps into one bar (their mean) so a bar is never thinner than a few pixels.
#pragma once

#include <QWidget>
#include <array>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class StepBreakdownChart : public QWidget {
  Q_OBJECT

 public:
  // One step (or, when drawn, a run of steps) as a bar shows it: the parts in trace_style::Part
  // order (compute, collective, optimizer, data, idle), all in microseconds.
  struct Entry {
    int64_t firstStep = 0, lastStep = 0;  // Span::step numbering (0-based)
    std::array<double, 5> parts{};
    double wallUs = 0, flops = 0;
  };

  explicit StepBreakdownChart(QWidget* parent = nullptr);

  void setTitle(const QString& title);
  QString title() const { return title_; }
  void setSummaries(const std::vector<profiler::StepSummary>& summaries);
  // -1: the mean over devices (the default); a device not in the summaries shows no bars.
  void setDevice(int device);
  int device() const { return device_; }
  // What the headline calls a device: "CPU" (the default) or "GPU".
  void setDeviceLabel(const QString& label);
  std::vector<int> devices() const { return devices_; }
  // The machine's peak FLOP/s (0: unknown, MFU left blank). Virtual devices share it: each one's
  // share is peak / devices, as `shardlab-cli profile` measures.
  void setPeakFlops(double peak);
  double peakFlops() const { return peak_; }
  // The y axis reaches at least this many microseconds (two charts side by side share a scale).
  void setMinimumScaleUs(double us);
  double tallestUs() const;

  // Per step, for the chosen device or the mean.
  int stepCount() const { return int(entries_.size()); }
  const Entry& entry(int i) const { return entries_[size_t(i)]; }
  // Over the steps shown, leaving out the first (warm-up) when there are more.
  double meanStepUs() const;
  double achievedFlops() const;  // per device, FLOP/s; 0 without FLOPs
  double mfu() const;            // fraction of the device's share of the peak; NaN without a peak
  QString headline() const;
  // The bar under a position (-1: none) and what hovering it shows.
  int barAt(const QPoint& pos) const;
  QString barDetails(int bar) const;
  int barCount() const;

  QSize sizeHint() const override { return {640, 260}; }
  QSize minimumSizeHint() const override { return {280, 160}; }

 protected:
  void paintEvent(QPaintEvent* e) override;
  bool event(QEvent* e) override;

 private:
  void rebuild();
  QRect plotRect() const;
  int stepsPerBar() const;
  Entry barEntry(int bar) const;
  double scaleUs() const;

  QString title_;
  std::vector<profiler::StepSummary> summaries_;
  QString deviceLabel_ = QStringLiteral("CPU");
  std::vector<int> devices_;
  std::vector<Entry> entries_;
  int device_ = -1;
  double peak_ = 0;
  double minScaleUs_ = 0;
};

}  // namespace shardlab::ui
