#include "ui/training/chart_grid.h"

#include <QResizeEvent>
#include <algorithm>

namespace shardlab::ui {

namespace {
constexpr int kSpacing = 6;
}

ChartGrid::ChartGrid(QWidget* parent) : QWidget(parent) {}

void ChartGrid::addChart(QWidget* chart) {
  chart->setParent(this);
  charts_.push_back(chart);
  updateGeometry();
  place();
}

QSize ChartGrid::chartMinimum() const {
  QSize m(1, 1);
  for (const QWidget* c : charts_) m = m.expandedTo(c->minimumSizeHint());
  return m;
}

int ChartGrid::rows() const { return (int(charts_.size()) + columns_ - 1) / columns_; }

QSize ChartGrid::minimumSizeHint() const {
  const QSize m = chartMinimum();
  return {m.width(), rows() * m.height() + (rows() - 1) * kSpacing};
}

QSize ChartGrid::sizeHint() const {
  const QSize m = chartMinimum();
  return {2 * m.width() + kSpacing, std::max(minimumSizeHint().height(), 2 * m.height() + kSpacing)};
}

void ChartGrid::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  const int columns = width() >= 2 * chartMinimum().width() + kSpacing ? 2 : 1;
  if (columns != columns_) {
    columns_ = columns;
    updateGeometry();  // one column needs twice the height: the panel scrolls down instead of sideways
  }
  place();
}

void ChartGrid::place() {
  if (charts_.empty()) return;
  const int r = rows();
  const int w = (width() - (columns_ - 1) * kSpacing) / columns_, h = (height() - (r - 1) * kSpacing) / r;
  for (size_t i = 0; i < charts_.size(); ++i) {
    const int row = int(i) / columns_, col = int(i) % columns_;
    charts_[i]->setGeometry(col * (w + kSpacing), row * (h + kSpacing), w, h);
  }
}

}  // namespace shardlab::ui
