// "Command Line for a Cluster": the Training tab's run as a cluster runs it, for the saved project
// file, its mesh and rules and the tab's settings: an `mpirun --hostfile` line and a Slurm batch
// script, each with a Copy button. It only writes text (process_command.h builds it); the
// cluster's own shardlab-cli runs it.
#pragma once

#include <QDialog>

#include "ui/training/process_command.h"

class QLabel;
class QPlainTextEdit;
class QSpinBox;

namespace shardlab::ui {

class ClusterCommandDialog : public QDialog {
  Q_OBJECT

 public:
  // `meshDevices`: the mesh's device count, which the processes must divide; `processes`: the
  // count to start with (nodes, one process each); `note`: what to say first ("" for nothing),
  // e.g. that the project has unsaved changes the file does not hold.
  ClusterCommandDialog(TrainCommand command, qint64 meshDevices, int processes, const QString& note,
                       QWidget* parent = nullptr);

  QSpinBox* nodesBox() const { return nodes_; }
  QSpinBox* tasksPerNodeBox() const { return perNode_; }
  QString mpirunText() const;
  QString sbatchText() const;
  // Why these counts do not fit the mesh ("" when they do).
  QString problemText() const;

 private:
  void update();

  TrainCommand command_;
  qint64 meshDevices_;
  QSpinBox* nodes_;
  QSpinBox* perNode_;
  QLabel* problem_;
  QPlainTextEdit* mpirun_;
  QPlainTextEdit* sbatch_;
};

}  // namespace shardlab::ui
