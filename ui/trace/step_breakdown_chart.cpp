#include "ui/trace/step_breakdown_chart.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ui/trace/trace_style.h"

namespace shardlab::ui {

namespace {

using trace_style::Part;

constexpr int kHeaderHeight = 44;  // headline, then the legend
constexpr int kAxisWidth = 58;
constexpr int kFooterHeight = 20;
constexpr int kMinBarPitch = 4;  // pixels per bar, gap included

double niceAtLeast(double x) {
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= x) return m * p;
  return 10 * p;
}

QString devicesText(size_t n) {
  return n == 1 ? StepBreakdownChart::tr("1 device") : StepBreakdownChart::tr("%1 devices").arg(n);
}

}  // namespace

StepBreakdownChart::StepBreakdownChart(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAccessibleName(tr("Step breakdown"));
}

void StepBreakdownChart::setTitle(const QString& title) {
  title_ = title;
  update();
}

void StepBreakdownChart::setSummaries(const std::vector<profiler::StepSummary>& summaries) {
  summaries_ = summaries;
  std::set<int> devs;
  for (const auto& s : summaries_) devs.insert(s.device);
  devices_.assign(devs.begin(), devs.end());
  rebuild();
}

void StepBreakdownChart::setDevice(int device) {
  device_ = device < 0 ? -1 : device;
  rebuild();
}

void StepBreakdownChart::setDeviceLabel(const QString& label) {
  deviceLabel_ = label;
  update();
}

void StepBreakdownChart::setPeakFlops(double peak) {
  peak_ = std::max(0.0, peak);
  update();
}

void StepBreakdownChart::setMinimumScaleUs(double us) {
  minScaleUs_ = std::max(0.0, us);
  update();
}

void StepBreakdownChart::rebuild() {
  // Per step: the chosen device's summary, or the mean of every device's.
  std::map<int64_t, std::pair<Entry, int>> acc;
  for (const auto& s : summaries_) {
    if (device_ >= 0 && s.device != device_) continue;
    auto& [e, n] = acc[s.step];
    e.firstStep = e.lastStep = s.step;
    e.parts[size_t(Part::Compute)] += s.compute_us;
    e.parts[size_t(Part::Collective)] += s.collective_us;
    e.parts[size_t(Part::Optimizer)] += s.optimizer_us;
    e.parts[size_t(Part::Data)] += s.data_us;
    e.parts[size_t(Part::Idle)] += std::max(0.0, s.idle_us());  // clock jitter can make it a hair negative
    e.wallUs += s.wall_us;
    e.flops += s.flops;
    ++n;
  }
  entries_.clear();
  for (auto& [step, en] : acc) {
    Entry e = en.first;
    for (double& p : e.parts) p /= en.second;
    e.wallUs /= en.second;
    e.flops /= en.second;
    entries_.push_back(e);
  }
  update();
}

double StepBreakdownChart::meanStepUs() const {
  if (entries_.empty()) return 0;
  const size_t from = entries_.size() > 1 ? 1 : 0;  // step 1 is warm-up
  double sum = 0;
  for (size_t i = from; i < entries_.size(); ++i) sum += entries_[i].wallUs;
  return sum / double(entries_.size() - from);
}

double StepBreakdownChart::achievedFlops() const {
  if (entries_.empty()) return 0;
  const size_t from = entries_.size() > 1 ? 1 : 0;
  double flops = 0, wall = 0;
  for (size_t i = from; i < entries_.size(); ++i) {
    flops += entries_[i].flops;
    wall += entries_[i].wallUs;
  }
  return wall > 0 ? flops / (wall * 1e-6) : 0.0;
}

double StepBreakdownChart::mfu() const {
  if (peak_ <= 0 || entries_.empty() || devices_.empty()) return NAN;
  return achievedFlops() / (peak_ / double(devices_.size()));
}

QString StepBreakdownChart::headline() const {
  if (entries_.empty()) return tr("No step summaries yet.");
  const QString who = device_ >= 0 ? tr("%1 %2").arg(deviceLabel_).arg(device_) : tr("mean of %1").arg(devicesText(devices_.size()));
  QString steps;
  if (entries_.size() > 2)
    steps = tr("steps %1–%2, step %3 left out as warm-up")
                .arg(entries_[1].firstStep + 1)
                .arg(entries_.back().lastStep + 1)
                .arg(entries_.front().firstStep + 1);
  else if (entries_.size() == 2)
    steps = tr("step %1, step %2 left out as warm-up").arg(entries_[1].firstStep + 1).arg(entries_[0].firstStep + 1);
  else
    steps = tr("step %1").arg(entries_.front().firstStep + 1);
  QString text = tr("%1: step %2 (%3) · %4 per device").arg(who, trace_style::durationText(meanStepUs()), steps,
                                                            trace_style::rateText(achievedFlops()));
  const double m = mfu();
  if (std::isnan(m))
    text += tr(" · MFU —: no peak FLOP/s given");
  else
    text += tr(" · MFU %1% of %2 / %3")
                .arg(100.0 * m, 0, 'f', m < 0.1 ? 1 : 0)
                .arg(trace_style::rateText(peak_), devicesText(devices_.size()));
  return text;
}

QRect StepBreakdownChart::plotRect() const {
  return QRect(kAxisWidth, kHeaderHeight + 6, std::max(1, width() - kAxisWidth - 10),
               std::max(1, height() - kHeaderHeight - 6 - kFooterHeight));
}

int StepBreakdownChart::stepsPerBar() const {
  const int fit = std::max(1, plotRect().width() / kMinBarPitch);
  return std::max(1, int((entries_.size() + size_t(fit) - 1) / size_t(fit)));
}

int StepBreakdownChart::barCount() const {
  const int per = stepsPerBar();
  return int((entries_.size() + size_t(per) - 1) / size_t(per));
}

StepBreakdownChart::Entry StepBreakdownChart::barEntry(int bar) const {
  const int per = stepsPerBar();
  const size_t from = size_t(bar) * size_t(per), to = std::min(entries_.size(), from + size_t(per));
  Entry e;
  e.firstStep = entries_[from].firstStep;
  e.lastStep = entries_[to - 1].lastStep;
  for (size_t i = from; i < to; ++i) {
    for (size_t k = 0; k < e.parts.size(); ++k) e.parts[k] += entries_[i].parts[k] / double(to - from);
    e.wallUs += entries_[i].wallUs / double(to - from);
    e.flops += entries_[i].flops / double(to - from);
  }
  return e;
}

double StepBreakdownChart::tallestUs() const {
  double m = 0;
  for (const Entry& e : entries_) {
    double sum = 0;
    for (double p : e.parts) sum += p;
    m = std::max(m, std::max(sum, e.wallUs));
  }
  return m;
}

double StepBreakdownChart::scaleUs() const { return std::max({tallestUs(), minScaleUs_, 1e-3}); }

int StepBreakdownChart::barAt(const QPoint& pos) const {
  const QRect r = plotRect();
  if (entries_.empty() || !r.contains(pos)) return -1;
  const int n = barCount();
  const int bar = int((pos.x() - r.left()) * double(n) / r.width());
  return bar >= 0 && bar < n ? bar : -1;
}

QString StepBreakdownChart::barDetails(int bar) const {
  if (bar < 0 || bar >= barCount()) return {};
  const Entry e = barEntry(bar);
  QStringList lines;
  lines << (e.firstStep == e.lastStep ? tr("<b>step %1</b>").arg(e.firstStep + 1)
                                      : tr("<b>steps %1–%2</b> (mean)").arg(e.firstStep + 1).arg(e.lastStep + 1));
  lines << tr("wall %1").arg(trace_style::durationText(e.wallUs));
  for (int k = 0; k < trace_style::kPartCount; ++k)
    lines << tr("%1: %2 (%3%)")
                 .arg(trace_style::partLabel(Part(k)), trace_style::durationText(e.parts[size_t(k)]))
                 .arg(e.wallUs > 0 ? 100.0 * e.parts[size_t(k)] / e.wallUs : 0.0, 0, 'f', 1);
  if (e.flops > 0 && e.wallUs > 0) {
    const double rate = e.flops / (e.wallUs * 1e-6);
    QString line = tr("%1 per device").arg(trace_style::rateText(rate));
    if (peak_ > 0 && !devices_.empty()) line += tr(", MFU %1%").arg(100.0 * rate / (peak_ / double(devices_.size())), 0, 'f', 1);
    lines << line;
  }
  return lines.join(QStringLiteral("<br>"));
}

bool StepBreakdownChart::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int bar = barAt(help->pos());
    if (bar >= 0)
      QToolTip::showText(help->globalPos(), barDetails(bar), this);
    else if (help->pos().y() < kHeaderHeight)
      QToolTip::showText(help->globalPos(), headline(), this);  // the headline may be elided
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void StepBreakdownChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QFontMetrics fm(font());
  // Headline: the title (the run), then the figures.
  p.setPen(palette().color(QPalette::Text));
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  const QString title = title_.isEmpty() ? QString() : title_ + QStringLiteral(" — ");
  const int titleWidth = QFontMetrics(bold).horizontalAdvance(title);
  p.drawText(QRect(8, 2, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, title);
  p.setFont(font());
  p.drawText(QRect(8 + titleWidth, 2, width() - 16 - titleWidth, 18), Qt::AlignLeft | Qt::AlignVCenter,
             fm.elidedText(headline(), Qt::ElideRight, width() - 16 - titleWidth));
  // Legend.
  int x = 8;
  for (int k = 0; k < trace_style::kPartCount; ++k) {
    p.fillRect(QRect(x, 26, 10, 10), trace_style::partColor(Part(k)));
    p.setPen(palette().color(QPalette::Text));
    const QString label = trace_style::partLabel(Part(k));
    p.drawText(QRect(x + 14, 22, 100, 18), Qt::AlignLeft | Qt::AlignVCenter, label);
    x += 14 + fm.horizontalAdvance(label) + 14;
  }

  const QRect r = plotRect();
  if (entries_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap, tr("No steps to show."));
    return;
  }
  // Y axis: step time, nice ticks from zero.
  const double top = scaleUs() * 1.05;
  const double tick = niceAtLeast(top / std::max(2, r.height() / 40));
  p.setPen(palette().color(QPalette::Mid));
  for (double t = 0; t <= top; t += tick) {
    const int y = r.bottom() - int(t / top * r.height());
    p.setPen(palette().color(QPalette::Midlight));
    p.drawLine(r.left(), y, r.right(), y);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(0, y - 8, kAxisWidth - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
               t == 0 ? QStringLiteral("0") : trace_style::durationText(t));
  }
  // Bars.
  const int n = barCount();
  const double pitch = double(r.width()) / n;
  const double barWidth = std::max(1.0, pitch * (pitch >= 6 ? 0.75 : 1.0) - (pitch >= 3 ? 1 : 0));
  for (int b = 0; b < n; ++b) {
    const Entry e = barEntry(b);
    double base = 0;
    const double x0 = r.left() + b * pitch + (pitch - barWidth) / 2;
    for (int k = 0; k < trace_style::kPartCount; ++k) {
      const double h = e.parts[size_t(k)] / top * r.height();
      if (h <= 0) continue;
      const double y1 = r.bottom() + 1 - (base + h);
      p.fillRect(QRectF(x0, y1, barWidth, h), trace_style::partColor(Part(k)));
      base += h;
    }
  }
  // X labels: step numbers where they fit.
  p.setPen(palette().color(QPalette::Text));
  const int labelEvery = std::max(1, int(std::ceil(fm.horizontalAdvance(QStringLiteral("00000")) / pitch)));
  for (int b = 0; b < n; b += labelEvery) {
    const Entry e = barEntry(b);
    const QString label = QString::number(e.firstStep + 1);
    p.drawText(QRectF(r.left() + b * pitch - 20 + pitch / 2, r.bottom() + 2, 40, kFooterHeight - 2), Qt::AlignHCenter | Qt::AlignTop,
               label);
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(r.bottomLeft(), r.bottomRight());
  p.drawLine(r.bottomLeft(), r.topLeft());
}

}  // namespace shardlab::ui
