#include "ui/trace/run_comparison.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/trace/layer_time_model.h"
#include "ui/trace/step_breakdown_chart.h"
#include "ui/trace/trace_run.h"

namespace shardlab::ui {

namespace {
constexpr double kMaxSharedRatio = 5.0;
}  // namespace

RunComparison::RunComparison(QWidget* parent) : QWidget(parent) {
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  openBaseline_ = new QPushButton(tr("Open baseline…"), this);
  openBaseline_->setToolTip(tr("Compare the current run with a saved trace file"));
  swap_ = new QPushButton(tr("Swap"), this);
  swap_->setToolTip(tr("Show the baseline as the current run and the other way round"));
  connect(openBaseline_, &QPushButton::clicked, this, &RunComparison::openBaselineRequested);
  connect(swap_, &QPushButton::clicked, this, &RunComparison::swapRequested);

  baselineChart_ = new StepBreakdownChart(this);
  currentChart_ = new StepBreakdownChart(this);
  model_ = new LayerTimeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(LayerTimeModel::SortRole);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(LayerTimeModel::Current, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(LayerTimeModel::Layer, QHeaderView::Stretch);
  table_->setAlternatingRowColors(true);

  auto* top = new QHBoxLayout;
  top->addWidget(status_, 1);
  top->addWidget(openBaseline_);
  top->addWidget(swap_);
  auto* charts = new QSplitter(Qt::Horizontal, this);
  charts->addWidget(baselineChart_);
  charts->addWidget(currentChart_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(charts);
  split->addWidget(table_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  setRuns(nullptr, nullptr);
}

void RunComparison::setRuns(const TraceRun* baseline, const TraceRun* current) {
  const auto feed = [](StepBreakdownChart* chart, const TraceRun* run, const QString& role) {
    chart->setTitle(run ? QStringLiteral("%1: %2").arg(role, run->label()) : role);
    chart->setSummaries(run ? run->summaries() : std::vector<profiler::StepSummary>{});
    chart->setPeakFlops(run ? run->peakFlops() : 0.0);
  };
  feed(baselineChart_, baseline, tr("Baseline"));
  feed(currentChart_, current, tr("Current"));
  // One scale for both, so bar heights compare directly; unless the runs differ so much that the
  // faster one's bars would be slivers (a toy model against a large one), then each its own.
  const double a = baselineChart_->tallestUs(), b = currentChart_->tallestUs();
  const bool share = a > 0 && b > 0 && std::max(a, b) <= kMaxSharedRatio * std::min(a, b);
  baselineChart_->setMinimumScaleUs(share ? std::max(a, b) : 0.0);
  currentChart_->setMinimumScaleUs(share ? std::max(a, b) : 0.0);
  swap_->setEnabled(baseline && current);
  if (!baseline || !current) {
    status_->setText(!current ? tr("No run to compare yet: follow a training run or open a trace file.")
                              : tr("No baseline yet: the run shown before this one becomes the baseline, or open one."));
    model_->setRuns(baseline ? baseline->label() : QString(),
                    baseline ? layerTimePerStep(*baseline->spans()) : std::map<std::string, double>{},
                    current ? current->label() : QString(),
                    current ? layerTimePerStep(*current->spans()) : std::map<std::string, double>{});
    return;
  }
  status_->setText(tr("Baseline <b>%1</b> against current <b>%2</b>: time per step of each layer, summed over devices.")
                       .arg(baseline->label().toHtmlEscaped(), current->label().toHtmlEscaped()));
  model_->setRuns(baseline->label(), layerTimePerStep(*baseline->spans()), current->label(), layerTimePerStep(*current->spans()));
}

}  // namespace shardlab::ui
