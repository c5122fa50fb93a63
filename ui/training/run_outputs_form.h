// What a training run leaves behind besides its charts: how much of its trace it keeps (per-step
// totals always; every span of the newest steps when detailed) and where, how often and how many
// checkpoints it saves (the project's training.checkpoint, which the Training tab keeps in step).
#pragma once

#include <QWidget>
#include <memory>

#include "engine/api/engine.h"

class QCheckBox;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace shardlab::ui {

class RunOutputsForm : public QWidget {
  Q_OBJECT

 public:
  // Spans of this many newest steps are kept by a detailed trace.
  static constexpr int kDetailedSteps = 20;

  explicit RunOutputsForm(QWidget* parent = nullptr);

  // Sets the trace and checkpoint fields of `o`; false with a message naming the field when one
  // is not usable.
  bool apply(runtime::TrainOptions& o, QString* error) const;
  // A new trace for a run, as the detailed-trace box asks.
  std::shared_ptr<profiler::Trace> makeTrace() const;

  // The folder typed, made absolute against the base folder (the project's, where it has a file:
  // a relative folder in a project is relative to the project, as the README says).
  QString checkpointDir() const;
  void setCheckpointDir(const QString& dir);
  void setBaseDir(const QString& dir) { base_ = dir; }
  // The folder, save-every and keep as a project has them; a value that differs is set.
  void showCheckpoint(const QString& dir, int saveEvery, int keep);

  QCheckBox* detailedTraceBox() const { return detailed_; }
  QLineEdit* checkpointDirEdit() const { return dir_; }
  QSpinBox* saveEveryBox() const { return saveEvery_; }
  QSpinBox* keepBox() const { return keep_; }

 signals:
  // The checkpoint directory was set (typed and confirmed, or picked); "" when cleared.
  void checkpointDirChanged(const QString& dir);

 private:
  void browse();

  QCheckBox* detailed_;
  QLineEdit* dir_;
  QToolButton* browse_;
  QSpinBox* saveEvery_;
  QSpinBox* keep_;
  QString lastDir_;  // what checkpointDirChanged last said, so it speaks only of changes
  QString base_;     // what a relative folder is relative to; empty: the working directory
};

}  // namespace shardlab::ui
