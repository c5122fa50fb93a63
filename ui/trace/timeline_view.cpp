#include "ui/trace/timeline_view.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>

#include "ui/trace/trace_style.h"

namespace shardlab::ui {

namespace {

// A ruler's label for time t (us) with ticks `tick` us apart: in t's unit, with as many decimals
// as the ticks need to differ ("263.2 ms", "263.4 ms" where durationText would say "263 ms" twice).
QString tickText(double t, double tick) {
  const double a = std::abs(t);
  const double unit = a < 1e3 ? 1 : a < 1e6 ? 1e3 : 1e6;
  const QString name = a < 1e3 ? QStringLiteral("µs") : a < 1e6 ? QStringLiteral("ms") : QStringLiteral("s");
  const int decimals = std::clamp(int(std::ceil(-std::log10(tick / unit) - 1e-9)), 0, 6);
  return QStringLiteral("%1 %2").arg(t / unit, 0, 'f', decimals).arg(name);
}

using trace_style::kPartCount;
using trace_style::Part;

// Spans of one device that overlap by less than this (clock jitter between the loader's and the
// executor's timers) still share a lane.
constexpr double kOverlapToleranceUs = 0.5;
// The horizontal scroll bar's resolution: its value is a fraction of the scrollable time.
constexpr int kScrollSteps = 100000;
// Narrowest view: a tenth of a nanosecond per pixel.
constexpr double kMinUsPerPx = 1e-4;

bool underNode(const std::string& node, const std::string& sel) {
  return node == sel || (node.size() > sel.size() && node.compare(0, sel.size(), sel) == 0 && node[sel.size()] == '/');
}

// 1, 2 or 5 times a power of ten, at least `x`.
double niceAtLeast(double x) {
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= x) return m * p;
  return 10 * p;
}

QColor dimmed(QColor c, const QColor& base) {
  // A quarter of the colour over the background: still tells categories apart, clearly not the selection.
  return QColor::fromRgbF(0.25f * c.redF() + 0.75f * base.redF(), 0.25f * c.greenF() + 0.75f * base.greenF(),
                          0.25f * c.blueF() + 0.75f * base.blueF());
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QAbstractScrollArea(parent) {
  setFocusPolicy(Qt::StrongFocus);
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  setMinimumHeight(kRulerHeight + 2 * (kLaneHeight + kLaneGap) + 20);
  setToolTip({});
  spans_ = std::make_shared<const std::vector<profiler::Span>>();
  setAccessibleName(tr("Trace timeline"));
}

void TimelineView::clear() {
  setSpans(std::make_shared<const std::vector<profiler::Span>>());
}

void TimelineView::setSpans(std::shared_ptr<const std::vector<profiler::Span>> spans) {
  const bool wasEmpty = drawn_ == 0;
  // Keep the selection across a live refresh: the same span is found again by where it is.
  int selDevice = -1;
  double selStart = 0;
  profiler::Category selCat = profiler::Category::Compute;
  if (selected_ >= 0) {
    const auto& s = span(selected_);
    selDevice = s.device, selStart = s.start_us, selCat = s.category;
  }
  spans_ = spans ? std::move(spans) : std::make_shared<const std::vector<profiler::Span>>();
  buildLanes();
  recomputeHighlight();
  hover_ = -1;
  selected_ = selDevice >= 0 ? findSpan(selDevice, selStart, selCat) : -1;
  if (live_)
    showNewest();
  else if (wasEmpty)
    fitAll();
  else
    clampView();
  updateScrollBars();
  viewport()->update();
}

void TimelineView::buildLanes() {
  const auto& spans = *spans_;
  lanes_.clear();
  laneOf_.assign(spans.size(), -1);
  stepRanges_.clear();
  markers_.clear();
  drawn_ = 0;
  traceStart_ = 0, traceEnd_ = 0;
  if (spans.empty()) return;

  std::vector<int> order;
  order.reserve(spans.size());
  std::map<int64_t, std::pair<double, double>> steps;
  traceStart_ = 1e300, traceEnd_ = -1e300;
  for (size_t i = 0; i < spans.size(); ++i) {
    const auto& s = spans[i];
    const double end = s.start_us + std::max(0.0, s.dur_us);
    traceStart_ = std::min(traceStart_, s.start_us);
    traceEnd_ = std::max(traceEnd_, end);
    auto [it, fresh] = steps.try_emplace(s.step, s.start_us, end);
    if (!fresh) it->second = {std::min(it->second.first, s.start_us), std::max(it->second.second, end)};
    if (s.category != profiler::Category::Step) order.push_back(int(i));
  }
  drawn_ = int(order.size());
  for (const auto& [step, range] : steps) {
    stepRanges_.push_back({step, range.first, range.second});
    markers_.emplace_back(range.first, step);
  }
  std::sort(markers_.begin(), markers_.end());

  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const auto &x = spans[size_t(a)], &y = spans[size_t(b)];
    if (x.device != y.device) return x.device < y.device;
    if (x.start_us != y.start_us) return x.start_us < y.start_us;
    return x.dur_us > y.dur_us;  // an enclosing span before what it encloses
  });
  // Per device, first-fit by start: a span goes to the first stream free by its start (optimal
  // for intervals), so a device gets a second lane only where its spans really overlap.
  size_t i = 0;
  while (i < order.size()) {
    const int device = spans[size_t(order[i])].device;
    std::vector<double> streamEnds;
    std::vector<std::vector<Item>> streams;
    for (; i < order.size() && spans[size_t(order[i])].device == device; ++i) {
      const int idx = order[i];
      const auto& s = spans[size_t(idx)];
      const Item item{s.start_us, s.start_us + std::max(0.0, s.dur_us), idx, int(trace_style::partOf(s.category))};
      size_t k = 0;
      while (k < streamEnds.size() && streamEnds[k] > item.start + kOverlapToleranceUs) ++k;
      if (k == streamEnds.size()) {
        streamEnds.push_back(item.end);
        streams.emplace_back();
      }
      streamEnds[k] = std::max(streamEnds[k], item.end);
      streams[k].push_back(item);
    }
    for (size_t k = 0; k < streams.size(); ++k) {
      Lane lane;
      lane.device = device;
      lane.stream = int(k);
      const bool allData = std::all_of(streams[k].begin(), streams[k].end(),
                                       [](const Item& it) { return it.part == int(Part::Data); });
      const QString name = tr("%1 %2").arg(deviceLabel_).arg(device);
      lane.name = k == 0 ? name : allData ? tr("%1 data").arg(name) : tr("%1 #%2").arg(name).arg(k + 1);
      // Within a stream ends can only fall back by the tolerance; make them monotone for the search.
      for (size_t j = 1; j < streams[k].size(); ++j) streams[k][j].end = std::max(streams[k][j].end, streams[k][j - 1].end);
      for (const Item& it : streams[k]) laneOf_[size_t(it.index)] = int(lanes_.size());
      lane.items = std::move(streams[k]);
      lanes_.push_back(std::move(lane));
    }
  }
}

QString TimelineView::laneName(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[size_t(lane)].name : QString();
}

int TimelineView::laneDevice(int lane) const { return lane >= 0 && lane < laneCount() ? lanes_[size_t(lane)].device : -1; }

std::vector<int64_t> TimelineView::steps() const {
  std::vector<int64_t> out;
  for (const auto& r : stepRanges_) out.push_back(r.step);
  return out;
}

int TimelineView::findSpan(int device, double start, profiler::Category c) const {
  for (const Lane& lane : lanes_) {
    if (lane.device != device) continue;
    auto it = std::lower_bound(lane.items.begin(), lane.items.end(), start, [](const Item& a, double t) { return a.start < t; });
    for (; it != lane.items.end() && it->start == start; ++it)
      if (span(it->index).category == c) return it->index;
  }
  return -1;
}

// --- highlight ---

void TimelineView::setHighlightedNodes(const QStringList& nodes) {
  highlightNodes_.clear();
  for (const QString& n : nodes)
    if (!n.isEmpty()) highlightNodes_.push_back(n.toStdString());
  recomputeHighlight();
  viewport()->update();
}

void TimelineView::recomputeHighlight() {
  const auto& spans = *spans_;
  isHighlighted_.assign(spans.size(), 0);
  highlighted_ = 0;
  if (highlightNodes_.empty()) return;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].category == profiler::Category::Step || spans[i].node.empty()) continue;
    for (const auto& sel : highlightNodes_)
      if (underNode(spans[i].node, sel)) {
        isHighlighted_[i] = 1;
        ++highlighted_;
        break;
      }
  }
}

// --- the view range ---

int TimelineView::plotWidth() const { return std::max(1, viewport()->width() - kLabelWidth); }

double TimelineView::xOf(double us) const {
  return kLabelWidth + (us - viewStart_) * double(plotWidth()) / (viewEnd_ - viewStart_);
}

void TimelineView::clampView() {
  double width = viewEnd_ - viewStart_;
  const double total = std::max(traceEnd_ - traceStart_, 1.0);
  width = std::clamp(width, kMinUsPerPx * plotWidth(), total * 1.5);
  // Something of the trace stays on screen: at most half the view lies before its start or after its end.
  double start = std::clamp(viewStart_, traceStart_ - width / 2, std::max(traceStart_ - width / 2, traceEnd_ - width / 2));
  viewStart_ = start;
  viewEnd_ = start + width;
}

void TimelineView::setVisibleRange(double startUs, double endUs) {
  if (!(endUs > startUs) || !std::isfinite(startUs) || !std::isfinite(endUs)) return;
  const double oldStart = viewStart_, oldEnd = viewEnd_;
  viewStart_ = startUs;
  viewEnd_ = endUs;
  clampView();
  updateScrollBars();
  viewport()->update();
  if (viewStart_ != oldStart || viewEnd_ != oldEnd) emit visibleRangeChanged(viewStart_, viewEnd_);
}

void TimelineView::zoomBy(double factor, double anchorX) {
  if (!(factor > 0)) return;
  userNavigated();
  const double anchor = viewStart_ + (anchorX - kLabelWidth) * (viewEnd_ - viewStart_) / plotWidth();
  const double width = (viewEnd_ - viewStart_) / factor;
  const double frac = std::clamp((anchorX - kLabelWidth) / plotWidth(), 0.0, 1.0);
  setVisibleRange(anchor - frac * width, anchor - frac * width + width);
}

bool TimelineView::zoomToStep(int64_t step) {
  auto it = std::find_if(stepRanges_.begin(), stepRanges_.end(), [&](const StepRange& r) { return r.step == step; });
  if (it == stepRanges_.end()) return false;
  userNavigated();
  const double pad = std::max(0.02 * (it->end - it->start), 0.01);
  setVisibleRange(it->start - pad, it->end + pad);
  return true;
}

void TimelineView::fitAll() {
  if (drawn_ == 0 && stepRanges_.empty()) {
    viewStart_ = 0, viewEnd_ = 1;
    updateScrollBars();
    viewport()->update();
    return;
  }
  const double pad = std::max(0.01 * (traceEnd_ - traceStart_), 0.01);
  setVisibleRange(traceStart_ - pad, traceEnd_ + pad);
}

void TimelineView::showNewest() {
  if (stepRanges_.empty()) return;
  const StepRange& newest = stepRanges_.back();
  // A step that has just begun would be a sliver: show at least as long as the step before it took.
  double end = std::max(traceEnd_, newest.end);
  if (stepRanges_.size() >= 2) {
    const StepRange& prev = stepRanges_[stepRanges_.size() - 2];
    end = std::max(end, newest.start + (prev.end - prev.start));
  }
  const double pad = std::max(0.02 * (end - newest.start), 0.01);
  setVisibleRange(newest.start - pad, end + pad);
}

void TimelineView::setLive(bool live) {
  if (live == live_) return;
  live_ = live;
  if (live_) showNewest();
  emit liveChanged(live_);
}

void TimelineView::userNavigated() { setLive(false); }

void TimelineView::updateScrollBars() {
  syncingScrollBars_ = true;
  QScrollBar* h = horizontalScrollBar();
  const double total = traceEnd_ - traceStart_, visible = viewEnd_ - viewStart_;
  if (drawn_ == 0 || visible >= total) {
    h->setRange(0, 0);
  } else {
    h->setRange(0, kScrollSteps);
    h->setPageStep(int(std::clamp(kScrollSteps * visible / (total - visible), 1.0, 1e9)));
    h->setSingleStep(std::max(1, h->pageStep() / 10));
    h->setValue(int(std::lround(std::clamp((viewStart_ - traceStart_) / (total - visible), 0.0, 1.0) * kScrollSteps)));
  }
  QScrollBar* v = verticalScrollBar();
  const int lanesHeight = laneCount() * (kLaneHeight + kLaneGap) + kLaneGap;
  const int room = std::max(0, viewport()->height() - kRulerHeight);
  v->setRange(0, std::max(0, lanesHeight - room));
  v->setPageStep(std::max(1, room));
  v->setSingleStep(kLaneHeight + kLaneGap);
  syncingScrollBars_ = false;
}

void TimelineView::scrollContentsBy(int dx, int /*dy*/) {
  if (!syncingScrollBars_ && dx != 0) {
    // The user moved the horizontal scroll bar: its value is where the view starts.
    userNavigated();
    const double total = traceEnd_ - traceStart_, visible = viewEnd_ - viewStart_;
    const double start = traceStart_ + double(horizontalScrollBar()->value()) / kScrollSteps * std::max(0.0, total - visible);
    viewStart_ = start;
    viewEnd_ = start + visible;
    emit visibleRangeChanged(viewStart_, viewEnd_);
  }
  viewport()->update();
}

void TimelineView::resizeEvent(QResizeEvent* e) {
  QAbstractScrollArea::resizeEvent(e);
  clampView();
  updateScrollBars();
}

// --- geometry ---

int TimelineView::laneTop(int lane) const {
  return kRulerHeight + kLaneGap + lane * (kLaneHeight + kLaneGap) - verticalScrollBar()->value();
}

int TimelineView::laneAtY(int y) const {
  if (y < kRulerHeight) return -1;
  const int row = y - kRulerHeight + verticalScrollBar()->value();
  const int lane = row / (kLaneHeight + kLaneGap);
  return lane < laneCount() ? lane : -1;
}

size_t TimelineView::firstEndingAfter(const Lane& lane, double us) const {
  return size_t(std::lower_bound(lane.items.begin(), lane.items.end(), us, [](const Item& a, double t) { return a.end < t; }) -
                lane.items.begin());
}

int TimelineView::spanAt(const QPoint& pos) const {
  if (pos.x() < kLabelWidth) return -1;
  const int l = laneAtY(pos.y());
  if (l < 0) return -1;
  const Lane& lane = lanes_[size_t(l)];
  const double usPerPx = (viewEnd_ - viewStart_) / plotWidth();
  const double t = viewStart_ + (pos.x() - kLabelWidth) * usPerPx;
  const double tol = 3 * usPerPx;
  int best = -1;
  double bestDist = 1e300;
  for (size_t k = firstEndingAfter(lane, t - tol); k < lane.items.size() && lane.items[k].start <= t + tol; ++k) {
    const Item& it = lane.items[k];
    const double dist = t < it.start ? it.start - t : t > it.end ? t - it.end : 0.0;
    if (dist < bestDist) {
      bestDist = dist;
      best = it.index;
    }
    if (dist == 0) break;
  }
  return best;
}

QRectF TimelineView::spanRect(int index) const {
  if (index < 0 || size_t(index) >= laneOf_.size() || laneOf_[size_t(index)] < 0) return {};
  const auto& s = span(index);
  const double x0 = xOf(s.start_us), x1 = std::max(xOf(s.start_us + s.dur_us), x0 + 1);
  return QRectF(x0, laneTop(laneOf_[size_t(index)]), x1 - x0, kLaneHeight);
}

QString TimelineView::spanDetails(int index) const {
  if (index < 0 || size_t(index) >= spans_->size()) return {};
  const auto& s = span(index);
  QStringList lines;
  lines << QStringLiteral("<b>%1</b> — %2").arg(QString::fromStdString(s.name).toHtmlEscaped(),
                                                   trace_style::partLabel(trace_style::partOf(s.category)));
  if (!s.node.empty()) lines << tr("layer: %1").arg(QString::fromStdString(s.node).toHtmlEscaped());
  const QStringList arrays = arraysOf_ ? arraysOf_(s) : QStringList();
  if (!arrays.isEmpty()) lines << (arrays.size() == 1 ? tr("array: %1") : tr("arrays: %1")).arg(arrays.join(QStringLiteral(", ")).toHtmlEscaped());
  lines << tr("step %1 · %2 %3").arg(s.step + 1).arg(deviceLabel_).arg(s.device);
  lines << tr("duration %1, at %2").arg(trace_style::durationText(s.dur_us), trace_style::durationText(s.start_us - traceStart_));
  if (s.flops > 0) lines << tr("%1 (%2)").arg(trace_style::flopsText(s.flops), trace_style::rateText(s.flops / std::max(s.dur_us * 1e-6, 1e-12)));
  if (s.bytes > 0) lines << tr("%1 moved").arg(trace_style::bytesText(s.bytes));
  return lines.join(QStringLiteral("<br>"));
}

// --- painting ---

void TimelineView::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  QPainter p(viewport());
  p.fillRect(viewport()->rect(), palette().base());
  if (drawn_ == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(viewport()->rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("No spans to show. Train with a detailed trace (the Training tab), or open a trace file."));
    paintRuler(p);
    lastPaintMs_ = double(timer.nsecsElapsed()) / 1e6;
    return;
  }
  paintLanes(p);
  paintRuler(p);
  paintLabels(p);
  lastPaintMs_ = double(timer.nsecsElapsed()) / 1e6;
}

void TimelineView::paintLanes(QPainter& p) {
  const QColor base = palette().color(QPalette::Base);
  const QColor stripe = palette().color(QPalette::AlternateBase);
  const int w = plotWidth();
  const double pxPerUs = double(w) / (viewEnd_ - viewStart_);
  const bool dimming = !highlightNodes_.empty();
  p.save();
  p.setClipRect(QRect(kLabelWidth, kRulerHeight, w, viewport()->height() - kRulerHeight));

  // Batches by part and dim state: a few drawRects calls instead of one fill per span.
  std::array<QVector<QRectF>, 2 * kPartCount> narrow, wide;
  struct Label {
    QRectF rect;
    int index;
  };
  std::vector<Label> labels;
  for (int l = 0; l < laneCount(); ++l) {
    const int top = laneTop(l);
    if (top + kLaneHeight < kRulerHeight || top > viewport()->height()) continue;
    if (l % 2 == 1) p.fillRect(QRect(kLabelWidth, top - kLaneGap / 2, w, kLaneHeight + kLaneGap), stripe);
    const Lane& lane = lanes_[size_t(l)];
    // One pixel column of sub-pixel spans: the category that fills most of it wins.
    int col = INT_MIN;
    std::array<double, kPartCount> acc{};
    bool accLit = false;
    const auto flush = [&] {
      if (col == INT_MIN) return;
      const int part = int(std::max_element(acc.begin(), acc.end()) - acc.begin());
      narrow[size_t(2 * part + (dimming && !accLit))].push_back(QRectF(kLabelWidth + col, top, 1, kLaneHeight));
      col = INT_MIN;
      acc.fill(0);
      accLit = false;
    };
    for (size_t k = firstEndingAfter(lane, viewStart_); k < lane.items.size(); ++k) {
      const Item& it = lane.items[k];
      if (it.start > viewEnd_) break;
      const double x0 = (it.start - viewStart_) * pxPerUs, x1 = (it.end - viewStart_) * pxPerUs;
      const bool lit = isHighlighted_[size_t(it.index)] != 0;
      if (x1 - x0 < 1.0) {
        const int c = int(std::floor(x0));
        if (c != col) {
          flush();
          col = c;
        }
        acc[size_t(it.part)] += std::max(it.end - it.start, 1e-9);
        accLit = accLit || lit;
        continue;
      }
      flush();
      const double a = std::max(x0, -2.0), b = std::min(x1, w + 2.0);
      const QRectF r(kLabelWidth + a, top, b - a, kLaneHeight);
      wide[size_t(2 * it.part + (dimming && !lit))].push_back(r);
      if (b - a > 40) labels.push_back({r, it.index});
    }
    flush();
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  for (int part = 0; part < kPartCount; ++part)
    for (int dim = 0; dim < 2; ++dim) {
      const QColor c = trace_style::partColor(Part(part));
      const QColor fill = dim ? dimmed(c, base) : c;
      const auto& n = narrow[size_t(2 * part + dim)];
      const auto& wd = wide[size_t(2 * part + dim)];
      if (!n.isEmpty()) {
        p.setPen(Qt::NoPen);
        p.setBrush(fill);
        p.drawRects(n);
      }
      if (!wd.isEmpty()) {
        p.setPen(QPen(fill.darker(140), 0));
        p.setBrush(fill);
        p.drawRects(wd);
      }
    }
  // Names inside spans wide enough to hold some of them.
  const QFontMetrics fm(font());
  for (const Label& lb : labels) {
    const auto& s = span(lb.index);
    const bool dim = dimming && !isHighlighted_[size_t(lb.index)];
    const QColor c = trace_style::categoryColor(s.category);
    p.setPen(dim ? palette().color(QPalette::PlaceholderText) : (c.lightness() > 150 ? Qt::black : Qt::white));
    QString text = QString::fromStdString(s.name);
    if (!s.node.empty()) text += QStringLiteral(" · ") + QString::fromStdString(s.node);
    const QRectF inner = lb.rect.adjusted(3, 0, -3, 0);
    p.drawText(inner, Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(text, Qt::ElideRight, int(inner.width())));
  }
  // Step markers across the lanes.
  QPen markerPen(palette().color(QPalette::Text), 0, Qt::DashLine);
  markerPen.setColor(QColor(markerPen.color().red(), markerPen.color().green(), markerPen.color().blue(), 110));
  p.setPen(markerPen);
  auto m = std::lower_bound(markers_.begin(), markers_.end(), std::make_pair(viewStart_, INT64_MIN));
  for (; m != markers_.end() && m->first <= viewEnd_; ++m) {
    const double x = xOf(m->first);
    p.drawLine(QPointF(x, kRulerHeight), QPointF(x, viewport()->height()));
  }
  // The clicked span and the hovered one, outlined.
  p.setBrush(Qt::NoBrush);
  if (hover_ >= 0 && hover_ != selected_) {
    p.setPen(QPen(palette().color(QPalette::Text), 1));
    p.drawRect(spanRect(hover_).adjusted(-1, -1, 0, 0));
  }
  if (selected_ >= 0) {
    p.setPen(QPen(palette().color(QPalette::Highlight), 2));
    p.drawRect(spanRect(selected_).adjusted(-1, -1, 1, 1));
  }
  p.restore();
}

void TimelineView::paintRuler(QPainter& p) {
  const int w = viewport()->width();
  p.fillRect(QRect(0, 0, w, kRulerHeight), palette().window());
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(0, kRulerHeight - 1, w, kRulerHeight - 1);
  if (drawn_ == 0) return;
  const int pw = plotWidth();
  const double usPerPx = (viewEnd_ - viewStart_) / pw;
  p.save();
  p.setClipRect(QRect(kLabelWidth, 0, pw, kRulerHeight));
  p.setPen(palette().color(QPalette::WindowText));
  for (const auto& [t, label] : rulerTicks()) {
    const double x = xOf(traceStart_ + t);
    p.drawLine(QPointF(x, 12), QPointF(x, 17));
    p.drawText(QRectF(x + 3, 0, 120, 14), Qt::AlignLeft | Qt::AlignTop, label);
  }
  // Step labels: "step N" where there is room for one.
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  const QFontMetrics fm(bold);
  double lastRight = -1e9;
  auto m = std::lower_bound(markers_.begin(), markers_.end(), std::make_pair(viewStart_ - 200 * usPerPx, INT64_MIN));
  for (; m != markers_.end() && m->first <= viewEnd_; ++m) {
    const double x = xOf(m->first);
    const QString text = tr("step %1").arg(m->second + 1);
    const double tw = fm.horizontalAdvance(text);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawLine(QPointF(x, 18), QPointF(x, kRulerHeight));
    if (x + 3 < lastRight + 6) continue;
    p.drawText(QRectF(x + 3, 18, tw + 2, 16), Qt::AlignLeft | Qt::AlignVCenter, text);
    lastRight = x + 3 + tw;
  }
  p.restore();
}

std::vector<std::pair<double, QString>> TimelineView::rulerTicks() const {
  std::vector<std::pair<double, QString>> out;
  if (drawn_ == 0) return out;
  const double tick = niceAtLeast(90 * (viewEnd_ - viewStart_) / plotWidth());
  // Ticks count from the trace's start: "0", "2.00 ms", ...
  for (double t = std::ceil((viewStart_ - traceStart_) / tick) * tick; traceStart_ + t <= viewEnd_; t += tick)
    out.emplace_back(t, std::abs(t) < tick * 1e-6 ? QStringLiteral("0") : tickText(t, tick));
  return out;
}

void TimelineView::paintLabels(QPainter& p) {
  p.fillRect(QRect(0, kRulerHeight, kLabelWidth, viewport()->height() - kRulerHeight), palette().window());
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(kLabelWidth - 1, kRulerHeight, kLabelWidth - 1, viewport()->height());
  p.save();
  p.setClipRect(QRect(0, kRulerHeight, kLabelWidth, viewport()->height() - kRulerHeight));
  p.setPen(palette().color(QPalette::WindowText));
  for (int l = 0; l < laneCount(); ++l) {
    const int top = laneTop(l);
    const Lane& lane = lanes_[size_t(l)];
    p.drawText(QRect(lane.stream == 0 ? 6 : 16, top, kLabelWidth - 20, kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft, lane.name);
  }
  p.restore();
}

// --- input ---

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QAbstractScrollArea::mousePressEvent(e);
  setFocus(Qt::MouseFocusReason);
  pressed_ = true;
  dragging_ = false;
  pressPos_ = e->position().toPoint();
  pressViewStart_ = viewStart_;
  pressVScroll_ = verticalScrollBar()->value();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  if (pressed_ && (e->buttons() & Qt::LeftButton)) {
    if (!dragging_ && (pos - pressPos_).manhattanLength() > 3) dragging_ = true;
    if (dragging_) {
      // Drag to pan: the time under the cursor stays under it.
      userNavigated();
      const double usPerPx = (viewEnd_ - viewStart_) / plotWidth();
      const double width = viewEnd_ - viewStart_;
      const double start = pressViewStart_ - (pos.x() - pressPos_.x()) * usPerPx;
      verticalScrollBar()->setValue(pressVScroll_ - (pos.y() - pressPos_.y()));
      setVisibleRange(start, start + width);
    }
    return;
  }
  const int h = spanAt(pos);
  if (h != hover_) {
    hover_ = h;
    viewport()->update();
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || !pressed_) return QAbstractScrollArea::mouseReleaseEvent(e);
  pressed_ = false;
  if (dragging_) {
    dragging_ = false;
    return;
  }
  const int index = spanAt(e->position().toPoint());
  if (index < 0) return;
  selected_ = index;
  viewport()->update();
  emit spanClicked(index);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const QPoint d = e->angleDelta();
  if (e->modifiers() & Qt::ControlModifier) {
    zoomBy(std::pow(1.2, d.y() / 120.0), e->position().x());
  } else if (e->modifiers() & Qt::ShiftModifier) {
    verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y() / 120 * (kLaneHeight + kLaneGap));
  } else {
    // The wheel pans time: a notch moves a tenth of the view; down (or right) goes later.
    const int delta = d.x() != 0 ? d.x() : d.y();
    userNavigated();
    const double width = viewEnd_ - viewStart_;
    const double start = viewStart_ - delta / 120.0 * 0.1 * width;
    setVisibleRange(start, start + width);
  }
  e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double width = viewEnd_ - viewStart_;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomIn(); break;
    case Qt::Key_Minus:
    case Qt::Key_Underscore: zoomOut(); break;
    case Qt::Key_Left:
    case Qt::Key_Right: {
      userNavigated();
      const double shift = (e->key() == Qt::Key_Left ? -0.15 : 0.15) * width;
      setVisibleRange(viewStart_ + shift, viewEnd_ + shift);
      break;
    }
    case Qt::Key_Up: verticalScrollBar()->triggerAction(QAbstractSlider::SliderSingleStepSub); break;
    case Qt::Key_Down: verticalScrollBar()->triggerAction(QAbstractSlider::SliderSingleStepAdd); break;
    case Qt::Key_Home:
    case Qt::Key_0:
      userNavigated();
      fitAll();
      break;
    default: QAbstractScrollArea::keyPressEvent(e); return;
  }
  e->accept();
}

bool TimelineView::viewportEvent(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int index = spanAt(help->pos());
    if (index >= 0)
      QToolTip::showText(help->globalPos(), spanDetails(index), viewport(), spanRect(index).toAlignedRect());
    else
      QToolTip::hideText();
    return true;
  }
  if (e->type() == QEvent::Leave && hover_ >= 0) {
    hover_ = -1;
    viewport()->update();
  }
  return QAbstractScrollArea::viewportEvent(e);
}

}  // namespace shardlab::ui
