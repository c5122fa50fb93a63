#include "ui/sharding/sharding_tab.h"

#include <QResizeEvent>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/document/project_document.h"
#include "ui/sharding/array_menu.h"
#include "ui/sharding/array_tree_model.h"
#include "ui/sharding/device_view.h"
#include "ui/sharding/sharding_format.h"
#include "ui/sharding/sharding_grid.h"
#include "ui/sharding/wrapped_label.h"
#include "ui/sharding/wrapping_row.h"

namespace shardlab::ui {

ShardingTab::ShardingTab(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  setObjectName("sharding");

  banner_ = new QLabel(this);
  banner_->setObjectName("shardingBanner");
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setStyleSheet("QLabel { color: #c0392b; padding: 4px; }");
  banner_->hide();

  // Left: the arrays.
  filter_ = new QLineEdit(this);
  filter_->setObjectName("arrayFilter");
  filter_->setPlaceholderText(tr("Filter arrays (name, kind, axis, spec)"));
  filter_->setClearButtonEnabled(true);
  model_ = new ArrayTreeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setRecursiveFilteringEnabled(true);
  proxy_->setFilterRole(ArrayTreeModel::FilterTextRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  tree_ = new QTreeView(this);
  tree_->setObjectName("arrayTree");
  tree_->setModel(proxy_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->setSelectionMode(QAbstractItemView::SingleSelection);
  tree_->setSelectionBehavior(QAbstractItemView::SelectRows);
  tree_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* left = new QWidget(this);
  left->setMinimumWidth(200);  // room for the names, whatever the drawing beside it asks
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(filter_);
  leftLayout->addWidget(tree_, 1);

  // Right, top: the legend, the dimension pickers and the grid (or the array's error).
  title_ = new QLabel(this);
  title_->setObjectName("arrayTitle");
  QFont bold = title_->font();
  bold.setBold(true);
  bold.setPointSizeF(bold.pointSizeF() * 1.15);
  title_->setFont(bold);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_ = new QLabel(this);
  details_->setObjectName("arrayDetails");
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rowCombo_ = new QComboBox(this);
  rowCombo_->setObjectName("rowDim");
  colCombo_ = new QComboBox(this);
  colCombo_->setObjectName("columnDim");
  // As wide as their text where there is room, and narrower (the chosen name elided, the list
  // whole) where there is not, so the pickers never widen the page past a small window.
  for (QComboBox* c : {rowCombo_, colCombo_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    c->setMinimumWidth(110);
  }
  dimsRow_ = new QWidget(this);
  auto* dims = new WrappingRow(dimsRow_);
  // Each picker with its label, kept together when the row wraps.
  auto picker = [this](const QString& label, QComboBox* combo) {
    auto* pair = new QWidget(dimsRow_);
    auto* l = new QHBoxLayout(pair);
    l->setContentsMargins(0, 0, 0, 0);
    auto* text = new QLabel(label, pair);
    text->setBuddy(combo);
    l->addWidget(text);
    l->addWidget(combo);
    return pair;
  };
  dims->addWidget(picker(tr("&Rows:"), rowCombo_));
  dims->addWidget(picker(tr("&Columns:"), colCombo_));
  notes_ = new QLabel(this);
  notes_->setObjectName("otherDims");
  notes_->setWordWrap(true);
  grid_ = new ShardingGrid(this);
  grid_->setObjectName("shardingGrid");
  error_ = new QLabel(this);
  error_->setObjectName("arrayError");
  error_->setWordWrap(true);
  error_->setAlignment(Qt::AlignCenter);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setStyleSheet("QLabel { color: #c0392b; padding: 12px; }");
  stack_ = new QStackedWidget(this);
  stack_->addWidget(grid_);
  stack_->addWidget(error_);
  auto* picture = new QWidget(this);
  auto* pictureLayout = new QVBoxLayout(picture);
  pictureLayout->setContentsMargins(4, 0, 0, 0);
  pictureLayout->addWidget(title_);
  pictureLayout->addWidget(details_);
  pictureLayout->addWidget(dimsRow_);
  pictureLayout->addWidget(notes_);
  pictureLayout->addWidget(stack_, 1);
  // Held to their height at their width (fitWrappedText), no taller: the room left over goes to
  // the drawing, not around the text.
  for (QWidget* w : {static_cast<QWidget*>(details_), static_cast<QWidget*>(notes_), dimsRow_}) {
    w->setSizePolicy(w->sizePolicy().horizontalPolicy(), QSizePolicy::Maximum);
    w->installEventFilter(this);
  }

  // Right, bottom: the reverse view.
  devices_ = new DeviceView(this);
  devices_->setObjectName("deviceView");

  // Right, bottom: the processes the mesh is laid over, then the reverse view.
  processes_ = new QSpinBox(this);
  processes_->setObjectName("processes");
  processes_->setRange(1, 64);
  processes_->setValue(1);
  processes_->setToolTip(tr("lay the mesh over this many processes, as mpirun -np K would: which process holds each block"));
  processesMessage_ = new QLabel(this);
  processesMessage_->setObjectName("processesMessage");
  processesMessage_->setWordWrap(true);
  processesMessage_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  processesMessage_->setStyleSheet("QLabel { color: #c0392b; }");
  processesMessage_->hide();
  auto* processesLabel = new QLabel(tr("&Processes:"), this);
  processesLabel->setBuddy(processes_);
  processesLabel->setToolTip(processes_->toolTip());
  auto* bottom = new QWidget(this);
  auto* bottomLayout = new QVBoxLayout(bottom);
  bottomLayout->setContentsMargins(0, 0, 0, 0);
  auto* processesRow = new QHBoxLayout;
  processesRow->addWidget(processesLabel);
  processesRow->addWidget(processes_);
  processesRow->addWidget(processesMessage_, 1);
  processesRow->addStretch();
  bottomLayout->addLayout(processesRow);
  bottomLayout->addWidget(devices_, 1);

  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(picture);
  right->addWidget(bottom);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 5);
  split->setSizes({440, 860});
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(banner_);
  layout->addWidget(split, 1);

  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    tree_->expandAll();
    // The drawn array stays drawn; it is selected again when it passes the filter.
    const QModelIndex shown = proxy_->mapFromSource(model_->indexOfArray(current_));
    if (shown.isValid()) selectInTree(current_);
  });
  connect(tree_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ShardingTab::onTreeSelection);
  tree_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(tree_, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    const QString array = tree_->indexAt(pos).data(ArrayTreeModel::ArrayNameRole).toString();
    if (!array.isEmpty()) execArrayMenu(doc_, array, tree_, tree_->viewport()->mapToGlobal(pos));
  });
  connect(rowCombo_, &QComboBox::currentIndexChanged, this, [this](int i) { onDimPicked(true, i); });
  connect(colCombo_, &QComboBox::currentIndexChanged, this, [this](int i) { onDimPicked(false, i); });
  connect(grid_, &ShardingGrid::cellClicked, this, [this](int cell) {
    const std::vector<int64_t>& devs = grid_->cells()[size_t(cell)].devices;
    // Clicking the cell that already holds the chosen device keeps it.
    if (!std::binary_search(devs.begin(), devs.end(), devices_->device())) devices_->setDevice(devs.front());
  });
  connect(devices_, &DeviceView::deviceChanged, grid_, &ShardingGrid::setHighlightDevice);
  connect(devices_, &DeviceView::arrayActivated, this, [this](const QString& name, int64_t device) {
    showArray(name);
    grid_->setHighlightDevice(device);
  });
  connect(processes_, &QSpinBox::valueChanged, this, &ShardingTab::applyProcesses);
  connect(doc_, &ProjectDocument::changed, this, &ShardingTab::rebuild);
  connect(doc_, &ProjectDocument::opened, this, [this] {
    // A different project: start from its first array rather than a name it may share by chance.
    current_.clear();
    rebuild();
  });
  connect(doc_, &ProjectDocument::arrayRequested, this, &ShardingTab::showArray);
  rebuild();
}

void ShardingTab::rebuild() {
  const api::Design& d = doc_->design();
  if (!d.sharding_ok) {
    QStringList lines;
    for (size_t i = 0; i < d.errors.size() && i < 5; ++i) lines << QString::fromStdString(d.errors[i]);
    if (d.errors.size() > 5) lines << tr("... and %1 more (see the Log)").arg(d.errors.size() - 5);
    banner_->setText(tr("No sharding to show until the graph, mesh and rules check out:") + "\n" + lines.join('\n'));
  }
  banner_->setVisible(!d.sharding_ok);
  model_->setArrays(d.sharding_ok ? d.sharding.arrays : std::vector<sharding::ArraySharding>{});
  tree_->expandAll();
  devices_->refresh(d);
  applyProcesses();

  QString name = current_;
  if (name.isEmpty() || !model_->indexOfArray(name).isValid())
    name = d.sharding_ok && !d.sharding.arrays.empty() ? QString::fromStdString(d.sharding.arrays.front().name)
                                                       : QString();
  if (name.isEmpty()) {
    current_.clear();
    draw({}, -1, -1);
    return;
  }
  const bool same = name == current_;
  selectInTree(name);
  draw(name, same ? rowDim_ : -1, same ? colDim_ : -1);
}

void ShardingTab::selectInTree(const QString& name) {
  const QModelIndex source = model_->indexOfArray(name);
  QModelIndex index = proxy_->mapFromSource(source);
  if (source.isValid() && !index.isValid()) {  // hidden by the filter: the request wins
    const QSignalBlocker block(filter_);
    filter_->clear();
    proxy_->setFilterFixedString({});
    tree_->expandAll();
    index = proxy_->mapFromSource(source);
  }
  selecting_ = true;
  if (index.isValid()) {
    tree_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    tree_->scrollTo(index);
  } else {
    tree_->selectionModel()->clearSelection();
  }
  selecting_ = false;
}

bool ShardingTab::showArray(const QString& name) {
  if (!model_->indexOfArray(name).isValid()) {
    title_->setText(tr("There is no array '%1' in this project").arg(name));
    details_->setText(tr("Pick one from the list: parameters are named like dense1/kernel, activations like dense1."));
    fitWrappedText();
    return false;
  }
  const bool same = name == current_;
  selectInTree(name);
  draw(name, same ? rowDim_ : -1, same ? colDim_ : -1);
  return true;
}

void ShardingTab::onTreeSelection() {
  if (selecting_) return;
  const QModelIndexList rows = tree_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  const QString name = rows.front().data(ArrayTreeModel::ArrayNameRole).toString();
  if (!name.isEmpty() && name != current_) draw(name, -1, -1);
}

void ShardingTab::draw(const QString& name, int rowDim, int colDim) {
  const api::Design& d = doc_->design();
  const sharding::ArraySharding* a = d.sharding_ok && !name.isEmpty() ? d.sharding.find(name.toStdString()) : nullptr;
  if (!a) {
    current_.clear();
    rowDim_ = colDim_ = -1;
    grid_->clear();
    stack_->setCurrentWidget(grid_);
    title_->setText(d.sharding_ok ? tr("No arrays") : tr("No sharding"));
    details_->clear();
    notes_->clear();
    notes_->hide();
    dimsRow_->hide();
    updateDeviceColors();
    return;
  }
  current_ = name;
  const sharding::Mesh& mesh = d.sharding.mesh;
  grid_->setArray(*a, mesh, rowDim, colDim);
  rowDim_ = grid_->rowDim();
  colDim_ = grid_->colDim();
  grid_->setHighlightDevice(devices_->device());

  title_->setText(tr("%1  (%2)").arg(name, QString::fromUtf8(sharding::kind_name(a->kind))));
  const QString devices = mesh.device_count() == 1 ? tr("1 device") : tr("%1 devices").arg(mesh.device_count());
  details_->setText(tr("global shape %1 · logical %2 · %3 · shard shape %4 · %5 per device · mesh %6, %7")
                        .arg(shardfmt::shapeText(a->shape), shardfmt::logicalText(a->logical),
                             a->error.empty() ? QString::fromStdString(a->spec_text()) : tr("invalid PartitionSpec"),
                             shardfmt::shapeText(a->shard), shardfmt::bytesText(a->bytes_per_device),
                             mesh.axes().empty() ? tr("without axes") : QString::fromStdString(mesh.str()), devices));
  if (!a->error.empty()) {
    error_->setText(
        tr("This array cannot be split as its rules say:\n%1\n\nUntil that is fixed it is counted as replicated on "
           "every device. Change the rules or the mesh in Mesh & Rules, or the array's logical axes on its node.")
            .arg(QString::fromStdString(a->error)));
    stack_->setCurrentWidget(error_);
  } else {
    error_->clear();
    stack_->setCurrentWidget(grid_);
  }
  const int rank = a->error.empty() ? int(a->shape.size()) : 0;
  fillDimCombos(rank);
  dimsRow_->setVisible(rank >= 2);
  const QStringList notes = grid_->otherDimsNotes();
  notes_->setText(notes.join('\n'));
  fitWrappedText();
  notes_->setVisible(!notes.isEmpty());
  updateDeviceColors();
}

void ShardingTab::fillDimCombos(int rank) {
  const QSignalBlocker blockRows(rowCombo_), blockCols(colCombo_);
  rowCombo_->clear();
  colCombo_->clear();
  if (rank < 2) return;
  const sharding::ArraySharding& a = grid_->array();
  for (int k = 0; k < rank; ++k) {
    const QString text = shardfmt::dimText(a, size_t(k));
    rowCombo_->addItem(text, k);
    colCombo_->addItem(text, k);
  }
  rowCombo_->setCurrentIndex(rowDim_);
  colCombo_->setCurrentIndex(colDim_);
}

void ShardingTab::onDimPicked(bool rows, int dim) {
  if (current_.isEmpty() || dim < 0) return;
  int r = rowDim_, c = colDim_;
  // Picking the dimension the other axis shows swaps the two, so they always differ.
  if (rows) {
    if (dim == c) c = r;
    r = dim;
  } else {
    if (dim == r) r = c;
    c = dim;
  }
  draw(current_, r, c);
}

void ShardingTab::updateDeviceColors() {
  std::vector<QColor> colors;
  if (grid_->hasArray()) {
    const int64_t count = doc_->design().sharding.mesh.device_count();
    for (int64_t dev = 0; dev < count; ++dev) colors.push_back(grid_->cellFill(grid_->cellOfDevice(dev)));
  }
  devices_->setDeviceColors(std::move(colors));
}

int ShardingTab::effectiveProcesses() const {
  const api::Design& d = doc_->design();
  const int k = processes_->value();
  return d.sharding_ok && shardfmt::processesDivide(d.sharding.mesh.device_count(), k) ? k : 1;
}

void ShardingTab::applyProcesses() {
  const api::Design& d = doc_->design();
  const int k = processes_->value(), shown = effectiveProcesses();
  const int64_t count = d.sharding_ok ? d.sharding.mesh.device_count() : 0;
  const bool mismatch = k > 1 && count > 0 && shown != k;
  processesMessage_->setText(
      mismatch ? tr("The mesh's %1 devices do not divide among %2 processes: each process must hold the same number "
                    "of devices. Shown as one process.")
                     .arg(count)
                     .arg(k)
               : QString());
  processesMessage_->setVisible(mismatch);
  grid_->setProcesses(shown);
  devices_->setProcesses(shown);
}

QString ShardingTab::processesMessageText() const {
  return processesMessage_->isVisibleTo(this) ? processesMessage_->text() : QString();
}

void ShardingTab::changeEvent(QEvent* e) {
  // A theme switch changes the cell colours; the device picture follows them.
  if (e->type() == QEvent::PaletteChange) updateDeviceColors();
  QWidget::changeEvent(e);
}

QString ShardingTab::headingText() const { return title_->text() + "\n" + details_->text(); }

QString ShardingTab::notesText() const { return notes_->text(); }

QString ShardingTab::arrayErrorText() const { return error_->text(); }

QString ShardingTab::bannerText() const { return banner_->isVisibleTo(this) ? banner_->text() : QString(); }

void ShardingTab::fitWrappedText() {
  for (QLabel* label : {details_, notes_}) holdWrappedHeight(label);
  if (dimsRow_->width() > 0) dimsRow_->setMinimumHeight(dimsRow_->layout()->heightForWidth(dimsRow_->width()));
}

bool ShardingTab::eventFilter(QObject* watched, QEvent* e) {
  if (e->type() == QEvent::Resize && static_cast<QResizeEvent*>(e)->size().width() != static_cast<QResizeEvent*>(e)->oldSize().width())
    fitWrappedText();
  return QWidget::eventFilter(watched, e);
}

}  // namespace shardlab::ui
