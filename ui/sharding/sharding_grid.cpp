#include "ui/sharding/sharding_grid.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QTextOption>
#include <QToolTip>
#include <algorithm>
#include <map>
#include <set>

#include "ui/sharding/sharding_format.h"

namespace shardlab::ui {

namespace {

constexpr int kPad = 8;
// The grid keeps the array's proportions, but never thinner than 1:4 either way, so a
// (8, 1024) activation is still a readable strip.
constexpr double kMaxAspect = 4.0;
constexpr int kMaxGridWidth = 960, kMaxGridHeight = 560;

}  // namespace

ShardingGrid::ShardingGrid(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_Hover);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

std::pair<int, int> ShardingGrid::defaultDims(const sharding::ArraySharding& array, const sharding::Mesh& mesh) {
  const int rank = int(array.shape.size());
  if (rank == 0) return {-1, -1};
  if (rank == 1) return {-1, 0};
  std::vector<int> picked;
  for (int d = 0; d < rank && picked.size() < 2; ++d)
    if (sharding::shards_along(array.spec, size_t(d), mesh) > 1) picked.push_back(d);
  for (int d = rank - 1; d >= 0 && picked.size() < 2; --d)
    if (std::find(picked.begin(), picked.end(), d) == picked.end()) picked.push_back(d);
  std::sort(picked.begin(), picked.end());
  return {picked[0], picked[1]};
}

void ShardingGrid::clear() {
  hasArray_ = false;
  array_ = {};
  cells_.clear();
  rows_ = cols_ = 0;
  rowDim_ = colDim_ = -1;
  hovered_ = -1;
  updateGeometry();
  update();
}

void ShardingGrid::setArray(const sharding::ArraySharding& array, const sharding::Mesh& mesh, int rowDim, int colDim) {
  clear();
  array_ = array;
  mesh_ = mesh;
  if (!array.error.empty()) return;
  const int rank = int(array.shape.size());
  if (rank >= 2) {
    if (rowDim < 0 || colDim < 0 || rowDim >= rank || colDim >= rank || rowDim == colDim)
      std::tie(rowDim, colDim) = defaultDims(array, mesh);
    rowDim_ = rowDim;
    colDim_ = colDim;
  } else {
    rowDim_ = -1;
    colDim_ = rank == 1 ? 0 : -1;
  }
  rows_ = rowDim_ >= 0 ? sharding::shards_along(array.spec, size_t(rowDim_), mesh) : 1;
  cols_ = colDim_ >= 0 ? sharding::shards_along(array.spec, size_t(colDim_), mesh) : 1;
  // Blocks that differ only along dimensions not drawn fall into one cell: it lists all their devices.
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> byCell;
  for (const sharding::BlockOwners& o : sharding::block_owners(array.spec, array.shape, mesh)) {
    const int64_t r = rowDim_ >= 0 ? o.block.index[size_t(rowDim_)] : 0;
    const int64_t c = colDim_ >= 0 ? o.block.index[size_t(colDim_)] : 0;
    byCell[{r, c}].insert(o.devices.begin(), o.devices.end());
  }
  for (const auto& [rc, devices] : byCell) {
    Cell cell;
    cell.row = rc.first;
    cell.col = rc.second;
    cell.devices.assign(devices.begin(), devices.end());
    cells_.push_back(std::move(cell));
  }
  relabel();
  hasArray_ = true;
  updateGeometry();
  update();
}

void ShardingGrid::relabel() {
  for (Cell& c : cells_)
    c.label = shardfmt::deviceLabel(c.devices) + shardfmt::processesText(c.devices, mesh_.device_count(), processes_);
}

void ShardingGrid::setProcesses(int processes) {
  if (processes == processes_) return;
  processes_ = processes;
  relabel();
  updateGeometry();
  update();
}

QString ShardingGrid::cellLabel(int64_t row, int64_t col) const {
  for (const Cell& c : cells_)
    if (c.row == row && c.col == col) return c.label;
  return {};
}

int ShardingGrid::cellOfDevice(int64_t device) const {
  for (size_t i = 0; i < cells_.size(); ++i)
    if (std::binary_search(cells_[i].devices.begin(), cells_[i].devices.end(), device)) return int(i);
  return -1;
}

void ShardingGrid::setHighlightDevice(int64_t device) {
  if (highlight_ == device) return;
  highlight_ = device;
  update();
}

bool ShardingGrid::dark() const { return palette().color(QPalette::Window).lightness() < 128; }

QColor ShardingGrid::cellFill(int cell) const {
  if (cell < 0 || cell >= int(cells_.size())) return {};
  return shardfmt::deviceSetColor(cells_[size_t(cell)].devices, dark());
}

QColor ShardingGrid::cellTextColor(int cell) const {
  if (cell < 0 || cell >= int(cells_.size())) return {};
  return shardfmt::readableTextOn(cellFill(cell));
}

QString ShardingGrid::dimCaption(int dim, const QString& arrow) const {
  if (dim < 0) return {};
  const auto& axes = array_.spec.axes_of(size_t(dim));
  const QString dimension = shardfmt::dimText(array_, size_t(dim));
  if (axes.empty()) return tr("not split %1 · %2").arg(arrow, dimension);
  const int64_t n = sharding::shards_along(array_.spec, size_t(dim), mesh_);
  return tr("%1 %2 · %3 in %4 blocks of %5")
      .arg(shardfmt::axesText(axes), arrow, dimension)
      .arg(n)
      .arg(array_.shape[size_t(dim)] / n);
}

QString ShardingGrid::rowCaption() const { return hasArray_ ? dimCaption(rowDim_, QStringLiteral("↓")) : QString(); }

QString ShardingGrid::columnCaption() const {
  if (!hasArray_) return {};
  if (colDim_ < 0) return tr("a scalar: every device holds the one value");
  return dimCaption(colDim_, QStringLiteral("→"));
}

QStringList ShardingGrid::otherDimsNotes() const {
  QStringList notes;
  if (!hasArray_) return notes;
  for (size_t k = 0; k < array_.shape.size(); ++k) {
    if (int(k) == rowDim_ || int(k) == colDim_) continue;
    const int64_t n = sharding::shards_along(array_.spec, k, mesh_);
    if (n == 1)
      notes << tr("%1: not split, each cell holds all of it").arg(shardfmt::dimText(array_, k));
    else
      notes << tr("%1: split %2 ways over %3, each cell lists the devices of all %2 blocks along it")
                   .arg(shardfmt::dimText(array_, k))
                   .arg(n)
                   .arg(shardfmt::axesText(array_.spec.axes_of(k)));
  }
  return notes;
}

QSize ShardingGrid::cellMinimum() const {
  const QFontMetrics fm = fontMetrics();
  int widest = 0;
  for (const Cell& c : cells_) widest = std::max(widest, fm.horizontalAdvance(c.label));
  return {std::clamp(widest + 12, 36, 140), fm.height() + 14};
}

QRect ShardingGrid::gridRect() const {
  if (!hasArray_ || cells_.empty()) return {};
  const int caption = fontMetrics().height() + kPad;
  const QRect area = rect().adjusted(kPad + (rowDim_ >= 0 ? caption : 0), kPad + caption, -kPad, -kPad);
  if (area.width() <= 0 || area.height() <= 0) return {};
  // Proportional to the array's extents along the two drawn dimensions (clamped).
  const double colExtent = colDim_ >= 0 ? double(array_.shape[size_t(colDim_)]) : 1.0;
  const double rowExtent = rowDim_ >= 0   ? double(array_.shape[size_t(rowDim_)])
                           : colDim_ >= 0 ? colExtent / kMaxAspect
                                          : 1.0;
  const double aspect = std::clamp(colExtent / rowExtent, 1.0 / kMaxAspect, kMaxAspect);
  double w = std::min<double>({double(area.width()), area.height() * aspect, double(kMaxGridWidth)});
  double h = std::min<double>(w / aspect, kMaxGridHeight);
  w = std::min(w, h * aspect);
  // Never so small that labels vanish, as long as the widget has the room.
  const QSize minCell = cellMinimum();
  w = std::max(w, std::min<double>(area.width(), double(cols_ * minCell.width())));
  h = std::max(h, std::min<double>(area.height(), double(rows_ * minCell.height())));
  const int wi = int(w), hi = int(h);
  return {area.x() + (area.width() - wi) / 2, area.y() + (area.height() - hi) / 2, wi, hi};
}

QRect ShardingGrid::cellRect(int cell) const {
  if (cell < 0 || cell >= int(cells_.size())) return {};
  const QRect g = gridRect();
  if (g.isEmpty()) return {};
  const Cell& c = cells_[size_t(cell)];
  const int x0 = g.x() + int(g.width() * c.col / cols_), x1 = g.x() + int(g.width() * (c.col + 1) / cols_);
  const int y0 = g.y() + int(g.height() * c.row / rows_), y1 = g.y() + int(g.height() * (c.row + 1) / rows_);
  return QRect(QPoint(x0, y0), QPoint(x1 - 1, y1 - 1));
}

int ShardingGrid::cellAt(const QPoint& pos) const {
  for (size_t i = 0; i < cells_.size(); ++i)
    if (cellRect(int(i)).contains(pos)) return int(i);
  return -1;
}

QString ShardingGrid::cellToolTip(int cell) const {
  if (cell < 0 || cell >= int(cells_.size())) return {};
  const Cell& c = cells_[size_t(cell)];
  QStringList lines;
  lines << (c.devices.size() == 1 ? tr("%1 (one device)").arg(c.label)
                                  : tr("%1 (%2 devices)").arg(c.label).arg(c.devices.size()));
  auto range = [&](int dim, int64_t index) {
    const int64_t len = array_.shard[size_t(dim)];
    return QStringLiteral("%1:%2").arg(index * len).arg((index + 1) * len);
  };
  if (rowDim_ >= 0)
    lines << tr("rows: %1, elements %2").arg(shardfmt::dimText(array_, size_t(rowDim_)), range(rowDim_, c.row));
  if (colDim_ >= 0)
    lines << tr("columns: %1, elements %2").arg(shardfmt::dimText(array_, size_t(colDim_)), range(colDim_, c.col));
  lines << otherDimsNotes();
  lines << tr("shard shape %1 of %2").arg(shardfmt::shapeText(array_.shard), shardfmt::shapeText(array_.shape));
  lines << tr("%1 per device, %2").arg(shardfmt::exactBytesText(array_.bytes_per_device), QString(dtype_name(array_.dtype)));
  return lines.join('\n');
}

QSize ShardingGrid::sizeHint() const {
  const QSize m = cellMinimum();
  const int caption = fontMetrics().height() + kPad;
  const int w = int(std::clamp<int64_t>(std::max<int64_t>(cols_, 1) * std::max(m.width(), 110), 240, kMaxGridWidth));
  const int h = int(std::clamp<int64_t>(std::max<int64_t>(rows_, 1) * std::max(m.height(), 56), 120, kMaxGridHeight));
  return {w + 2 * kPad + caption, h + 2 * kPad + caption};
}

QSize ShardingGrid::minimumSizeHint() const { return {220, 120}; }

void ShardingGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  const QPalette pal = palette();
  if (!hasArray_ || cells_.empty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Choose an array to see how it splits over the devices"));
    return;
  }
  const QRect g = gridRect();
  if (g.isEmpty()) return;
  const QFontMetrics fm = fontMetrics();

  // Edges: which mesh axes split the columns (top) and the rows (left, read bottom-up). A caption
  // longer than its edge stays centred on the grid but may use the widget's whole width.
  p.setPen(pal.color(QPalette::WindowText));
  const QString top = columnCaption();
  const int tw = std::min(fm.horizontalAdvance(top) + 6, width() - 2 * kPad);
  const int tx = std::clamp(g.center().x() - tw / 2, kPad, std::max(kPad, width() - kPad - tw));
  p.drawText(QRect(tx, g.y() - fm.height() - 4, tw, fm.height()), Qt::AlignCenter,
             fm.elidedText(top, Qt::ElideRight, tw));
  if (rowDim_ >= 0) {
    const QString left = rowCaption();
    const int lh = std::min(fm.horizontalAdvance(left) + 6, height() - 2 * kPad);
    const int bottom = std::clamp(g.center().y() + lh / 2, kPad + lh, std::max(kPad + lh, height() - kPad));
    p.save();
    p.translate(g.x() - 4, bottom);
    p.rotate(-90);
    p.drawText(QRect(0, -fm.height(), lh, fm.height()), Qt::AlignCenter, fm.elidedText(left, Qt::ElideRight, lh));
    p.restore();
  }

  const QColor border = pal.color(QPalette::WindowText);
  for (size_t i = 0; i < cells_.size(); ++i) {
    const QRect r = cellRect(int(i));
    QColor fill = cellFill(int(i));
    if (int(i) == hovered_) fill = dark() ? fill.lighter(125) : fill.darker(108);
    p.fillRect(r, fill);
    p.setPen(QPen(border, 1));
    p.drawRect(r);
    const QRect text = r.adjusted(4, 2, -4, -2);
    p.setPen(cellTextColor(int(i)));
    const QString& label = cells_[i].label;
    if (fm.horizontalAdvance(label) <= text.width()) {
      p.drawText(text, Qt::AlignCenter, label);
    } else {
      // A long device list wraps at its commas, and elides only when even that does not fit.
      QTextOption opt(Qt::AlignCenter);
      opt.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
      const QString wrappable = QString(label).replace(',', QStringLiteral(", "));
      const QRect need = fm.boundingRect(text, Qt::AlignCenter | Qt::TextWrapAnywhere, wrappable);
      if (need.height() <= text.height())
        p.drawText(QRectF(text), wrappable, opt);
      else
        p.drawText(text, Qt::AlignCenter, fm.elidedText(label, Qt::ElideRight, text.width()));
    }
  }
  // The chosen device's block, outlined on top of everything.
  const int h = cellOfDevice(highlight_);
  if (highlight_ >= 0 && h >= 0) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cellRect(h).adjusted(1, 1, -1, -1));
  }
}

bool ShardingGrid::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const int cell = cellAt(he->pos());
    if (cell >= 0)
      QToolTip::showText(he->globalPos(), cellToolTip(cell), this, cellRect(cell));
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void ShardingGrid::mouseMoveEvent(QMouseEvent* e) {
  const int cell = cellAt(e->position().toPoint());
  if (cell != hovered_) {
    hovered_ = cell;
    update();
  }
  QWidget::mouseMoveEvent(e);
}

void ShardingGrid::mousePressEvent(QMouseEvent* e) {
  const int cell = cellAt(e->position().toPoint());
  if (e->button() == Qt::LeftButton && cell >= 0) emit cellClicked(cell);
  QWidget::mousePressEvent(e);
}

void ShardingGrid::leaveEvent(QEvent* e) {
  if (hovered_ >= 0) {
    hovered_ = -1;
    update();
  }
  QWidget::leaveEvent(e);
}

}  // namespace shardlab::ui
