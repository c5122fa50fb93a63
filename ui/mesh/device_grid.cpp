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

QFont DeviceGrid::captionFont() const {
  QFont bold = font();
  bold.setBold(true);
  return bold;
}

QString DeviceGrid::columnCaption() const {
  return columnLabel().isEmpty() ? counted(deviceCount(), tr("device"), tr("devices")) : columnLabel();
}

QRect DeviceGrid::columnCaptionRect() const {
  // Centred over the grid, but as wide as its words: a grid one cell wide must not cut
  // "8 devices" to "devic". Kept inside the widget.
  const Geometry g = geometry();
  const int want = QFontMetrics(captionFont()).horizontalAdvance(columnCaption()) + 4;
  const int w = std::min(std::max(want, g.grid.width()), std::max(1, width() - 2 * kMargin));
  const int x = std::clamp(g.grid.center().x() - w / 2, kMargin, std::max(kMargin, width() - kMargin - w));
  return QRect(x, kMargin, w, QFontMetrics(captionFont()).height());
}

int DeviceGrid::rowCaptionLength() const {
  const Geometry g = geometry();
  const int want = QFontMetrics(captionFont()).horizontalAdvance(rowLabel()) + 4;
  return std::min(std::max(want, g.grid.height()), std::max(1, height() - 2 * kMargin));
}

QSize DeviceGrid::sizeHint() const {
  const QFontMetrics fm(font());
  const QFontMetrics bold(captionFont());
  const int cell = std::clamp(360 / std::max(1, columns()), 12, kMaxCell);
  const int w = std::max(kMargin * 2 + 2 * fm.height() + 16 + cell * columns(), bold.horizontalAdvance(columnCaption()) + 2 * kMargin + 4);
  const int h = std::max(kMargin * 2 + 2 * fm.height() + 2 + cell * rows(), bold.horizontalAdvance(rowLabel()) + 2 * kMargin + 4);
  return QSize(w, h).boundedTo(QSize(480, 320));
}

QSize DeviceGrid::minimumSizeHint() const {
  const QFontMetrics fm(font());
  const QFontMetrics bold(captionFont());
  return QSize(std::max(120, bold.horizontalAdvance(columnCaption()) + 2 * kMargin + 4),
               std::max(3 * fm.height() + 2 * kMinCell * std::min(rows(), 8), bold.horizontalAdvance(rowLabel()) + 2 * kMargin + 4));
}

void DeviceGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const Geometry g = geometry();
  const QFontMetrics fm(font());
  const QPalette pal = palette();

  // Edges: the column axes on top with their coordinates, the row axis down the left side.
  p.setPen(pal.color(QPalette::WindowText));
  p.setFont(captionFont());
  const QFontMetrics boldFm(captionFont());
  const QRect top = columnCaptionRect();
  p.drawText(top, Qt::AlignCenter, boldFm.elidedText(columnCaption(), Qt::ElideRight, top.width()));
  if (!rowLabel().isEmpty()) {
    const int length = rowCaptionLength();
    const int centre = std::clamp(g.grid.center().y(), kMargin + length / 2, std::max(kMargin + length / 2, height() - kMargin - length / 2));
    p.save();
    p.translate(kMargin, centre);
    p.rotate(-90);
    p.drawText(QRect(-length / 2, 0, length, boldFm.height()), Qt::AlignCenter,
               boldFm.elidedText(rowLabel(), Qt::ElideRight, length));
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
