#include "ui/sharding/device_picker.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

#include "ui/sharding/sharding_format.h"

namespace shardlab::ui {

namespace {
constexpr int kGap = 2;
}

DevicePicker::DevicePicker(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  setCursor(Qt::PointingHandCursor);
}

void DevicePicker::setMesh(const sharding::Mesh& mesh) {
  mesh_ = mesh;
  if (current_ >= mesh_.device_count()) current_ = 0;
  updateGeometry();
  update();
}

void DevicePicker::setCurrent(int64_t device) {
  current_ = device;
  update();
}

void DevicePicker::setColors(std::vector<QColor> colors) {
  colors_ = std::move(colors);
  update();
}

// The first mesh axis runs down; the others, flattened in row-major order, across. A one-axis mesh
// of many devices wraps every kWrap devices, so the picture stays small.
namespace {
constexpr int64_t kWrap = 16;
}

int64_t DevicePicker::rows() const {
  const int64_t n = mesh_.device_count();
  if (mesh_.axes().size() >= 2) return mesh_.axes().front().size;
  return (n + kWrap - 1) / kWrap;
}

int64_t DevicePicker::cols() const {
  const int64_t n = mesh_.device_count();
  if (mesh_.axes().size() >= 2) return std::max<int64_t>(n / rows(), 1);
  return std::clamp<int64_t>(n, 1, kWrap);
}

QSize DevicePicker::cellSize() const {
  const QFontMetrics fm = fontMetrics();
  const int w = fm.horizontalAdvance(QString::number(std::max<int64_t>(mesh_.device_count() - 1, 0))) + 12;
  // Many devices shrink the cells so the picker stays small beside the table.
  const int side = cols() > 16 ? std::max(fm.height() - 2, 12) : std::max(w, fm.height() + 8);
  return {side, std::max(fm.height() + 4, side * 3 / 4)};
}

QSize DevicePicker::sizeHint() const {
  const QSize c = cellSize();
  return {int(cols()) * (c.width() + kGap) + kGap, int(rows()) * (c.height() + kGap) + kGap};
}

QRect DevicePicker::deviceRect(int64_t device) const {
  if (device < 0 || device >= mesh_.device_count()) return {};
  const QSize c = cellSize();
  const int64_t r = device / cols(), col = device % cols();
  return {kGap + int(col) * (c.width() + kGap), kGap + int(r) * (c.height() + kGap), c.width(), c.height()};
}

int64_t DevicePicker::deviceAt(const QPoint& pos) const {
  for (int64_t d = 0; d < mesh_.device_count(); ++d)
    if (deviceRect(d).contains(pos)) return d;
  return -1;
}

void DevicePicker::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  const bool showNumbers =
      cellSize().width() >= fontMetrics().horizontalAdvance(QString::number(mesh_.device_count() - 1)) + 4;
  for (int64_t d = 0; d < mesh_.device_count(); ++d) {
    const QRect r = deviceRect(d);
    const QColor fill =
        size_t(d) < colors_.size() && colors_[size_t(d)].isValid() ? colors_[size_t(d)] : pal.color(QPalette::Button);
    p.fillRect(r, fill);
    p.setPen(QPen(d == current_ ? pal.color(QPalette::Highlight) : pal.color(QPalette::Mid), d == current_ ? 3 : 1));
    p.drawRect(d == current_ ? r.adjusted(1, 1, -2, -2) : r.adjusted(0, 0, -1, -1));
    if (showNumbers) {
      p.setPen(shardfmt::readableTextOn(fill));
      p.drawText(r, Qt::AlignCenter, QString::number(d));
    }
  }
}

QString DevicePicker::deviceToolTip(int64_t device) const {
  if (device < 0 || device >= mesh_.device_count()) return {};
  return shardfmt::deviceName(mesh_, device, processes_);
}

void DevicePicker::mousePressEvent(QMouseEvent* e) {
  const int64_t d = deviceAt(e->position().toPoint());
  if (e->button() == Qt::LeftButton && d >= 0) emit deviceClicked(d);
  QWidget::mousePressEvent(e);
}

bool DevicePicker::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const int64_t d = deviceAt(he->pos());
    if (d >= 0) {
      QToolTip::showText(he->globalPos(), deviceToolTip(d), this, deviceRect(d));
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

}  // namespace shardlab::ui
