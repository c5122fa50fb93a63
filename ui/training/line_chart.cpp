#include "ui/training/line_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace shardlab::ui {

namespace {

constexpr int kRepaintMs = 50;  // at most 20 repaints a second however fast points arrive
constexpr int kPad = 6;

// A tick spacing of 1, 2, 2.5 or 5 times a power of ten giving about `maxTicks` ticks over `range`.
double niceStep(double range, int maxTicks) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double rough = range / std::max(1, maxTicks);
  const double mag = std::pow(10.0, std::floor(std::log10(rough)));
  const double norm = rough / mag;
  const double nice = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
  return nice * mag;
}

QVector<double> ticksBetween(double lo, double hi, double step) {
  QVector<double> out;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-9 && out.size() < 64; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// How a tick label writes its number: in units of 1, 1k or 1M (chosen per axis, so labels agree)
// with as many decimals as the tick step needs.
struct TickFormat {
  double unit = 1;
  QString suffix;
  int decimals = 0;
  bool general = false;  // tiny values: %g
};

TickFormat tickFormat(double lo, double hi, double step) {
  TickFormat f;
  const double maxAbs = std::max(std::abs(lo), std::abs(hi));
  if (maxAbs >= 1e6)
    f.unit = 1e6, f.suffix = QStringLiteral("M");
  else if (maxAbs >= 1e4)
    f.unit = 1e3, f.suffix = QStringLiteral("k");
  if (maxAbs > 0 && maxAbs < 1e-3) {
    f.general = true;
    return f;
  }
  const double s = step / f.unit;
  while (f.decimals < 6 && std::abs(s * std::pow(10.0, f.decimals) - std::round(s * std::pow(10.0, f.decimals))) > 1e-6)
    ++f.decimals;
  return f;
}

QString tickLabel(double v, const TickFormat& f) {
  if (f.general) return QString::number(v, 'g', 3);
  return QString::number(v / f.unit, 'f', f.decimals) + f.suffix;
}

QString valueText(double v) {
  const double a = std::abs(v);
  if (a >= 1e4 && a < 1e9) return QString::number(v, 'f', 0);
  return QString::number(v, 'g', 5);
}

}  // namespace

LineChart::LineChart(const QString& title, QWidget* parent) : QWidget(parent), title_(title) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  repaint_.setSingleShot(true);
  repaint_.setInterval(kRepaintMs);
  connect(&repaint_, &QTimer::timeout, this, qOverload<>(&QWidget::update));
}

int LineChart::addSeries(const QString& name, const QColor& color, bool pointMarkers, bool joined) {
  Series s;
  s.name = name;
  s.color = color;
  s.markers = pointMarkers;
  s.joined = joined;
  series_.push_back(s);
  update();
  return int(series_.size()) - 1;
}

void LineChart::append(int series, double x, double y) {
  if (series < 0 || series >= series_.size() || !std::isfinite(x) || !std::isfinite(y)) return;
  Series& s = series_[series];
  s.last = QPointF(x, y);
  ++s.appended;
  if (!s.buckets.isEmpty() && s.buckets.back().n < s.stride) {
    // The newest bucket still takes points: every bucket covers `stride` points, so the curve
    // keeps one resolution from its first step to its last.
    Bucket& b = s.buckets.back();
    const double n = double(b.n + 1);
    b.x = (b.x * double(b.n) + x) / n;
    b.y = (b.y * double(b.n) + y) / n;
    b.lo = std::min(b.lo, y);
    b.hi = std::max(b.hi, y);
    ++b.n;
  } else {
    s.buckets.push_back(Bucket{x, y, y, y, 1});
    if (s.buckets.size() > kMaxStored) {
      compact(s.buckets);
      s.stride *= 2;
    }
  }
  scheduleRepaint();
}

void LineChart::compact(QVector<Bucket>& buckets) {
  // Pairs merge into their weighted mean, keeping the pair's y range as a band: the curve keeps
  // its shape and its spikes stay visible, at half the points.
  QVector<Bucket> out;
  out.reserve(buckets.size() / 2 + 1);
  for (int i = 0; i + 1 < buckets.size(); i += 2) {
    const Bucket& a = buckets[i];
    const Bucket& b = buckets[i + 1];
    const double n = double(a.n + b.n);
    out.push_back(Bucket{(a.x * double(a.n) + b.x * double(b.n)) / n, (a.y * double(a.n) + b.y * double(b.n)) / n,
                         std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.n + b.n});
  }
  if (buckets.size() % 2) out.push_back(buckets.back());
  buckets.swap(out);
}

void LineChart::clear() {
  for (Series& s : series_) {
    s.buckets.clear();
    s.appended = 0;
    s.stride = 1;
    s.last = {};
  }
  update();
}

void LineChart::setXLabel(const QString& label) {
  xLabel_ = label;
  update();
}

void LineChart::setYLabel(const QString& label) {
  yLabel_ = label;
  update();
}

void LineChart::setIncludeZero(bool include) {
  includeZero_ = include;
  update();
}

void LineChart::setYLimits(double lo, double hi) {
  limitLo_ = lo;
  limitHi_ = hi;
  update();
}

void LineChart::setIntegerX(bool integer) {
  integerX_ = integer;
  update();
}

void LineChart::setPlaceholder(const QString& text) {
  placeholder_ = text;
  update();
}

QString LineChart::seriesName(int series) const {
  return series >= 0 && series < series_.size() ? series_[series].name : QString();
}

int LineChart::seriesIndex(const QString& name) const {
  for (int i = 0; i < series_.size(); ++i)
    if (series_[i].name == name) return i;
  return -1;
}

qint64 LineChart::pointCount(int series) const {
  return series >= 0 && series < series_.size() ? series_[series].appended : 0;
}

int LineChart::storedCount(int series) const {
  return series >= 0 && series < series_.size() ? int(series_[series].buckets.size()) : 0;
}

std::optional<QPointF> LineChart::lastPoint(int series) const {
  if (series < 0 || series >= series_.size() || series_[series].appended == 0) return std::nullopt;
  return series_[series].last;
}

void LineChart::scheduleRepaint() {
  if (!repaint_.isActive()) repaint_.start();
}

int LineChart::nearest(const Series& s, double x) {
  if (s.buckets.isEmpty()) return -1;
  auto it = std::lower_bound(s.buckets.begin(), s.buckets.end(), x, [](const Bucket& b, double v) { return b.x < v; });
  int i = int(it - s.buckets.begin());
  if (i >= s.buckets.size()) return int(s.buckets.size()) - 1;
  if (i > 0 && std::abs(s.buckets[i - 1].x - x) <= std::abs(s.buckets[i].x - x)) return i - 1;
  return i;
}

double LineChart::snapX(double x) const {
  double snap = NAN;
  for (const Series& s : series_) {
    const int i = nearest(s, x);
    if (i >= 0 && (std::isnan(snap) || std::abs(s.buckets[i].x - x) < std::abs(snap - x))) snap = s.buckets[i].x;
  }
  return snap;
}

LineChart::Frame LineChart::frame() const {
  Frame f;
  const QFontMetrics fm(font());
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const Series& s : series_)
    for (const Bucket& b : s.buckets) {
      xmin = std::min(xmin, b.x), xmax = std::max(xmax, b.x);
      ymin = std::min(ymin, b.lo), ymax = std::max(ymax, b.hi);
    }
  f.empty = !(xmin <= xmax);
  if (f.empty) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (includeZero_) ymin = std::min(ymin, 0.0), ymax = std::max(ymax, 0.0);
  ymin = std::clamp(ymin, limitLo_, limitHi_);
  ymax = std::clamp(ymax, limitLo_, limitHi_);
  if (ymax - ymin <= 1e-12 * std::max(1.0, std::abs(ymax))) {
    // One value: open a window around it (inside the limits).
    const double pad = ymax != 0 ? std::abs(ymax) * 0.1 : 1.0;
    ymin = std::max(limitLo_, ymin - pad);
    ymax = std::min(limitHi_, ymax + pad);
    if (ymax <= ymin) ymax = ymin + 1;
  }
  if (xmax <= xmin) xmin -= integerX_ ? 1 : 0.5, xmax += integerX_ ? 1 : 0.5;

  // Vertical layout first: the y ticks depend only on the plot's height.
  const int top = fm.height() * 2 + kPad;  // title line and legend line
  const int bottom = fm.height() * (xLabel_.isEmpty() ? 1 : 2) + kPad * 2;
  const double plotHeight = std::max(20, height() - top - bottom);
  f.yStep = niceStep(ymax - ymin, std::max(2, int(plotHeight / (fm.height() * 2.2))));
  // Out to the ticks around the data (a value on a tick, 0 say, stays the axis' end).
  f.y0 = std::max(limitLo_, std::floor(ymin / f.yStep + 1e-9) * f.yStep);
  f.y1 = std::min(limitHi_, std::ceil(ymax / f.yStep - 1e-9) * f.yStep);
  if (f.y1 <= f.y0) f.y1 = f.y0 + f.yStep;
  f.yTicks = ticksBetween(f.y0, f.y1, f.yStep);
  const TickFormat yf = tickFormat(f.y0, f.y1, f.yStep);
  int labelWidth = 0;
  for (double v : f.yTicks) labelWidth = std::max(labelWidth, fm.horizontalAdvance(tickLabel(v, yf)));
  const int left = labelWidth + kPad * 2 + (yLabel_.isEmpty() ? 0 : fm.height() + kPad);
  const int right = kPad * 2 + fm.horizontalAdvance(QStringLiteral("0000")) / 2;
  f.plot = QRectF(left, top, std::max(20, width() - left - right), plotHeight);

  f.x0 = xmin;
  f.x1 = xmax;
  const int xLabelWidth =
      std::max(fm.horizontalAdvance(QString::number(xmax, 'g', 6)), fm.horizontalAdvance("0.00")) + 24;
  f.xStep = niceStep(xmax - xmin, std::max(2, int(f.plot.width() / xLabelWidth)));
  if (integerX_) f.xStep = std::max(1.0, std::round(f.xStep));
  f.xTicks = ticksBetween(f.x0, f.x1, f.xStep);
  return f;
}

std::pair<double, double> LineChart::yAxisRange() const {
  const Frame f = frame();
  return {f.y0, f.y1};
}

QVector<double> LineChart::yTicks() const { return frame().yTicks; }

QString LineChart::hoverText() const {
  if (!hover_) return {};
  const Frame f = frame();
  if (f.empty || !f.plot.adjusted(-2, -2, 2, 2).contains(*hover_)) return {};
  const double x = f.dataX(hover_->x());
  // Each series reads at its own nearest point (a sparse eval series may sit elsewhere, and says where).
  const double snap = snapX(x);
  if (std::isnan(snap)) return {};
  const QString xName = xLabel_.isEmpty() ? QStringLiteral("x") : xLabel_;
  QStringList lines{QStringLiteral("%1 %2").arg(xName, valueText(integerX_ ? std::round(snap) : snap))};
  for (const Series& s : series_) {
    const int i = nearest(s, snap);
    if (i < 0) continue;
    const Bucket& b = s.buckets[i];
    QString line = QStringLiteral("%1: %2").arg(s.name, valueText(b.y));
    if (b.n > 1) line += tr(" (mean of %1, %2 – %3)").arg(b.n).arg(valueText(b.lo), valueText(b.hi));
    if (std::abs(b.x - snap) > 1e-9 * std::max(1.0, std::abs(snap)))
      line += QStringLiteral(" @ %1").arg(valueText(integerX_ ? std::round(b.x) : b.x));
    lines << line;
  }
  return lines.join('\n');
}

void LineChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.base());
  const QFontMetrics fm(font());
  const Frame f = frame();
  const QColor text = pal.color(QPalette::Text);
  QColor grid = pal.color(QPalette::Mid);
  grid.setAlpha(90);

  // Title and legend share the top line; the legend drops below it when it does not fit.
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(text);
  p.drawText(QPointF(kPad, kPad + fm.ascent()), title_);
  const int titleRight = kPad * 2 + QFontMetrics(bold).horizontalAdvance(title_);
  p.setFont(font());
  // Marks (a series of dots only) join the legend once there is one.
  auto listed = [](const Series& s) { return s.joined || s.appended > 0; };
  int legendWidth = 0;
  for (const Series& s : series_)
    if (listed(s)) legendWidth += 14 + fm.horizontalAdvance(s.name) + 12;
  double lx = std::max<double>(titleRight + kPad, width() - kPad - legendWidth);
  double ly = kPad;
  if (lx + legendWidth > width()) lx = kPad, ly = kPad + fm.height();
  for (const Series& s : series_) {
    if (!listed(s)) continue;
    p.fillRect(QRectF(lx, ly + fm.height() / 2.0 - 2, 10, 4), s.color);
    p.setPen(text);
    p.drawText(QPointF(lx + 14, ly + fm.ascent()), s.name);
    lx += 14 + fm.horizontalAdvance(s.name) + 12;
  }

  // Grid, axes and tick labels.
  const TickFormat yf = tickFormat(f.y0, f.y1, f.yStep);
  const TickFormat xf = tickFormat(f.x0, f.x1, f.xStep);
  for (double v : f.yTicks) {
    const double y = f.py(v);
    p.setPen(grid);
    p.drawLine(QPointF(f.plot.left(), y), QPointF(f.plot.right(), y));
    p.setPen(text);
    const QString s = tickLabel(v, yf);
    p.drawText(QRectF(0, y - fm.height() / 2.0, f.plot.left() - kPad, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               s);
  }
  for (double v : f.xTicks) {
    const double x = f.px(v);
    p.setPen(grid);
    p.drawLine(QPointF(x, f.plot.top()), QPointF(x, f.plot.bottom()));
    p.setPen(text);
    p.drawLine(QPointF(x, f.plot.bottom()), QPointF(x, f.plot.bottom() + 3));
    p.drawText(QRectF(x - 60, f.plot.bottom() + 4, 120, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
               tickLabel(v, xf));
  }
  p.setPen(text);
  p.drawLine(f.plot.bottomLeft(), f.plot.bottomRight());
  p.drawLine(f.plot.bottomLeft(), f.plot.topLeft());
  if (!xLabel_.isEmpty())
    p.drawText(QRectF(f.plot.left(), f.plot.bottom() + 4 + fm.height(), f.plot.width(), fm.height()), Qt::AlignHCenter,
               xLabel_);
  if (!yLabel_.isEmpty()) {
    p.save();
    p.translate(kPad, f.plot.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-f.plot.height() / 2, 0, f.plot.height(), fm.height()), Qt::AlignHCenter | Qt::AlignTop, yLabel_);
    p.restore();
  }
  if (f.empty) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(f.plot.adjusted(kPad, 0, -kPad, 0), Qt::AlignCenter | Qt::TextWordWrap,
               placeholder_.isEmpty() ? tr("No data yet") : placeholder_);
    return;
  }

  // The series, clipped to the plot. Buckets that land in the same pixel column collapse into
  // one vertex (their weighted mean) and a band (their range): what is drawn is bounded by the
  // plot's width, whatever the run's length.
  p.save();
  p.setClipRect(f.plot.adjusted(-1, -4, 1, 1));
  p.setRenderHint(QPainter::Antialiasing);
  struct Column {
    double px, sum, lo, hi;
    qint64 n;
  };
  QVector<Column> columns;
  for (const Series& s : series_) {
    if (s.buckets.isEmpty()) continue;
    columns.clear();
    bool spread = false;
    for (const Bucket& b : s.buckets) {
      const double px = f.px(b.x);
      if (!columns.isEmpty() && std::floor(columns.back().px) == std::floor(px)) {
        Column& c = columns.back();
        c.sum += b.y * double(b.n);
        c.n += b.n;
        c.lo = std::min(c.lo, b.lo);
        c.hi = std::max(c.hi, b.hi);
      } else {
        columns.push_back(Column{px, b.y * double(b.n), b.lo, b.hi, b.n});
      }
      spread |= columns.back().hi > columns.back().lo;
    }
    if (spread) {
      QPolygonF band;
      band.reserve(columns.size() * 2);
      for (const Column& c : columns) band << QPointF(c.px, f.py(c.hi));
      for (auto it = columns.rbegin(); it != columns.rend(); ++it) band << QPointF(it->px, f.py(it->lo));
      QColor c = s.color;
      c.setAlpha(55);
      p.setPen(Qt::NoPen);
      p.setBrush(c);
      p.drawPolygon(band);
    }
    QPolygonF line;
    line.reserve(columns.size());
    for (const Column& c : columns) line << QPointF(c.px, f.py(c.sum / double(c.n)));
    p.setPen(QPen(s.color, 1.6));
    p.setBrush(Qt::NoBrush);
    if (s.joined) p.drawPolyline(line);
    if (s.markers || line.size() == 1) {
      p.setBrush(s.color);
      for (const QPointF& pt : line) p.drawEllipse(pt, 2.8, 2.8);
    }
  }
  p.restore();

  // Hover: a guide at the snapped x, a dot on each series, and the readout box.
  const QString readout = hoverText();
  if (!readout.isEmpty()) {
    const double snap = snapX(f.dataX(hover_->x()));
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(pal.color(QPalette::Mid), 1, Qt::DashLine));
    p.drawLine(QPointF(f.px(snap), f.plot.top()), QPointF(f.px(snap), f.plot.bottom()));
    for (const Series& s : series_) {
      const int i = nearest(s, snap);
      if (i < 0) continue;
      p.setPen(QPen(pal.color(QPalette::Base), 1.5));
      p.setBrush(s.color);
      p.drawEllipse(QPointF(f.px(s.buckets[i].x), f.py(s.buckets[i].y)), 4, 4);
    }
    const QStringList lines = readout.split('\n');
    int w = 0;
    for (const QString& l : lines) w = std::max(w, fm.horizontalAdvance(l));
    QRectF box(0, 0, w + 2 * kPad, fm.height() * lines.size() + kPad);
    box.moveTopLeft(QPointF(hover_->x() + 12, f.plot.top() + 4));
    if (box.right() > width() - 2) box.moveRight(hover_->x() - 12);
    if (box.left() < 2) box.moveLeft(2);
    p.setPen(pal.color(QPalette::Mid));
    p.setBrush(pal.color(QPalette::ToolTipBase));
    p.drawRoundedRect(box, 3, 3);
    p.setPen(pal.color(QPalette::ToolTipText));
    for (int i = 0; i < lines.size(); ++i)
      p.drawText(QPointF(box.left() + kPad, box.top() + kPad / 2.0 + fm.ascent() + i * fm.height()), lines[i]);
  }
}

void LineChart::mouseMoveEvent(QMouseEvent* event) {
  hover_ = event->position().toPoint();
  update();
}

void LineChart::leaveEvent(QEvent*) {
  hover_.reset();
  update();
}

}  // namespace shardlab::ui
