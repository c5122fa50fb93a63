#include "ui/trace/trace_tab.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/document/project_document.h"
#include "ui/trace/run_comparison.h"
#include "ui/trace/span_arrays.h"
#include "ui/trace/step_breakdown_chart.h"
#include "ui/trace/timeline_view.h"
#include "ui/trace/trace_legend.h"
#include "ui/trace/trace_style.h"
#include "ui/trace/trace_run.h"

namespace shardlab::ui {

namespace {

// Often enough to look live, rarely enough that copying a large trace stays a small part of the UI
// thread's time.
constexpr int kPollMs = 400;

QToolButton* toolButton(const QString& text, const QString& tip, QWidget* parent) {
  auto* b = new QToolButton(parent);
  b->setText(text);
  b->setToolTip(tip);
  b->setToolButtonStyle(Qt::ToolButtonTextOnly);
  return b;
}

}  // namespace

TraceTab::TraceTab(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  auto* open = toolButton(tr("Open…"), tr("Open a trace file (Chrome trace JSON written by shardlab)"), this);
  auto* exportButton = toolButton(tr("Export…"), tr("Save the shown run as Chrome trace JSON (Perfetto and chrome://tracing open it)"), this);
  runLabel_ = new QLabel(this);
  runLabel_->setTextFormat(Qt::RichText);
  runLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  live_ = toolButton(tr("Live"), tr("Keep the newest step in view while the run records"), this);
  live_->setCheckable(true);
  auto* fit = toolButton(tr("Fit"), tr("Show the whole trace (Home)"), this);
  auto* zoomIn = toolButton(tr("+"), tr("Zoom in (+, Ctrl+wheel)"), this);
  auto* zoomOut = toolButton(tr("−"), tr("Zoom out (-, Ctrl+wheel)"), this);
  step_ = new QSpinBox(this);
  step_->setPrefix(tr("step "));
  step_->setToolTip(tr("The step to zoom to"));
  auto* zoomStep = toolButton(tr("Zoom to step"), tr("Show the chosen step whole"), this);

  auto* bar = new QHBoxLayout;
  bar->addWidget(open);
  bar->addWidget(exportButton);
  bar->addSpacing(8);
  bar->addWidget(runLabel_, 1);
  bar->addWidget(live_);
  bar->addWidget(fit);
  bar->addWidget(zoomOut);
  bar->addWidget(zoomIn);
  bar->addWidget(step_);
  bar->addWidget(zoomStep);
  bar->addSpacing(8);
  bar->addWidget(new TraceLegend(this));

  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("QLabel { color: #c0392b; }"));
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();

  timeline_ = new TimelineView(this);
  timeline_->setArraysOf([this](const profiler::Span& s) { return openableArrayNames(s, doc_->design()); });

  // The span panel, beside the timeline.
  auto* spanPanel = new QWidget(this);
  spanPanel->setObjectName("spanPanel");
  spanFacts_ = new QLabel(spanPanel);
  spanFacts_->setObjectName("spanFacts");
  spanFacts_->setTextFormat(Qt::RichText);
  spanFacts_->setWordWrap(true);
  spanFacts_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  spanFacts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  spanArrays_ = new QListWidget(spanPanel);
  spanArrays_->setObjectName("spanArrays");
  spanArrays_->setToolTip(tr("Click an array to open it in the Sharding tab"));
  spanArrays_->setSelectionMode(QAbstractItemView::NoSelection);
  auto* spanLayout = new QVBoxLayout(spanPanel);
  spanLayout->setContentsMargins(4, 0, 0, 0);
  spanLayout->addWidget(spanFacts_);
  spanLayout->addWidget(spanArrays_, 1);
  spanPanel->setMinimumWidth(260);
  showSpanDetails();

  // The step breakdown page: which device, the peak MFU is measured against, the chart.
  auto* breakdownPage = new QWidget(this);
  device_ = new QComboBox(breakdownPage);
  device_->setToolTip(tr("Show one device's steps, or the mean over devices"));
  device_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  peak_ = new QDoubleSpinBox(breakdownPage);
  peak_->setRange(0, 1e9);
  peak_->setDecimals(1);
  peak_->setSuffix(tr(" GFLOP/s"));
  peak_->setSpecialValueText(tr("unknown"));
  peak_->setToolTip(tr("The machine's peak FLOP/s, which MFU is measured against (all devices together; "
                       "each virtual device gets its share). A live run brings the measured GEMM peak."));
  breakdown_ = new StepBreakdownChart(breakdownPage);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Device:"), breakdownPage));
  controls->addWidget(device_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Peak:"), breakdownPage));
  controls->addWidget(peak_);
  controls->addStretch(1);
  auto* breakdownLayout = new QVBoxLayout(breakdownPage);
  breakdownLayout->setContentsMargins(4, 4, 4, 4);
  breakdownLayout->addLayout(controls);
  breakdownLayout->addWidget(breakdown_, 1);

  comparison_ = new RunComparison(this);
  views_ = new QTabWidget(this);
  views_->addTab(breakdownPage, tr("Step breakdown"));
  views_->addTab(comparison_, tr("Compare runs"));

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(timeline_);
  split->addWidget(views_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  // The span panel takes the tab's full height, beside the timeline and the views below it.
  auto* sideSplit = new QSplitter(Qt::Horizontal, this);
  sideSplit->addWidget(split);
  sideSplit->addWidget(spanPanel);
  sideSplit->setStretchFactor(0, 4);
  sideSplit->setStretchFactor(1, 1);
  sideSplit->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(bar);
  layout->addWidget(error_);
  layout->addWidget(sideSplit, 1);

  connect(open, &QToolButton::clicked, this, &TraceTab::openFileDialog);
  connect(exportButton, &QToolButton::clicked, this, &TraceTab::exportDialog);
  connect(live_, &QToolButton::toggled, timeline_, &TimelineView::setLive);
  connect(timeline_, &TimelineView::liveChanged, live_, &QToolButton::setChecked);
  connect(fit, &QToolButton::clicked, this, [this] {
    timeline_->setLive(false);
    timeline_->fitAll();
  });
  connect(zoomIn, &QToolButton::clicked, timeline_, &TimelineView::zoomIn);
  connect(zoomOut, &QToolButton::clicked, timeline_, &TimelineView::zoomOut);
  connect(zoomStep, &QToolButton::clicked, this, [this] { timeline_->zoomToStep(step_->value() - 1); });
  connect(timeline_, &TimelineView::spanClicked, this, &TraceTab::onSpanClicked);
  connect(spanArrays_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const QString name = item->data(Qt::UserRole).toString();
    // Checked again: the project may have changed since the panel was filled.
    if (doc_->design().sharding_ok && doc_->design().sharding.find(name.toStdString())) doc_->requestArray(name);
  });
  // An edit may add or remove arrays and nodes: the panel names only those there now.
  connect(doc_, &ProjectDocument::changed, this, &TraceTab::showSpanDetails);
  connect(doc_, &ProjectDocument::opened, this, &TraceTab::showSpanDetails);
  connect(device_, &QComboBox::currentIndexChanged, this, [this] { breakdown_->setDevice(device_->currentData().toInt()); });
  connect(peak_, &QDoubleSpinBox::valueChanged, this, [this](double gflops) {
    breakdown_->setPeakFlops(gflops * 1e9);
    if (current_) current_->setPeakFlops(gflops * 1e9);
    comparisonStale_ = true;
    if (views_->currentWidget() == comparison_) updateComparison();
  });
  connect(views_, &QTabWidget::currentChanged, this, [this] {
    if (views_->currentWidget() == comparison_ && comparisonStale_) updateComparison();
  });
  connect(comparison_, &RunComparison::openBaselineRequested, this, &TraceTab::openBaselineDialog);
  connect(comparison_, &RunComparison::swapRequested, this, &TraceTab::swapRuns);
  connect(doc_, &ProjectDocument::selectionChanged, this, [this] { timeline_->setHighlightedNodes(doc_->selection()); });
  timeline_->setHighlightedNodes(doc_->selection());

  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &TraceTab::refresh);
  showRun(true);
}

TraceTab::~TraceTab() = default;

QString TraceTab::currentLabel() const { return current_ ? current_->label() : QString(); }
QString TraceTab::deviceLabel() const { return current_ ? current_->deviceLabel() : QStringLiteral("CPU"); }
QString TraceTab::baselineLabel() const { return baseline_ ? baseline_->label() : QString(); }
bool TraceTab::isFollowing() const { return current_ && current_->isLive(); }

void TraceTab::followRun(std::shared_ptr<shardlab::profiler::Trace> trace, const QString& label, double peakFlops) {
  if (!trace) return;
  clearError();
  if (current_) {
    current_->setLive(false);
    baseline_ = std::move(current_);
  }
  current_ = std::make_unique<TraceRun>(std::move(trace), label, peakFlops, true);
  timeline_->setLive(true);
  showRun(true);
  setPolling(isVisible());
}

void TraceTab::runFinished() {
  if (!current_ || !current_->isLive()) return;
  setPolling(false);
  // What the run recorded after the last poll.
  const bool changed = current_->refresh();
  current_->setLive(false);
  if (changed)
    showRun(false);
  else
    updateStatus();
}

void TraceTab::refresh() {
  if (!current_ || !current_->isLive()) {
    setPolling(false);
    return;
  }
  if (current_->refresh()) showRun(false);
}

void TraceTab::setPolling(bool on) {
  if (on && isFollowing()) {
    if (!poll_.isActive()) poll_.start();
  } else {
    poll_.stop();
  }
}

void TraceTab::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (isFollowing()) {
    refresh();
    setPolling(true);
  }
}

void TraceTab::hideEvent(QHideEvent* e) {
  QWidget::hideEvent(e);
  setPolling(false);  // a hidden tab costs the trainer nothing
}

bool TraceTab::openTraceFile(const QString& path) {
  std::unique_ptr<TraceRun> run;
  try {
    run = TraceRun::fromFile(path);
  } catch (const Error& e) {
    showError(tr("Cannot open the trace: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  clearError();
  if (current_) {
    current_->setLive(false);
    baseline_ = std::move(current_);
  }
  setPolling(false);
  current_ = std::move(run);
  // A file has no measured peak: keep what the spin box says (the user's or the last run's).
  current_->setPeakFlops(peak_->value() * 1e9);
  timeline_->setLive(false);
  showRun(true);
  timeline_->fitAll();
  doc_->message("info", tr("Opened trace %1").arg(QDir::toNativeSeparators(path)));
  return true;
}

bool TraceTab::openBaselineFile(const QString& path) {
  try {
    baseline_ = TraceRun::fromFile(path);
  } catch (const Error& e) {
    showError(tr("Cannot open the baseline: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  clearError();
  baseline_->setPeakFlops(current_ ? current_->peakFlops() : peak_->value() * 1e9);
  comparisonStale_ = true;
  updateComparison();
  views_->setCurrentWidget(comparison_);
  return true;
}

void TraceTab::swapRuns() {
  if (!current_ || !baseline_) return;
  // The shown run is never live after a swap: following goes on only for the newest run.
  current_->setLive(false);
  setPolling(false);
  std::swap(current_, baseline_);
  current_->setLive(false);
  timeline_->setLive(false);
  showRun(true);
  timeline_->fitAll();
}

bool TraceTab::exportTrace(const QString& path) {
  if (!current_) {
    showError(tr("Cannot export: no run is shown."));
    return false;
  }
  // The engine's writer: never over a device, a link or a checkpoint's files, atomically.
  try {
    util::write_output_file(path.toStdString(), current_->chromeJson(), "trace");
  } catch (const Error& e) {
    showError(tr("Cannot export the trace: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  clearError();
  doc_->message("info", tr("Exported the trace of %1 to %2").arg(current_->label(), QDir::toNativeSeparators(path)));
  return true;
}

void TraceTab::showRun(bool newRun) {
  if (!current_) {
    timeline_->clear();
    breakdown_->setSummaries({});
    breakdown_->setTitle({});
    updateDevices();
    updateStepRange();
    updateStatus();
    comparisonStale_ = true;
    updateComparison();
    return;
  }
  timeline_->setDeviceLabel(current_->deviceLabel());
  breakdown_->setDeviceLabel(current_->deviceLabel());
  timeline_->setSpans(current_->spans());
  if (newRun) {
    picked_.reset();  // a span of the run shown before
    showSpanDetails();
    breakdown_->setTitle(current_->label());
    const QSignalBlocker block(peak_);
    peak_->setValue(current_->peakFlops() / 1e9);
    breakdown_->setPeakFlops(current_->peakFlops());
  }
  breakdown_->setSummaries(current_->summaries());
  updateDevices();
  updateStepRange();
  updateStatus();
  comparisonStale_ = true;
  if (newRun || views_->currentWidget() == comparison_) updateComparison();
}

void TraceTab::updateComparison() {
  comparison_->setRuns(baseline_.get(), current_.get());
  comparisonStale_ = false;
}

void TraceTab::updateDevices() {
  const std::vector<int> devices = breakdown_->devices();
  std::vector<int> listed;
  for (int i = 1; i < device_->count(); ++i) listed.push_back(device_->itemData(i).toInt());
  const QString label = deviceLabel();
  if (listed == devices && device_->count() > 0 && (devices.empty() || device_->itemText(1).startsWith(label + ' '))) return;
  const int keep = device_->currentData().isValid() ? device_->currentData().toInt() : -1;
  const QSignalBlocker block(device_);
  device_->clear();
  device_->addItem(devices.size() > 1 ? tr("Mean of %1 devices").arg(devices.size()) : tr("Mean"), -1);
  for (int d : devices) device_->addItem(tr("%1 %2").arg(label).arg(d), d);
  const int at = device_->findData(keep);
  device_->setCurrentIndex(at >= 0 ? at : 0);
  breakdown_->setDevice(device_->currentData().toInt());
}

void TraceTab::updateStepRange() {
  const std::vector<int64_t> steps = timeline_->steps();
  step_->setEnabled(!steps.empty());
  if (steps.empty()) return;
  const bool atNewest = step_->value() == step_->maximum();
  step_->setRange(int(steps.front() + 1), int(steps.back() + 1));
  if (atNewest) step_->setValue(step_->maximum());
}

void TraceTab::updateStatus() {
  if (!current_) {
    runLabel_->setText(tr("<i>No run yet</i>"));
    return;
  }
  QString text = QStringLiteral("<b>%1</b>").arg(current_->label().toHtmlEscaped());
  if (current_->isLive()) text += tr(" — recording");
  const std::vector<int64_t> steps = timeline_->steps();
  QStringList facts;
  facts << tr("%1 spans").arg(QLocale().toString(timeline_->spanCount()));
  facts << (current_->deviceCount() == 1 ? tr("1 device") : tr("%1 devices").arg(current_->deviceCount()));
  if (!steps.empty())
    facts << (steps.size() == 1 ? tr("step %1").arg(steps.front() + 1) : tr("steps %1–%2").arg(steps.front() + 1).arg(steps.back() + 1));
  if (timeline_->spanCount() == 0 && !current_->summaries().empty())
    facts << tr("step totals only (light trace)");
  text += QStringLiteral(" · ") + facts.join(QStringLiteral(" · "));
  runLabel_->setText(text);
}

void TraceTab::onSpanClicked(int index) {
  picked_ = timeline_->span(index);
  showSpanDetails();
  // The tab stays where it is: the panel shows the span, the graph its layer, and an array opens in
  // the Sharding tab only when the user clicks it.
  // A layer the project lacks (a trace of another project) is still selected: its spans highlight.
  const QString node = graphNode(doc_->design(), QString::fromStdString(picked_->node));
  if (node.isEmpty()) return;
  doc_->setSelection({node});
  emit spanActivated(node);
}

void TraceTab::showSpanDetails() {
  spanArrays_->clear();
  if (!picked_) {
    spanFacts_->setText(tr("<i>Click a span to see what it did.</i>"));
    spanArrays_->hide();
    return;
  }
  const profiler::Span& s = *picked_;
  const api::Design& d = doc_->design();
  auto row = [](const QString& label, const QString& value) {
    return QStringLiteral("<tr><td style='padding-right:8px'>%1</td><td>%2</td></tr>").arg(label, value);
  };
  const QString kind = s.category == profiler::Category::Collective ? tr("collective")
                       : s.category == profiler::Category::Optimizer ? tr("optimizer update")
                       : s.category == profiler::Category::Data      ? tr("waiting for data")
                       : s.category == profiler::Category::Step      ? tr("step")
                                                                     : tr("primitive");
  QString text = QStringLiteral("<b>%1</b> — %2<table>").arg(QString::fromStdString(s.name).toHtmlEscaped(), kind);
  text += row(tr("Device"), tr("%1 %2").arg(deviceLabel()).arg(s.device));
  if (!s.node.empty()) {
    const QString node = graphNode(d, QString::fromStdString(s.node));
    text += row(tr("Node"), hasNode(d, node) ? node.toHtmlEscaped() : tr("%1 (not in this project)").arg(node.toHtmlEscaped()));
  }
  text += row(tr("Step"), QString::number(s.step + 1));
  if (s.stage >= 0)
    text += row(tr("Pipeline"), s.microbatch >= 0 ? tr("stage %1, microbatch %2, %3 pass")
                                                        .arg(s.stage)
                                                        .arg(s.microbatch + 1)
                                                        .arg(s.backward ? tr("backward") : tr("forward"))
                                                  : tr("stage %1, once per step").arg(s.stage));
  text += row(tr("Start"), trace_style::durationText(s.start_us - timeline_->traceStartUs()));
  text += row(tr("Duration"), trace_style::durationText(s.dur_us));
  if (s.flops > 0) text += row(tr("Work"), trace_style::flopsText(s.flops));
  if (s.bytes > 0) text += row(tr("Moved"), trace_style::bytesText(s.bytes));
  text += QStringLiteral("</table>");
  const std::vector<SpanArray> arrays = openableArrays(s, d);
  if (!arrays.empty()) text += tr("Arrays it touched (click one to open it in the Sharding tab):");
  else if (s.category != profiler::Category::Data && s.category != profiler::Category::Step)
    text += tr("<i>It touched no array of this project, only temporaries inside its layer.</i>");
  spanFacts_->setText(text);
  for (const SpanArray& a : arrays) {
    const QString how = a.read && a.written ? tr("read and written") : a.written ? tr("written") : tr("read");
    auto* item = new QListWidgetItem(tr("%1  (%2, %3)").arg(a.name, a.kind, how), spanArrays_);
    item->setData(Qt::UserRole, a.name);
    item->setToolTip(tr("Open %1 in the Sharding tab").arg(a.name));
  }
  spanArrays_->setVisible(!arrays.empty());
}

void TraceTab::openFileDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open trace"), {}, tr("Chrome traces (*.json);;All files (*)"));
  if (!path.isEmpty()) openTraceFile(path);
}

void TraceTab::openBaselineDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open baseline trace"), {}, tr("Chrome traces (*.json);;All files (*)"));
  if (!path.isEmpty()) openBaselineFile(path);
}

void TraceTab::exportDialog() {
  if (!current_) {
    showError(tr("Cannot export: no run is shown."));
    return;
  }
  QString name = current_->label();
  name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.=,-]+")), QStringLiteral("-"));
  if (!name.endsWith(QStringLiteral(".json"))) name += QStringLiteral(".trace.json");
  const QString path = QFileDialog::getSaveFileName(this, tr("Export trace"), name, tr("Chrome traces (*.json)"));
  if (!path.isEmpty()) exportTrace(path);
}

void TraceTab::showError(const QString& text) {
  lastError_ = text;
  error_->setText(text);
  error_->show();
  doc_->message("error", text);
  // Tests and headless runs have no one to click OK; the banner and the log have it.
  if (qEnvironmentVariableIsSet("SHARDLAB_NO_DIALOGS")) return;
  QMessageBox::warning(this, tr("Trace"), text);
}

void TraceTab::clearError() {
  lastError_.clear();
  error_->clear();
  error_->hide();
}

}  // namespace shardlab::ui
