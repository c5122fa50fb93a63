#include "ui/mesh/memory_bars.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "ui/mesh/format.h"

namespace shardlab::ui {

namespace {

// Each part has its colour, and a shade of red for a device over its capacity: the bar turns red
// and still shows what it is made of.
struct Part {
  const char* name;
  QColor color;
  QColor over;
  double sharding::DeviceMemory::*field;
};

const Part kParts[] = {
    {QT_TRANSLATE_NOOP("MemoryBars", "parameters"), QColor(66, 133, 244), QColor(183, 28, 28),
     &sharding::DeviceMemory::params},
    {QT_TRANSLATE_NOOP("MemoryBars", "optimizer state"), QColor(251, 140, 0), QColor(211, 47, 47),
     &sharding::DeviceMemory::opt_state},
    {QT_TRANSLATE_NOOP("MemoryBars", "step arena"), QColor(67, 160, 71), QColor(239, 83, 80),
     &sharding::DeviceMemory::arena},
};

}  // namespace

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void MemoryBars::setMemory(const std::vector<sharding::DeviceMemory>& devices, double capacityBytes) {
  devices_ = devices;
  capacity_ = capacityBytes;
  updateGeometry();
  update();
}

bool MemoryBars::overCapacity(int device) const {
  return device >= 0 && device < barCount() && capacity_ > 0 && devices_[size_t(device)].total() > capacity_;
}

double MemoryBars::tickStep() const {
  // Ticks at 1, 2 or 5 times a power of ten of the byte unit the scale's top is written in
  // (B, KiB, MiB, ...), about four of them, so every label is a round number in that unit.
  const double top = scaleTop();
  if (top <= 0) return 1;
  double unit = 1;
  while (top >= 1024 * unit && unit < std::pow(1024.0, 4)) unit *= 1024;
  // As many ticks as there is room for labels, up to four above zero.
  const QFontMetrics fm(font());
  const int room = (height() - 4 * fm.height() - 14) / std::max(1, fm.height() * 3 / 2);
  const double raw = top / unit / std::clamp(room, 1, 4);
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  double step = decade;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= raw) {
      step = m * decade;
      break;
    }
  return std::max(step * unit, 1.0);
}

double MemoryBars::used() const {
  double most = 0;
  for (const sharding::DeviceMemory& d : devices_) most = std::max(most, d.total());
  return most;
}

bool MemoryBars::capacityOnScale() const { return capacity_ > 0 && used() >= capacity_ / 20; }

double MemoryBars::scaleTop() const { return capacityOnScale() ? std::max(capacity_, used()) : used(); }

double MemoryBars::scaleMax() const {
  const double top = scaleTop();
  const double step = tickStep();
  return std::max(step, std::ceil(top / step - 1e-9) * step);
}

QList<double> MemoryBars::ticks() const {
  QList<double> out;
  const double step = tickStep(), top = scaleMax();
  for (int i = 0; i * step <= top * (1 + 1e-9); ++i) out << i * step;
  return out;
}

QList<double> MemoryBars::labelledTicks() const {
  const int lineHeight = QFontMetrics(font()).height();
  const int base = plotArea().bottom() + 1;
  QList<double> out;
  int lastY = 0;
  const QList<double> all = ticks();
  for (auto t = all.rbegin(); t != all.rend(); ++t) {
    const int y = base - lengthOf(*t);
    if (!out.isEmpty() && y - lastY < lineHeight) continue;
    out.prepend(*t);
    lastY = y;
  }
  return out;
}

QStringList MemoryBars::tickLabels() const {
  QStringList out;
  for (double t : labelledTicks()) out << bytesText(t);
  return out;
}

QSize MemoryBars::minimumSizeHint() const {
  const QFontMetrics fm(font());
  return {160, 5 * fm.height()};  // bars, an axis and the legend, tightly: the panel may be short
}

QRect MemoryBars::plotArea() const {
  const QFontMetrics fm(font());
  int axis = 0;
  // Room for every tick's label, labelled or not (which ones are depends on this area's height).
  for (double t : ticks()) axis = std::max(axis, fm.horizontalAdvance(bytesText(t)));
  // Left: the scale's labels; top: the caption; bottom: device numbers and the legend.
  const int left = 8 + axis + 6;
  const int top = 2 * fm.height() + 4;
  return QRect(left, top, std::max(1, width() - left - 8), std::max(1, height() - top - 2 * fm.height() - 10));
}

int MemoryBars::lengthOf(double bytes) const {
  return int(std::lround(plotArea().height() * std::clamp(bytes / scaleMax(), 0.0, 1.0)));
}

int MemoryBars::barLength(int device) const {
  if (device < 0 || device >= barCount()) return 0;
  // A device that holds anything shows at least a pixel of it, however small against the scale.
  const double total = devices_[size_t(device)].total();
  return total > 0 ? std::max(1, lengthOf(total)) : 0;
}

int MemoryBars::capacityLevel() const { return capacityOnScale() ? lengthOf(capacity_) : -1; }

QRect MemoryBars::barRect(int device) const {
  if (device < 0 || device >= barCount()) return {};
  const QRect area = plotArea();
  const double slot = double(area.width()) / barCount();
  const int gap = slot >= 8 ? std::max(1, int(slot * 0.2)) : 0;
  const int x0 = area.left() + int(device * slot), x1 = area.left() + int((device + 1) * slot);
  return QRect(x0 + gap / 2, area.top(), std::max(1, x1 - x0 - gap), area.height());
}

void MemoryBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm(font());
  const QPalette pal = palette();
  const QRect area = plotArea();
  // Pixel row of a byte value: the bars' bottom is area.bottom() + 1, the scale's top area.top().
  const int base = area.bottom() + 1;

  double most = 0;
  for (const sharding::DeviceMemory& d : devices_) most = std::max(most, d.total());
  QString caption = tr("%1, up to %2 each").arg(counted(barCount(), tr("device"), tr("devices")), bytesText(most));
  if (capacity_ > 0) caption += tr(" of %1 (%2% used)").arg(bytesText(capacity_)).arg(100.0 * most / capacity_, 0, 'f', 1);
  p.setPen(pal.color(QPalette::WindowText));
  p.drawText(QRect(8, 4, width() - 16, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, caption);

  // The scale: a labelled tick and a faint grid line at each round value.
  QColor grid = pal.color(QPalette::Mid);
  grid.setAlpha(90);
  for (double t : ticks()) {
    const int y = base - lengthOf(t);
    p.setPen(grid);
    if (t > 0) p.drawLine(area.left(), y, area.right(), y);
  }
  p.setPen(pal.color(QPalette::WindowText));
  for (double t : labelledTicks()) {
    const int y = base - lengthOf(t);
    p.drawText(QRect(4, y - fm.height() / 2, area.left() - 10, fm.height()), Qt::AlignRight | Qt::AlignVCenter, bytesText(t));
  }
  p.setPen(pal.color(QPalette::Mid));
  p.drawLine(area.left() - 3, base, area.right(), base);
  p.drawLine(area.left() - 1, area.top(), area.left() - 1, base);
  if (devices_.empty()) {
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap, tr("No memory figures: the design check did not get as far as sharding"));
    return;
  }
  const bool numbers = barRect(0).width() >= fm.horizontalAdvance(QString::number(barCount() - 1)) + 2;
  for (int i = 0; i < barCount(); ++i) {
    const QRect slot = barRect(i);
    const sharding::DeviceMemory& d = devices_[size_t(i)];
    const bool over = overCapacity(i);
    double below = 0;
    for (const Part& part : kParts) {
      const double v = d.*(part.field);
      if (v <= 0) continue;
      // Stacked by their running sums, so the parts add up to the bar's length exactly.
      const int y0 = base - lengthOf(below), y1 = base - lengthOf(below + v);
      if (y1 < y0) p.fillRect(QRect(slot.left(), y1, slot.width(), y0 - y1), over ? part.over : part.color);
      below += v;
    }
    if (d.total() > 0 && lengthOf(d.total()) == 0) {
      // Too small for the scale: a one-pixel line in the largest part's colour says it is there.
      const Part* largest = &kParts[0];
      for (const Part& part : kParts)
        if (d.*(part.field) > d.*(largest->field)) largest = &part;
      p.fillRect(QRect(slot.left(), base - 1, slot.width(), 1), over ? largest->over : largest->color);
    }
    if (over) {
      p.setPen(QPen(QColor(127, 0, 0), 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRect(slot.left(), base - barLength(i), slot.width(), barLength(i)).adjusted(0, 0, -1, -1));
    }
    if (numbers) {
      p.setPen(pal.color(QPalette::WindowText));
      p.drawText(QRect(slot.left(), base + 2, slot.width(), fm.height()), Qt::AlignCenter, QString::number(i));
    }
  }
  if (capacityOnScale()) {
    const int y = base - capacityLevel();
    p.setPen(QPen(QColor(198, 40, 40), 1, Qt::DashLine));
    p.drawLine(area.left(), y, area.right(), y);
    // The words above the line, or below it when the line is the scale's top.
    const QRect words = y - fm.height() - 1 >= area.top() ? QRect(area.left(), y - fm.height() - 1, area.width(), fm.height())
                                                          : QRect(area.left(), y + 1, area.width(), fm.height());
    p.drawText(words, Qt::AlignRight | Qt::AlignVCenter, tr("capacity %1").arg(bytesText(capacity_)));
  }

  // Legend.
  int x = area.left();
  const int y = base + fm.height() + 6;
  for (const Part& part : kParts) {
    p.fillRect(QRect(x, y + 2, fm.height() - 4, fm.height() - 4), part.color);
    x += fm.height();
    const QString name = tr(part.name);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(x, y, fm.horizontalAdvance(name) + 2, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, name);
    x += fm.horizontalAdvance(name) + 14;
  }
}

bool MemoryBars::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    for (int i = 0; i < barCount(); ++i)
      if (barRect(i).contains(help->pos())) {
        const sharding::DeviceMemory& d = devices_[size_t(i)];
        QString text = tr("device %1").arg(i);
        for (const Part& part : kParts)
          text += QStringLiteral("\n%1: %2").arg(tr(part.name), bytesText(d.*(part.field)));
        text += tr("\ntotal %1").arg(bytesText(d.total()));
        if (capacity_ > 0)
          text += tr(" of %1%2").arg(bytesText(capacity_), overCapacity(i) ? tr(": does not fit") : QString());
        QToolTip::showText(help->globalPos(), text, this);
        return true;
      }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace shardlab::ui
