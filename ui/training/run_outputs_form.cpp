#include "ui/training/run_outputs_form.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>

namespace shardlab::ui {

RunOutputsForm::RunOutputsForm(QWidget* parent) : QWidget(parent) {
  detailed_ = new QCheckBox(tr("Detailed trace (last %1 steps)").arg(kDetailedSteps), this);
  detailed_->setObjectName("detailedTrace");
  detailed_->setToolTip(
      tr("Per-step totals are always kept for the Trace tab; detailed tracing also records each "
         "primitive and collective, at a small cost per step"));
  dir_ = new QLineEdit(this);
  dir_->setObjectName("checkpointDir");
  dir_->setPlaceholderText(tr("none: no checkpoints"));
  dir_->setToolTip(tr("Checkpoints go to step_NNNNNN folders here (and one at the end of the run)"));
  dir_->setClearButtonEnabled(true);
  browse_ = new QToolButton(this);
  browse_->setObjectName("browseCheckpointDir");
  browse_->setText(QStringLiteral("…"));
  browse_->setToolTip(tr("Choose the checkpoint directory"));
  saveEvery_ = new QSpinBox(this);
  saveEvery_->setObjectName("saveEvery");
  saveEvery_->setRange(0, 100000000);
  saveEvery_->setSpecialValueText(tr("only at the end"));
  saveEvery_->setToolTip(tr("Save a checkpoint every this many steps (in the background)"));
  keep_ = new QSpinBox(this);
  keep_->setObjectName("keep");
  keep_->setRange(1, 10000);
  keep_->setValue(runtime::TrainOptions{}.keep);
  keep_->setToolTip(tr("Older checkpoints beyond this many are deleted"));

  auto* dirRow = new QHBoxLayout;
  dirRow->setContentsMargins(0, 0, 0, 0);
  dirRow->addWidget(dir_, 1);
  dirRow->addWidget(browse_);
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(detailed_);
  // A row holding a layout gets no buddy by itself: the label needs one for its shortcut.
  auto* dirLabel = new QLabel(tr("Check&points"), this);
  dirLabel->setBuddy(dir_);
  form->addRow(dirLabel, dirRow);
  form->addRow(tr("Save e&very"), saveEvery_);
  form->addRow(tr("&Keep"), keep_);

  connect(browse_, &QToolButton::clicked, this, &RunOutputsForm::browse);
  connect(dir_, &QLineEdit::editingFinished, this, [this] { setCheckpointDir(dir_->text()); });
  // The clear button empties the field without finishing an edit.
  connect(dir_, &QLineEdit::textChanged, this, [this](const QString& t) {
    if (t.isEmpty()) setCheckpointDir(QString());
  });
}

QString RunOutputsForm::checkpointDir() const {
  const QString t = dir_->text().trimmed();
  if (t.isEmpty()) return {};
  return QDir::cleanPath(base_.isEmpty() || QDir::isAbsolutePath(t) ? QFileInfo(t).absoluteFilePath() : QDir(base_).absoluteFilePath(t));
}

void RunOutputsForm::setCheckpointDir(const QString& dir) {
  if (dir_->text() != dir) dir_->setText(dir);
  const QString now = checkpointDir();
  if (now == lastDir_) return;
  lastDir_ = now;
  emit checkpointDirChanged(now);
}

void RunOutputsForm::showCheckpoint(const QString& dir, int saveEvery, int keep) {
  if (checkpointDir() != dir) setCheckpointDir(dir);
  if (saveEvery_->value() != saveEvery) saveEvery_->setValue(saveEvery);
  if (keep_->value() != keep) keep_->setValue(keep);
}

void RunOutputsForm::browse() {
  if (qEnvironmentVariableIsSet("SHARDLAB_NO_DIALOGS")) return;  // tests type the path instead
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint Directory"), checkpointDir());
  if (!dir.isEmpty()) setCheckpointDir(dir);
}

bool RunOutputsForm::apply(runtime::TrainOptions& o, QString* error) const {
  const QString dir = checkpointDir();
  if (!dir.isEmpty() && QFileInfo(dir).exists() && !QFileInfo(dir).isDir()) {
    *error = tr("Checkpoints: %1 is a file, not a directory").arg(dir);
    return false;
  }
  if (dir.isEmpty() && saveEvery_->value() > 0) {
    *error = tr("Save every: checkpoints need a directory (the Checkpoints field)");
    return false;
  }
  o.checkpoint_dir = dir.toStdString();
  o.save_every = saveEvery_->value();
  o.keep = keep_->value();
  o.trace_detailed = detailed_->isChecked();
  o.trace_keep = kDetailedSteps;
  return true;
}

std::shared_ptr<profiler::Trace> RunOutputsForm::makeTrace() const {
  return std::make_shared<profiler::Trace>(
      detailed_->isChecked() ? profiler::Trace::Mode::Detailed : profiler::Trace::Mode::Light, kDetailedSteps);
}

}  // namespace shardlab::ui
