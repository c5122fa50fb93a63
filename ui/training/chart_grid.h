// The Training tab's charts, two to a row where the panel is wide enough for two and one to a row
// where it is not: a narrow panel (a 1024x768 window) stacks them and scrolls down, rather than
// cutting the right-hand ones off and scrolling sideways.
#pragma once

#include <QWidget>
#include <vector>

namespace shardlab::ui {

class ChartGrid : public QWidget {
  Q_OBJECT

 public:
  explicit ChartGrid(QWidget* parent = nullptr);
  // Charts fill the grid row by row, in the order added.
  void addChart(QWidget* chart);
  int columns() const { return columns_; }

  // As narrow as one chart, whatever the columns: a width that allows only one must stay reachable.
  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  QSize chartMinimum() const;
  int rows() const;
  void place();

  std::vector<QWidget*> charts_;
  int columns_ = 2;
};

}  // namespace shardlab::ui
