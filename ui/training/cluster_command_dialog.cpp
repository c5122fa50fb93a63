#include "ui/training/cluster_command_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

namespace shardlab::ui {

namespace {

QPlainTextEdit* commandView(QWidget* parent, const QString& name, int lines) {
  auto* view = new QPlainTextEdit(parent);
  view->setObjectName(name);
  view->setReadOnly(true);
  view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  view->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  view->setMinimumHeight(view->fontMetrics().lineSpacing() * lines + 12);
  return view;
}

// A group with the text and a Copy button under it.
QGroupBox* commandBox(QWidget* parent, const QString& title, const QString& hint, QPlainTextEdit* view,
                      const QString& copyName) {
  auto* box = new QGroupBox(title, parent);
  auto* layout = new QVBoxLayout(box);
  auto* label = new QLabel(hint, box);
  label->setWordWrap(true);
  layout->addWidget(label);
  layout->addWidget(view);
  auto* copy = new QPushButton(QObject::tr("Copy"), box);
  copy->setObjectName(copyName);
  QObject::connect(copy, &QPushButton::clicked, view, [view] { QApplication::clipboard()->setText(view->toPlainText()); });
  auto* row = new QHBoxLayout;
  row->addStretch(1);
  row->addWidget(copy);
  layout->addLayout(row);
  return box;
}

}  // namespace

ClusterCommandDialog::ClusterCommandDialog(TrainCommand command, qint64 meshDevices, int processes, const QString& note,
                                           QWidget* parent)
    : QDialog(parent), command_(std::move(command)), meshDevices_(meshDevices) {
  setObjectName("clusterCommandDialog");
  setWindowTitle(tr("Command Line for a Cluster"));

  auto* intro = new QLabel(
      tr("Train %1 on mesh %2 (%3 device(s)) with the Training tab's settings, on several machines. The project, its "
         "data and shardlab-cli must be at the same paths on each.")
          .arg(QFileInfo(command_.project).fileName(), command_.mesh.isEmpty() ? tr("of one device") : command_.mesh)
          .arg(meshDevices_),
      this);
  intro->setWordWrap(true);
  auto* noteLabel = new QLabel(note, this);
  noteLabel->setObjectName("clusterNote");
  noteLabel->setWordWrap(true);
  noteLabel->setVisible(!note.isEmpty());

  nodes_ = new QSpinBox(this);
  nodes_->setObjectName("nodes");
  nodes_->setRange(1, 4096);
  nodes_->setValue(std::max(1, processes));
  nodes_->setToolTip(tr("Machines the run spans"));
  perNode_ = new QSpinBox(this);
  perNode_->setObjectName("tasksPerNode");
  perNode_->setRange(1, 256);
  perNode_->setValue(1);
  perNode_->setToolTip(tr("Processes on each machine (one per GPU, or one per machine for CPU devices)"));
  auto* counts = new QFormLayout;
  counts->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
  counts->addRow(tr("&Nodes"), nodes_);
  counts->addRow(tr("&Processes per node"), perNode_);

  problem_ = new QLabel(this);
  problem_->setObjectName("clusterProblem");
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("QLabel { color: #b00020; }"));

  mpirun_ = commandView(this, "mpirunCommand", 4);
  sbatch_ = commandView(this, "sbatchScript", 10);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(noteLabel);
  layout->addLayout(counts);
  layout->addWidget(problem_);
  // The script is the longer text: it gets the room a taller dialog gives.
  layout->addWidget(commandBox(this, tr("Open MPI with a hostfile"),
                               tr("hosts lists the machines, one per line, e.g. <tt>node1 slots=1</tt>."), mpirun_,
                               "copyMpirun"),
                    1);
  layout->addWidget(commandBox(this, tr("Slurm batch script"),
                               tr("Save it as train.sbatch and submit it with <tt>sbatch train.sbatch</tt>."), sbatch_,
                               "copySbatch"),
                    2);
  layout->addWidget(buttons);
  resize(760, sizeHint().height());

  connect(nodes_, &QSpinBox::valueChanged, this, &ClusterCommandDialog::update);
  connect(perNode_, &QSpinBox::valueChanged, this, &ClusterCommandDialog::update);
  update();
}

QString ClusterCommandDialog::mpirunText() const { return mpirun_->toPlainText(); }
QString ClusterCommandDialog::sbatchText() const { return sbatch_->toPlainText(); }
QString ClusterCommandDialog::problemText() const { return problem_->text(); }

void ClusterCommandDialog::update() {
  const int processes = nodes_->value() * perNode_->value();
  // The text is written even when the counts do not fit, so the user sees what to change.
  problem_->setText(processCountProblem(meshDevices_, processes));
  problem_->setVisible(!problem_->text().isEmpty());
  mpirun_->setPlainText(hostfileCommandLine(processes, command_));
  sbatch_->setPlainText(sbatchScript(nodes_->value(), perNode_->value(), command_));
}

}  // namespace shardlab::ui
