#include "ui/mesh/device_grid.h"

#include <QHelpEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>
#include <algorithm>

#include "ui/mesh/format.h"

namespace shardlab::ui {

namespace {

constexpr int kMaxCell = 40;
constexpr int kMinCell = 4;
constexpr int kMargin = 4;

}  // namespace

DeviceGrid::DeviceGrid(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  setMouseTracking(true);
}

void DeviceGrid::setMesh(const sharding::Mesh& mesh) {
  mesh_ = mesh;
  updateGeometry();
  update();
}

int DeviceGrid::rows() const { return mesh_.axes().empty() ? 1 : int(mesh_.axes()[0].size); }

int DeviceGrid::columns() const { return int(mesh_.device_count()) / rows(); }

QString DeviceGrid::rowLabel() const {
  return mesh_.axes().empty() ? QString() : QString::fromStdString(mesh_.axes()[0].name);
}

QString DeviceGrid::columnLabel() const {
  QStringList names;
  for (size_t i = 1; i < mesh_.axes().size(); ++i) names << QString::fromStdString(mesh_.axes()[i].name);
  return names.join(QStringLiteral(" × "));
}

DeviceGrid::Geometry DeviceGrid::geometry() const {
  const QFontMetrics fm(font());
  const int left = kMargin + fm.height() + fm.horizontalAdvance(QString::number(rows() - 1)) + 6;
  const int top = kMargin + 2 * fm.height() + 2;
  const int availW = std::max(1, width() - left - kMargin);
  const int availH = std::max(1, height() - top - kMargin);
  Geometry g;
  g.cell = std::clamp(std::min(availW / columns(), availH / rows()), kMinCell, kMaxCell);
  g.grid = QRect(left, top, g.cell * columns(), g.cell * rows());
  return g;
}

QRect DeviceGrid::cellRect(int device) const {
  if (device < 0 || device >= deviceCount()) return {};
  const Geometry g = geometry();
  const int r = device / columns(), c = device % columns();
  return QRect(g.grid.left() + c * g.cell, g.grid.top() + r * g.cell, g.cell, g.cell);
}

QSize DeviceGrid::sizeHint() const {
  const QFontMetrics fm(font());
  const int cell = std::clamp(360 / std::max(1, columns()), 12, kMaxCell);
  return QSize(kMargin * 2 + 2 * fm.height() + 16 + cell * columns(), kMargin * 2 + 2 * fm.height() + 2 + cell * rows())
      .boundedTo(QSize(480, 320));
}

QSize DeviceGrid::minimumSizeHint() const {
  const QFontMetrics fm(font());
  return QSize(120, 3 * fm.height() + 2 * kMinCell * std::min(rows(), 8));
}

void DeviceGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const Geometry g = geometry();
  const QFontMetrics fm(font());
  const QPalette pal = palette();

  // Edges: the column axes on top with their coordinates, the row axis down the left side.
  p.setPen(pal.color(QPalette::WindowText));
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(QRect(g.grid.left(), kMargin, g.grid.width(), fm.height()), Qt::AlignCenter,
             columnLabel().isEmpty() ? counted(deviceCount(), tr("device"), tr("devices")) : columnLabel());
  if (!rowLabel().isEmpty()) {
    p.save();
    p.translate(kMargin, g.grid.top() + g.grid.height() / 2);
    p.rotate(-90);
    p.drawText(QRect(-g.grid.height() / 2, 0, g.grid.height(), fm.height()), Qt::AlignCenter, rowLabel());
    p.restore();
  }
  p.setFont(font());
  const bool numbers = g.cell >= fm.horizontalAdvance(QString::number(deviceCount() - 1)) + 4 && g.cell >= fm.height();
  if (numbers) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    for (int c = 0; c < columns(); ++c)
      p.drawText(QRect(g.grid.left() + c * g.cell, kMargin + fm.height(), g.cell, fm.height()), Qt::AlignCenter,
                 QString::number(c));
    for (int r = 0; r < rows(); ++r)
      p.drawText(
          QRect(kMargin + fm.height(), g.grid.top() + r * g.cell, g.grid.left() - kMargin - fm.height() - 4, g.cell),
          Qt::AlignRight | Qt::AlignVCenter, QString::number(r));
  }

  // Cells: one hue per row, so the groups along the second axis read at a glance.
  for (int d = 0; d < deviceCount(); ++d) {
    const QRect cell = cellRect(d).adjusted(1, 1, -1, -1);
    const int r = d / columns();
    const QColor fill = QColor::fromHsv((200 + r * 47) % 360, 70, 235);
    p.setPen(QPen(fill.darker(160), 1));
    p.setBrush(fill);
    p.drawRoundedRect(cell, 3, 3);
    if (numbers) {
      p.setPen(Qt::black);
      p.drawText(cell, Qt::AlignCenter, QString::number(d));
    }
  }
}

bool DeviceGrid::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    for (int d = 0; d < deviceCount(); ++d)
      if (cellRect(d).contains(help->pos())) {
        QStringList coords;
        const std::vector<int64_t> c = mesh_.coords(d);
        for (size_t i = 0; i < c.size(); ++i)
          coords << QStringLiteral("%1=%2").arg(QString::fromStdString(mesh_.axes()[i].name)).arg(c[i]);
        QToolTip::showText(
            help->globalPos(),
            tr("device %1 (%2)").arg(d).arg(coords.isEmpty() ? tr("the only device") : coords.join(", ")), this);
        return true;
      }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace shardlab::ui
