// Two runs side by side: the baseline (the run shown before, or a file) and the current one, each
// with its step breakdown on a shared time scale, and a table of per-layer time per step in both
// with the difference, sortable, so "what got slower" is one click on a column header.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace shardlab::ui {

class LayerTimeModel;
class StepBreakdownChart;
class TraceRun;

class RunComparison : public QWidget {
  Q_OBJECT

 public:
  explicit RunComparison(QWidget* parent = nullptr);

  // Either may be null (nothing to compare yet); the runs are read now, not kept.
  void setRuns(const TraceRun* baseline, const TraceRun* current);

  LayerTimeModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  StepBreakdownChart* baselineChart() const { return baselineChart_; }
  StepBreakdownChart* currentChart() const { return currentChart_; }
  QPushButton* openBaselineButton() const { return openBaseline_; }
  QPushButton* swapButton() const { return swap_; }

 signals:
  void openBaselineRequested();
  void swapRequested();

 private:
  QLabel* status_ = nullptr;
  QPushButton* openBaseline_ = nullptr;
  QPushButton* swap_ = nullptr;
  StepBreakdownChart* baselineChart_ = nullptr;
  StepBreakdownChart* currentChart_ = nullptr;
  LayerTimeModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
};

}  // namespace shardlab::ui
