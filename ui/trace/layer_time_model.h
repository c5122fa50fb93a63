// The comparison table's model: per layer, the time its spans take per step in a baseline run and
// in the current one (span durations summed over every device, divided by the run's traced step
// count), the difference and the change in percent. Spans without a layer are grouped as "(data)"
// (the loader's wait) and "(no layer)" (the loss and other glue).
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

// Per layer node: microseconds per step, summed over devices; step spans are left out (they are
// the whole step). Steps counted are those the spans cover.
std::map<std::string, double> layerTimePerStep(const std::vector<profiler::Span>& spans);

class LayerTimeModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Layer, Baseline, Current, Difference, Change, ColumnCount };
  // The numeric value of a cell (NaN where a run lacks the layer), for sorting and tests.
  static constexpr int ValueRole = Qt::UserRole + 1;
  // Like ValueRole, with a missing value as the lowest number (NaN does not sort).
  static constexpr int SortRole = Qt::UserRole + 2;

  explicit LayerTimeModel(QObject* parent = nullptr);

  void setRuns(const QString& baselineLabel, std::map<std::string, double> baseline, const QString& currentLabel,
               std::map<std::string, double> current);
  void clear();

  // The row of a layer, or -1.
  int rowOf(const QString& layer) const;
  QString layerAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString layer;
    double baseline = NAN, current = NAN;
  };
  double value(const Row& r, int column) const;

  QString baselineLabel_, currentLabel_;
  std::vector<Row> rows_;
};

}  // namespace shardlab::ui
