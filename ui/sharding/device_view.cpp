#include "ui/sharding/device_view.h"

#include <QResizeEvent>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/sharding/device_blocks_model.h"
#include "ui/sharding/device_picker.h"
#include "ui/sharding/sharding_format.h"
#include "ui/sharding/wrapped_label.h"

namespace shardlab::ui {

DeviceView::DeviceView(QWidget* parent) : QWidget(parent) {
  combo_ = new QComboBox(this);
  combo_->setObjectName("deviceCombo");
  combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  picker_ = new DevicePicker(this);
  picker_->setObjectName("devicePicker");
  picker_->setToolTip(tr("Click a device to list the blocks it holds"));
  summary_ = new QLabel(this);
  summary_->setObjectName("deviceMemory");
  // Two lines of its own (total, then by kind), each wrapped where the pane is narrower than it:
  // unwrapped, the longer line set the whole Sharding page's least width, and a small window
  // squeezed the array tree to nothing to make room for it.
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  model_ = new DeviceBlocksModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(DeviceBlocksModel::SortRole);
  table_ = new QTableView(this);
  table_->setObjectName("deviceBlocks");
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // the report's order until a header is clicked
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* top = new QHBoxLayout;
  auto* pick = new QLabel(tr("&Device:"), this);
  pick->setBuddy(combo_);
  top->addWidget(pick);
  top->addWidget(combo_);
  top->addSpacing(8);
  top->addWidget(picker_);
  top->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);

  connect(combo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) setDevice(combo_->itemData(i).toLongLong());
  });
  connect(picker_, &DevicePicker::deviceClicked, this, &DeviceView::setDevice);
  connect(table_, &QTableView::clicked, this, &DeviceView::activateRow);
  connect(table_, &QTableView::activated, this, &DeviceView::activateRow);
}

void DeviceView::refresh(const api::Design& design) {
  shardingOk_ = design.sharding_ok;
  report_ = design.sharding;
  capacity_ = design.device_capacity_bytes;
  copies_ = shardfmt::activationCopies(design.graph);
  const int64_t count = shardingOk_ ? report_.mesh.device_count() : 0;
  if (device_ >= count) device_ = 0;
  fillCombo();
  picker_->setMesh(shardingOk_ ? report_.mesh : sharding::Mesh());
  picker_->setVisible(count > 0);
  showDevice();
}

void DeviceView::fillCombo() {
  const int64_t count = shardingOk_ ? report_.mesh.device_count() : 0;
  const QSignalBlocker block(combo_);
  combo_->clear();
  for (int64_t d = 0; d < count; ++d)
    combo_->addItem(shardfmt::deviceName(report_.mesh, d, processes_), qlonglong(d));
  combo_->setCurrentIndex(count > 0 ? int(device_) : -1);
}

void DeviceView::setProcesses(int processes) {
  if (processes == processes_) return;
  processes_ = processes;
  picker_->setProcesses(processes);
  fillCombo();
  setSummary(memorySummary());
}

void DeviceView::setDevice(int64_t device) {
  if (!shardingOk_ || device < 0 || device >= report_.mesh.device_count()) return;
  const bool moved = device != device_;
  device_ = device;
  {
    const QSignalBlocker block(combo_);
    combo_->setCurrentIndex(int(device));
  }
  showDevice();
  if (moved) emit deviceChanged(device_);
}

void DeviceView::setDeviceColors(std::vector<QColor> colors) { picker_->setColors(std::move(colors)); }

void DeviceView::showDevice() {
  picker_->setCurrent(device_);
  model_->setDevice(report_, copies_, shardingOk_ ? device_ : -1);
  setSummary(memorySummary());
}

QString DeviceView::memorySummary() const {
  if (!shardingOk_ || device_ >= int64_t(report_.devices.size()))
    return tr("No per-device memory until the project's mesh, rules and graph check out.");
  const sharding::DeviceMemory& m = report_.devices[size_t(device_)];
  QString s = tr("Device %1 holds %2").arg(device_).arg(shardfmt::bytesText(m.total()));
  const int64_t process = shardfmt::processOf(device_, report_.mesh.device_count(), processes_);
  if (process >= 0) s += tr(" (on process %1)").arg(process);
  if (capacity_ > 0)
    s += tr(", %1% of the %2 one device may use")
             .arg(100.0 * m.total() / capacity_, 0, 'f', m.total() / capacity_ < 0.01 ? 2 : 1)
             .arg(shardfmt::bytesText(capacity_));
  s += "\n" + tr("parameters %1 · optimizer state %2 · step arena %3 (inputs, activations and gradients, reused as the "
                 "step runs)")
                  .arg(shardfmt::bytesText(m.params), shardfmt::bytesText(m.opt_state), shardfmt::bytesText(m.arena));
  if (report_.microbatches > 1)
    s += "\n" + tr("Gradient accumulation: each step runs %1 microbatches one after another; inputs and activations are "
                   "one microbatch's, and the arena holds the summed gradients besides")
                    .arg(report_.microbatches);
  // Pipeline stages hold different layers, so their arenas differ: each stage's, this device's marked.
  if (!report_.stages.empty()) {
    const int axis = report_.mesh.axis_index(report_.pipeline_axis);
    const int64_t here = axis >= 0 ? report_.mesh.coords(device_)[size_t(axis)] : -1;
    for (size_t st = 0; st < report_.stages.size(); ++st) {
      const sharding::ShardingReport::Stage& stage = report_.stages[st];
      QStringList layers;
      for (const std::string& l : stage.layers) layers << QString::fromStdString(l);
      s += "\n" + tr("stage %1%2: layers %3, step arena %4 per device")
                      .arg(st)
                      .arg(int64_t(st) == here ? tr(" (this device)") : QString())
                      .arg(layers.isEmpty() ? tr("(no parameters)") : layers.join(", "))
                      .arg(shardfmt::bytesText(stage.arena));
    }
    s += "\n" + tr("%1 schedule over mesh axis '%2', %3 microbatches: each stage idles %4% of the step while the "
                   "pipeline fills and drains")
                    .arg(report_.pipeline_schedule == "gpipe" ? tr("GPipe") : tr("1F1B"))
                    .arg(QString::fromStdString(report_.pipeline_axis))
                    .arg(report_.microbatches)
                    .arg(100.0 * report_.bubble, 0, 'f', 1);
  }
  return s;
}

void DeviceView::activateRow(const QModelIndex& proxyIndex) {
  if (!proxyIndex.isValid()) return;
  const QString name = proxyIndex.data(DeviceBlocksModel::ArrayNameRole).toString();
  if (!name.isEmpty()) emit arrayActivated(name, device_);
}

void DeviceView::setSummary(const QString& text) {
  summary_->setText(text);
  keepSummaryWhole();
}

void DeviceView::keepSummaryWhole() { holdWrappedHeight(summary_); }

void DeviceView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  keepSummaryWhole();
}

}  // namespace shardlab::ui
