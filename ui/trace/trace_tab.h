// The Trace tab: a training run's step trace as a timeline (lanes per device, spans per primitive
// and collective, zoom, pan, hover, live follow), its step-time breakdown with achieved FLOP/s and
// MFU, and a comparison with a baseline run (the run shown before, or a trace file). It follows a
// live trace the trainer records into by polling it on a timer while visible, opens saved Chrome
// trace files and exports the shown run in the same format. Clicking a span selects its layer in
// the graph and shows what it did in the span panel beside the timeline (device, primitive, layer,
// times, the arrays it read and wrote); an array there opens in the Sharding tab when clicked.
// Selecting layers highlights their spans.
#pragma once

#include <QString>
#include <QTimer>
#include <QWidget>
#include <memory>
#include <optional>

#include "engine/api/engine.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QSpinBox;
class QTabWidget;
class QToolButton;

namespace shardlab::ui {

class ProjectDocument;
class RunComparison;
class StepBreakdownChart;
class TimelineView;
class TraceRun;

class TraceTab : public QWidget {
  Q_OBJECT

 public:
  explicit TraceTab(ProjectDocument* doc, QWidget* parent = nullptr);
  ~TraceTab() override;

  // Follow a run's trace while it records (polls it on a timer while visible; live mode keeps the
  // newest step in view); `label` names the run ("run 3: data=2,model=4"). The run shown before
  // becomes the baseline. `peakFlops`: the machine's peak FLOP/s for MFU (0: unknown).
  void followRun(std::shared_ptr<shardlab::profiler::Trace> trace, const QString& label, double peakFlops);
  void runFinished();  // stop polling; keep the data
  // A trace file written by Trace::write_chrome_json becomes the shown run (the one before it the
  // baseline); false, with the reason shown and logged, when it cannot be read.
  bool openTraceFile(const QString& path);
  // Writes the shown run as Chrome trace JSON (Perfetto opens it); false with the reason on failure.
  bool exportTrace(const QString& path);
  TimelineView* timeline() const { return timeline_; }

  // A trace file as the baseline, keeping the shown run.
  bool openBaselineFile(const QString& path);
  // The baseline becomes the shown run and the other way round.
  void swapRuns();
  // Polls the followed trace now (the timer does this while the tab is visible).
  void refresh();

  StepBreakdownChart* breakdown() const { return breakdown_; }
  RunComparison* comparison() const { return comparison_; }
  QTabWidget* views() const { return views_; }
  // The span panel: what the clicked span did, and the arrays it touched that the Sharding tab has
  // (clicking one opens it there).
  QLabel* spanFacts() const { return spanFacts_; }
  QListWidget* spanArrays() const { return spanArrays_; }
  QComboBox* deviceCombo() const { return device_; }
  QDoubleSpinBox* peakSpin() const { return peak_; }
  QString currentLabel() const;
  // What the shown run calls its devices: "CPU" (virtual devices, and with no run) or "GPU".
  QString deviceLabel() const;
  QString baselineLabel() const;
  bool isFollowing() const;
  // The last error shown ("" after a success).
  QString lastError() const { return lastError_; }

 signals:
  // A span of layer `node` ("blocks/W1", possibly inside a collapsed Repeat) was clicked; the
  // document's selection is already that node. The canvas brings it into view.
  void spanActivated(const QString& node);

 protected:
  void showEvent(QShowEvent* e) override;
  void hideEvent(QHideEvent* e) override;

 private:
  void showRun(bool newRun);
  void updateStatus();
  void updateDevices();
  void updateStepRange();
  void updateComparison();
  void onSpanClicked(int index);
  void showSpanDetails();
  void openFileDialog();
  void openBaselineDialog();
  void exportDialog();
  void showError(const QString& text);
  void clearError();
  void setPolling(bool on);

  ProjectDocument* doc_ = nullptr;
  std::unique_ptr<TraceRun> current_, baseline_;
  QTimer poll_;
  bool comparisonStale_ = true;
  QString lastError_;

  std::optional<profiler::Span> picked_;  // the span the panel shows (a copy: live refreshes replace the spans)
  QLabel* spanFacts_ = nullptr;
  QListWidget* spanArrays_ = nullptr;
  QLabel* runLabel_ = nullptr;
  QLabel* error_ = nullptr;
  QToolButton* live_ = nullptr;
  QSpinBox* step_ = nullptr;
  TimelineView* timeline_ = nullptr;
  QTabWidget* views_ = nullptr;
  StepBreakdownChart* breakdown_ = nullptr;
  QComboBox* device_ = nullptr;
  QDoubleSpinBox* peak_ = nullptr;
  RunComparison* comparison_ = nullptr;
};

}  // namespace shardlab::ui
