#include "ui/mesh/memory_bars.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

#include "ui/mesh/format.h"

namespace shardlab::ui {

namespace {

// The capacity line is drawn only when it is within this factor of the largest bar; beyond it,
// a line would squash every bar to nothing, so the capacity is stated in words instead.
constexpr double kCapacityScaleFactor = 4.0;

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
  update();
}

bool MemoryBars::overCapacity(int device) const {
  return device >= 0 && device < barCount() && capacity_ > 0 && devices_[size_t(device)].total() > capacity_;
}

double MemoryBars::scaleMax() const {
  double top = 0;
  for (const sharding::DeviceMemory& d : devices_) top = std::max(top, d.total());
  if (capacityOnScale()) top = std::max(top, capacity_);
  return top > 0 ? top * 1.08 : 1.0;
}

bool MemoryBars::capacityOnScale() const {
  double top = 0;
  for (const sharding::DeviceMemory& d : devices_) top = std::max(top, d.total());
  return capacity_ > 0 && capacity_ <= std::max(top, 1.0) * kCapacityScaleFactor;
}

QRect MemoryBars::plotArea() const {
  const QFontMetrics fm(font());
  // Top: the capacity caption; bottom: device numbers and the legend.
  return QRect(8, fm.height() + 8, std::max(1, width() - 16), std::max(1, height() - 3 * fm.height() - 16));
}

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
  const double top = scaleMax();

  double most = 0;
  for (const sharding::DeviceMemory& d : devices_) most = std::max(most, d.total());
  QString caption = tr("%1, up to %2 each").arg(counted(barCount(), tr("device"), tr("devices")), bytesText(most));
  if (capacity_ > 0) {
    caption += tr(" of %1 capacity").arg(bytesText(capacity_));
    if (!capacityOnScale())
      caption += tr(" (%1% used; capacity line off the scale)").arg(100.0 * most / capacity_, 0, 'f', 1);
  }
  p.setPen(pal.color(QPalette::WindowText));
  p.drawText(QRect(8, 4, width() - 16, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, caption);

  p.setPen(pal.color(QPalette::Mid));
  p.drawLine(area.bottomLeft(), area.bottomRight());
  if (devices_.empty()) {
    p.drawText(area, Qt::AlignCenter, tr("No memory figures: the design check did not get as far as sharding"));
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
      const int y0 = area.bottom() - int(area.height() * below / top);
      const int y1 = area.bottom() - int(area.height() * (below + v) / top);
      p.fillRect(QRect(QPoint(slot.left(), y1), QPoint(slot.right(), y0)), over ? part.over : part.color);
      below += v;
    }
    if (over) {
      const int y = area.bottom() - int(area.height() * below / top);
      p.setPen(QPen(QColor(127, 0, 0), 1));
      p.drawRect(QRect(QPoint(slot.left(), y), QPoint(slot.right(), area.bottom())).adjusted(0, 0, -1, -1));
    }
    if (numbers) {
      p.setPen(pal.color(QPalette::WindowText));
      p.drawText(QRect(slot.left(), area.bottom() + 2, slot.width(), fm.height()), Qt::AlignCenter, QString::number(i));
    }
  }
  if (capacityOnScale()) {
    const int y = area.bottom() - int(area.height() * capacity_ / top);
    p.setPen(QPen(QColor(198, 40, 40), 1, Qt::DashLine));
    p.drawLine(area.left(), y, area.right(), y);
    p.drawText(QRect(area.left(), y - fm.height() - 1, area.width(), fm.height()), Qt::AlignRight | Qt::AlignBottom,
               tr("capacity %1").arg(bytesText(capacity_)));
  }

  // Legend.
  int x = 8;
  const int y = area.bottom() + fm.height() + 6;
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
