// The trace timeline: one lane per device (more where a device's spans overlap, e.g. a data stream
// beside compute), spans coloured by category, step markers, a time ruler; zoom (Ctrl+wheel, +/-,
// zoomToStep), pan (drag, wheel, arrow keys, the scroll bar), hover details, a live mode that keeps
// the newest step in view, and a highlight of the spans of the layers selected in the graph.
//
// Built for 100k+ spans: each lane keeps its spans sorted by start (a lane's spans never overlap,
// so their ends are sorted too); painting binary-searches the visible range and draws spans
// narrower than a pixel as one mark per pixel column (coloured by the category that fills most of
// it), so a repaint costs about the number of pixels, not of spans.
#pragma once

#include <QAbstractScrollArea>
#include <QStringList>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/engine.h"

class QPainter;

namespace shardlab::ui {

class TimelineView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  static constexpr int kRulerHeight = 36;  // tick labels, then step labels
  static constexpr int kLaneHeight = 22;
  static constexpr int kLaneGap = 3;
  static constexpr int kLabelWidth = 104;  // the lane names' column

  explicit TimelineView(QWidget* parent = nullptr);

  // Replaces what is shown; step spans (category Step) become step markers rather than bars. The
  // view keeps its range, except in live mode (it moves to the newest step) or when it showed
  // nothing before (it then shows everything).
  void setSpans(std::shared_ptr<const std::vector<profiler::Span>> spans);
  void clear();

  int laneCount() const { return int(lanes_.size()); }
  QString laneName(int lane) const;
  int laneDevice(int lane) const;
  // Spans drawn in lanes (all but step spans); indices below are into the vector given to setSpans.
  int spanCount() const { return drawn_; }
  const profiler::Span& span(int index) const { return (*spans_)[size_t(index)]; }
  // The trace's step numbers (Span::step, 0-based; shown 1-based as "step N"), in order.
  std::vector<int64_t> steps() const;
  double traceStartUs() const { return traceStart_; }
  double traceEndUs() const { return traceEnd_; }

  // The ruler's ticks over the visible range: each one's time from the trace's start (us) and its
  // label, as drawn.
  std::vector<std::pair<double, QString>> rulerTicks() const;
  // The visible time range (trace microseconds).
  double viewStartUs() const { return viewStart_; }
  double viewEndUs() const { return viewEnd_; }
  void setVisibleRange(double startUs, double endUs);
  // factor > 1 zooms in, keeping the time under viewport x `anchorX` where it is.
  void zoomBy(double factor, double anchorX);
  void zoomIn() { zoomBy(1.5, plotCenterX()); }
  void zoomOut() { zoomBy(1 / 1.5, plotCenterX()); }
  // Shows one step whole (its data wait included); false when the trace has no such step.
  bool zoomToStep(int64_t step);
  void fitAll();

  // What lanes and tooltips call a device ("CPU", the default, or "GPU"); the next setSpans() names
  // the lanes with it.
  void setDeviceLabel(const QString& label) { deviceLabel_ = label; }
  // Live: every setSpans() brings the newest step into view. Navigating by hand leaves live mode.
  void setLive(bool live);
  bool isLive() const { return live_; }

  // Spans of these nodes (and of nodes inside them: "blocks" covers "blocks/W1") are drawn fully,
  // the others dimmed; an empty list dims nothing.
  void setHighlightedNodes(const QStringList& nodes);
  // How many drawn spans the highlight covers (0 without one).
  int highlightedCount() const { return highlighted_; }

  // The span under a viewport position (nearest within a few pixels), or -1.
  int spanAt(const QPoint& viewportPos) const;
  // Where a span is drawn now, in viewport coordinates (at least a pixel wide); empty for step spans.
  QRectF spanRect(int index) const;
  // What hovering over a span shows: name, category, layer, arrays, step, device, times, FLOPs or bytes.
  QString spanDetails(int index) const;
  // Which of a span's arrays the details name (the Trace tab gives those the project has); without
  // one they name none, since a trace's own names need not be arrays anyone can open.
  void setArraysOf(std::function<QStringList(const profiler::Span&)> arraysOf) { arraysOf_ = std::move(arraysOf); }
  // The span clicked last (-1: none), outlined.
  int selectedSpan() const { return selected_; }
  // How long the last paint took, in milliseconds.
  double lastPaintMs() const { return lastPaintMs_; }

 signals:
  void spanClicked(int index);
  void liveChanged(bool live);
  void visibleRangeChanged(double startUs, double endUs);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  bool viewportEvent(QEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  struct Item {  // a span as its lane keeps it: contiguous for the paint loop
    double start, end;
    int index;
    int part;  // trace_style::Part
  };
  struct Lane {
    int device = 0, stream = 0;
    QString name;
    std::vector<Item> items;  // by start; ends ascend too (a lane's spans do not overlap)
  };
  struct StepRange {
    int64_t step;
    double start, end;
  };

  void buildLanes();
  void recomputeHighlight();
  void showNewest();
  void userNavigated();
  void updateScrollBars();
  void clampView();
  int plotWidth() const;
  double plotCenterX() const { return kLabelWidth + plotWidth() / 2.0; }
  double xOf(double us) const;
  int laneTop(int lane) const;
  int laneAtY(int y) const;
  // First item of a lane whose end reaches `us` (binary search).
  size_t firstEndingAfter(const Lane& lane, double us) const;
  int findSpan(int device, double start, profiler::Category c) const;

  void paintLanes(QPainter& p);
  void paintRuler(QPainter& p);
  void paintLabels(QPainter& p);

  std::shared_ptr<const std::vector<profiler::Span>> spans_;
  QString deviceLabel_ = QStringLiteral("CPU");
  std::vector<Lane> lanes_;
  std::vector<int> laneOf_;  // per span index: its lane, -1 for step spans
  std::vector<StepRange> stepRanges_;  // by step number
  std::vector<std::pair<double, int64_t>> markers_;  // (start, step), by start
  int drawn_ = 0;
  double traceStart_ = 0, traceEnd_ = 0;

  double viewStart_ = 0, viewEnd_ = 1;
  bool live_ = false;
  bool syncingScrollBars_ = false;

  std::vector<std::string> highlightNodes_;
  std::vector<char> isHighlighted_;  // per span index
  int highlighted_ = 0;

  std::function<QStringList(const profiler::Span&)> arraysOf_;
  int selected_ = -1, hover_ = -1;
  QPoint pressPos_;
  double pressViewStart_ = 0;
  int pressVScroll_ = 0;
  bool pressed_ = false, dragging_ = false;
  double lastPaintMs_ = 0;
};

}  // namespace shardlab::ui
