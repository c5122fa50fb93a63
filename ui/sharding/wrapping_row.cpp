#include "ui/sharding/wrapping_row.h"

#include <QWidget>
#include <algorithm>

namespace shardlab::ui {

WrappingRow::WrappingRow(QWidget* parent, int spacing) : QLayout(parent), gap_(spacing) { setContentsMargins(0, 0, 0, 0); }

WrappingRow::~WrappingRow() {
  for (QLayoutItem* item : items_) delete item;
}

void WrappingRow::addItem(QLayoutItem* item) { items_.push_back(item); }

QLayoutItem* WrappingRow::itemAt(int index) const {
  return index >= 0 && index < count() ? items_[size_t(index)] : nullptr;
}

QLayoutItem* WrappingRow::takeAt(int index) {
  if (index < 0 || index >= count()) return nullptr;
  QLayoutItem* item = items_[size_t(index)];
  items_.erase(items_.begin() + index);
  return item;
}

int WrappingRow::heightForWidth(int width) const { return arrange(QRect(0, 0, width, 0), false); }

QSize WrappingRow::minimumSize() const {
  QSize s(0, 0);
  for (const QLayoutItem* item : items_) s = s.expandedTo(item->minimumSize());
  const QMargins m = contentsMargins();
  return s + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize WrappingRow::sizeHint() const {
  int w = 0, h = 0;
  for (const QLayoutItem* item : items_) {
    w += (w > 0 ? gap_ : 0) + item->sizeHint().width();
    h = std::max(h, item->sizeHint().height());
  }
  const QMargins m = contentsMargins();
  return {w + m.left() + m.right(), h + m.top() + m.bottom()};
}

void WrappingRow::setGeometry(const QRect& rect) {
  QLayout::setGeometry(rect);
  arrange(rect, true);
}

int WrappingRow::arrange(const QRect& rect, bool apply) const {
  const QRect area = rect.marginsRemoved(contentsMargins());
  int x = area.x(), y = area.y(), line = 0;
  for (QLayoutItem* item : items_) {
    if (item->isEmpty()) continue;
    const QSize want = item->sizeHint().boundedTo(QSize(area.width(), item->sizeHint().height()))
                           .expandedTo(item->minimumSize());
    if (x > area.x() && x + want.width() > area.right() + 1) {  // does not fit after the last: a new line
      x = area.x();
      y += line + gap_ / 2;
      line = 0;
    }
    if (apply) item->setGeometry(QRect(QPoint(x, y), want));
    x += want.width() + gap_;
    line = std::max(line, want.height());
  }
  const QMargins m = contentsMargins();
  return y + line - rect.y() + m.bottom();
}

}  // namespace shardlab::ui
