// The timeline's legend: a swatch and a name per span category, and what a step marker looks like.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class TraceLegend : public QWidget {
  Q_OBJECT

 public:
  explicit TraceLegend(QWidget* parent = nullptr);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return sizeHint(); }

 protected:
  void paintEvent(QPaintEvent* e) override;
};

}  // namespace shardlab::ui
