#include "ui/checkpoints/checkpoint_browser.h"

#include <QFileDialog>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "engine/api/engine.h"
#include "ui/checkpoints/checkpoint_list_model.h"

namespace shardlab::ui {

CheckpointBrowser::CheckpointBrowser(QWidget* parent) : QWidget(parent) {
  setObjectName("checkpoints");
  model_ = new CheckpointListModel(this);
  watcher_ = new QFileSystemWatcher(this);

  rootEdit_ = new QLineEdit(this);
  rootEdit_->setObjectName("checkpointRoot");
  rootEdit_->setPlaceholderText(tr("a checkpoint directory (the Training tab's checkpoint directory)"));
  auto* choose = new QPushButton(tr("Choose…"), this);
  auto* refresh = new QPushButton(tr("Refresh"), this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Directory:"), this));
  top->addWidget(rootEdit_, 1);
  top->addWidget(choose);
  top->addWidget(refresh);

  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();

  details_ = new QLabel(this);
  details_->setObjectName("checkpointDetails");
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  resume_ = new QPushButton(tr("Resume Training From Here"), this);
  resume_->setObjectName("resumeButton");
  export_ = new QPushButton(tr("Export…"), this);
  export_->setObjectName("exportButton");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // a single file write has no useful fraction: busy until done
  progress_->setVisible(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(resume_);
  buttons->addWidget(export_);
  buttons->addWidget(progress_, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  layout->addWidget(details_);
  layout->addLayout(buttons);

  connect(choose, &QPushButton::clicked, this, &CheckpointBrowser::chooseRoot);
  connect(refresh, &QPushButton::clicked, model_, &CheckpointListModel::refresh);
  connect(rootEdit_, &QLineEdit::editingFinished, this, [this] { setRoot(rootEdit_->text()); });
  // A save lands as a rename inside the root: the directory watch sees it.
  connect(watcher_, &QFileSystemWatcher::directoryChanged, this, [this] {
    const QString keep = selectedCheckpoint();
    model_->refresh();
    for (int r = 0; r < model_->rowCount(); ++r)
      if (QString::fromStdString(model_->entry(r)->dir.string()) == keep) table_->selectRow(r);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &CheckpointBrowser::showDetails);
  connect(model_, &QAbstractItemModel::modelReset, this, &CheckpointBrowser::showDetails);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (!selectedCheckpoint().isEmpty()) emit resumeRequested(selectedCheckpoint());
  });
  connect(export_, &QPushButton::clicked, this, &CheckpointBrowser::exportSelected);
  showDetails();
}

CheckpointBrowser::~CheckpointBrowser() {
  if (worker_.joinable()) worker_.join();
}

void CheckpointBrowser::setRoot(const QString& dir) {
  if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
  rootEdit_->setText(dir);
  model_->setRoot(dir);
  if (!dir.isEmpty() && QFileInfo(dir).isDir()) watcher_->addPath(dir);
}

QString CheckpointBrowser::root() const { return model_->root(); }

QString CheckpointBrowser::selectedCheckpoint() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return {};
  const checkpoint::Entry* e = model_->entry(rows.first().row());
  return e ? QString::fromStdString(e->dir.string()) : QString();
}

void CheckpointBrowser::selectStep(qint64 step) {
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->entry(r)->step == step) table_->selectRow(r);
}

void CheckpointBrowser::chooseRoot() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint Directory"), root());
  if (!dir.isEmpty()) setRoot(dir);
}

void CheckpointBrowser::showDetails() {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  const checkpoint::Entry* e = rows.isEmpty() ? nullptr : model_->entry(rows.first().row());
  resume_->setEnabled(e != nullptr);
  export_->setEnabled(e != nullptr && !exporting_);
  if (!e) {
    details_->setText(model_->rowCount() == 0 ? tr("No committed checkpoints here yet.") : tr("Select a checkpoint."));
    return;
  }
  const auto& m = e->meta;
  if (m.contains("error")) {
    details_->setText(QString::fromStdString(m["error"].get<std::string>()));
    return;
  }
  const int arrays = m.contains("shardings") ? int(m["shardings"].size()) : m.contains("blocks") ? int(m["blocks"].size()) : 0;
  QString text = tr("Step %1 of project '%2', %3 arrays, saved on mesh %4, data position %5.")
                     .arg(e->step)
                     .arg(QString::fromStdString(m.contains("project") ? m["project"].value("name", std::string("?")) : "?"))
                     .arg(arrays)
                     .arg(QString::fromStdString(m.value("mesh", std::string("?"))))
                     .arg(qlonglong(m.value("data_position", int64_t(0))));
  // Saved over processes, each wrote the blocks its own devices held, one file each: a resume on
  // any processes and mesh reads only the blocks it needs; an export assembles whole arrays.
  if (m.contains("blocks")) {
    int files = 0;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(e->dir, ec)) files += f.path().extension() == ".safetensors";
    text += (files == 1 ? tr(" Saved over processes: 1 file") : tr(" Saved over processes: %1 files").arg(files)) +
            tr(", each with the blocks of the arrays one process's devices held.");
  }
  details_->setText(text);
}

void CheckpointBrowser::exportSelected() {
  const QString dir = selectedCheckpoint();
  if (dir.isEmpty()) return;
  QString filter;
  const QString out = QFileDialog::getSaveFileName(this, tr("Export Checkpoint"), QFileInfo(dir).absolutePath(),
                                                   tr("Parameters (*.safetensors);;ONNX inference graph (*.onnx)"), &filter);
  if (out.isEmpty()) return;
  startExport(dir, out.endsWith(".onnx") || filter.contains("onnx") ? "onnx" : "safetensors", out);
}

bool CheckpointBrowser::startExport(const QString& checkpointDir, const QString& format, const QString& out) {
  if (exporting_.exchange(true)) return false;
  if (worker_.joinable()) worker_.join();
  progress_->setVisible(true);
  export_->setEnabled(false);
  worker_ = std::thread([this, dir = checkpointDir.toStdString(), fmt = format.toStdString(), file = out.toStdString()] {
    bool ok = true;
    QString message;
    try {
      message = QString::fromStdString(checkpoint::export_checkpoint(dir, fmt, file));
    } catch (const std::exception& e) {
      ok = false;
      message = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, ok, message] {
      exporting_ = false;
      progress_->setVisible(false);
      showDetails();
      emit exportFinished(ok, message);
    }, Qt::QueuedConnection);
  });
  return true;
}

}  // namespace shardlab::ui
