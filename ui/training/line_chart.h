// A small line chart drawn with QPainter: several named series over a shared x axis, axes with
// "nice" ticks and labels, automatic scaling, a legend, and a hover readout. Built for live
// training curves: appending is amortised O(1) and each series keeps at most kMaxStored buckets
// of equally many points (when full, neighbours merge pairwise, keeping their min/max band), and
// drawing collapses what falls in one pixel column, so a long run costs no more to draw than a short one; repaints are
// also rate-limited.
#pragma once

#include <QColor>
#include <QPoint>
#include <QString>
#include <QTimer>
#include <QVector>
#include <QWidget>
#include <limits>
#include <optional>
#include <utility>

namespace shardlab::ui {

class LineChart : public QWidget {
  Q_OBJECT

 public:
  // Most buckets one series keeps; past it, neighbouring buckets merge two by two.
  static constexpr int kMaxStored = 2048;

  explicit LineChart(const QString& title, QWidget* parent = nullptr);

  // Returns the new series' index. `pointMarkers` draws a dot at each stored point (for sparse
  // series such as evaluations); without `joined` only the dots (for marks such as skipped steps).
  int addSeries(const QString& name, const QColor& color, bool pointMarkers = false, bool joined = true);
  // Appends (x, y) to a series; x should not decrease within a series. Non-finite values are
  // skipped (a loss of NaN does not wreck the axis).
  void append(int series, double x, double y);
  // Removes every point (series stay).
  void clear();

  void setXLabel(const QString& label);
  void setYLabel(const QString& label);
  // The y axis always reaches zero (times, rates) when set.
  void setIncludeZero(bool include);
  // The y axis never leaves [lo, hi] (accuracy: 0..1); auto-scaling still zooms inside it.
  void setYLimits(double lo, double hi);
  // x values are whole numbers (steps): ticks fall on integers.
  void setIntegerX(bool integer);
  // What an empty chart says ("No data yet" unless set).
  void setPlaceholder(const QString& text);

  QString title() const { return title_; }
  int seriesCount() const { return int(series_.size()); }
  QString seriesName(int series) const;
  int seriesIndex(const QString& name) const;  // -1 if absent
  // Every point ever appended to the series (finite ones), and how many buckets it holds now.
  qint64 pointCount(int series) const;
  int storedCount(int series) const;
  // The last point appended to a series.
  std::optional<QPointF> lastPoint(int series) const;
  // What the hover readout shows now ("" when the mouse is not over the plot).
  QString hoverText() const;
  // The y axis as the next paint draws it: its ends and its ticks.
  std::pair<double, double> yAxisRange() const;
  QVector<double> yTicks() const;

  QSize sizeHint() const override { return {420, 240}; }
  QSize minimumSizeHint() const override { return {220, 140}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  // n points merged into one: their mean position and their y range.
  struct Bucket {
    double x = 0, y = 0, lo = 0, hi = 0;
    qint64 n = 1;
  };
  struct Series {
    QString name;
    QColor color;
    bool markers = false;
    bool joined = true;
    QVector<Bucket> buckets;
    qint64 appended = 0;
    qint64 stride = 1;  // points per bucket; doubles at each compaction
    QPointF last;
  };
  // The data ranges and plot rectangle a paint (or a hover) works with.
  struct Frame {
    QRectF plot;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    QVector<double> xTicks, yTicks;
    double xStep = 1, yStep = 1;
    bool empty = true;
    double px(double x) const { return plot.left() + (x - x0) / (x1 - x0) * plot.width(); }
    double py(double y) const { return plot.bottom() - (y - y0) / (y1 - y0) * plot.height(); }
    double dataX(double px) const { return x0 + (px - plot.left()) / plot.width() * (x1 - x0); }
  };

  Frame frame() const;
  void scheduleRepaint();
  static void compact(QVector<Bucket>& buckets);
  // The bucket of `s` nearest to x, or -1.
  static int nearest(const Series& s, double x);
  // The x of the stored point nearest to x over every series (what the hover snaps to), or NaN.
  double snapX(double x) const;

  QString title_, xLabel_, yLabel_, placeholder_;
  QVector<Series> series_;
  bool includeZero_ = false, integerX_ = false;
  double limitLo_ = -std::numeric_limits<double>::infinity();
  double limitHi_ = std::numeric_limits<double>::infinity();
  std::optional<QPoint> hover_;
  // Appends mark the chart dirty; this timer repaints at most every kRepaintMs.
  QTimer repaint_;
};

}  // namespace shardlab::ui
