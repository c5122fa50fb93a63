#include "ui/training/hyperparameter_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QSpinBox>
#include <algorithm>
#include <climits>
#include <cmath>

namespace shardlab::ui {

double headlineLearningRate(const project::ScheduleSpec& s) {
  return s.type == "warmup_cosine_decay" ? s.peak_value : s.value;
}

namespace {

QSpinBox* spinBox(QWidget* parent, const QString& name, int lo, int hi, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setObjectName(name);
  box->setRange(lo, hi);
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}

int clampInt(int64_t v, int lo, int hi) { return int(std::clamp<int64_t>(v, lo, hi)); }

}  // namespace

HyperparameterForm::HyperparameterForm(QWidget* parent) : QWidget(parent) {
  steps_ = spinBox(this, "steps", 0, 100000000, tr("Training steps; 0 trains for the number of epochs below"));
  steps_->setSpecialValueText(tr("0 (use epochs)"));
  epochs_ = spinBox(this, "epochs", 1, 100000, tr("Passes over the training split (when steps is 0)"));
  batch_ = spinBox(this, "batchSize", 1, 1 << 20, tr("Examples per step"));
  accumulate_ = spinBox(this, "accumulate", 1, 1 << 16,
                        tr("Gradient accumulation: each step runs the batch as this many equal microbatches, one after "
                           "another, and applies one update with their mean gradient. Activations need memory for one "
                           "microbatch only; the summed gradients need as much as the parameters."));
  pipelineSchedule_ = new QComboBox(this);
  pipelineSchedule_->setObjectName("pipelineSchedule");
  pipelineSchedule_->addItem(tr("1F1B"), QStringLiteral("1f1b"));
  pipelineSchedule_->addItem(tr("GPipe"), QStringLiteral("gpipe"));
  pipelineSchedule_->setToolTip(
      tr("How pipeline stages order the microbatches. 1F1B (one forward, one backward) starts each microbatch's "
         "backward pass as soon as it can, so a stage holds fewer microbatches' activations at once; GPipe runs every "
         "forward pass, then every backward pass. It matters only with pipeline stages: a rule layer=<mesh axis>."));
  learningRate_ = new QLineEdit(this);
  learningRate_->setObjectName("learningRate");
  learningRate_->setToolTip(tr("Overrides the project's learning rate for this run (the project is not changed)"));
  schedule_ = new QLabel(this);
  schedule_->setObjectName("schedule");
  schedule_->setWordWrap(true);
  QFont small = schedule_->font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  schedule_->setFont(small);
  seed_ = spinBox(this, "seed", 0, INT_MAX, tr("Seed for initialisation, shuffling and dropout"));
  threads_ = spinBox(this, "threads", 0, 1024,
                     tr("CPU threads the engine uses; leave one core free to keep the desktop smooth"));
  threads_->setSpecialValueText(tr("all cores"));
  devices_ = spinBox(this, "devices", 1, 65536, tr("Virtual CPU devices; must match the mesh's device count"));
  // Up to 8: more local processes than that only share the same cores thinner.
  processes_ = spinBox(this, "processes", 1, 8, QString());
  processes_->setSpecialValueText(tr("1 (this window)"));
  setMpirunFound(true);

  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("&Steps"), steps_);
  form->addRow(tr("&Epochs"), epochs_);
  form->addRow(tr("&Batch size"), batch_);
  form->addRow(tr("&Microbatches"), accumulate_);
  form->addRow(tr("P&ipeline schedule"), pipelineSchedule_);
  form->addRow(tr("&Learning rate"), learningRate_);
  form->addRow(QString(), schedule_);
  form->addRow(tr("S&eed"), seed_);
  form->addRow(tr("CPU &threads"), threads_);
  form->addRow(tr("Virtual &devices"), devices_);
  form->addRow(tr("&Processes"), processes_);

  // Epochs only count when steps is 0.
  connect(steps_, &QSpinBox::valueChanged, this, [this](int v) { epochs_->setEnabled(v == 0); });

  // Until a project opens: the engine's own defaults.
  const project::Project empty;
  loadDefaults(empty, 1);
}

void HyperparameterForm::showTraining(const project::TrainingSpec& t) {
  // Only a value that differs is set: a field being typed in keeps its cursor.
  auto show = [](QSpinBox* box, int v) {
    if (box->value() != v) box->setValue(v);
  };
  show(steps_, clampInt(t.steps, 0, steps_->maximum()));
  show(epochs_, clampInt(t.epochs, 1, epochs_->maximum()));
  epochs_->setEnabled(steps_->value() == 0);
  show(batch_, clampInt(t.batch_size, 1, batch_->maximum()));
  show(accumulate_, clampInt(t.accumulate, 1, accumulate_->maximum()));
  // The project only holds "1f1b" or "gpipe" (it is validated on load); anything else shows the default.
  const int schedule = std::max(0, pipelineSchedule_->findData(QString::fromStdString(t.pipeline_schedule)));
  if (pipelineSchedule_->currentIndex() != schedule) pipelineSchedule_->setCurrentIndex(schedule);
  show(seed_, int(std::min<uint64_t>(t.seed, uint64_t(INT_MAX))));
}

std::string HyperparameterForm::pipelineSchedule() const {
  return pipelineSchedule_->currentData().toString().toStdString();
}

void HyperparameterForm::loadDefaults(const project::Project& p, int meshDevices) {
  showTraining(p.training);
  learningRate_->setText(QString::number(headlineLearningRate(p.optimizer.learning_rate), 'g', 6));
  const project::ScheduleSpec& s = p.optimizer.learning_rate;
  if (s.type == "warmup_cosine_decay")
    schedule_->setText(tr("peak of %1 (warmup %2 steps, cosine decay to %3 at step %4)")
                           .arg(QString::fromStdString(p.optimizer.type))
                           .arg(s.warmup_steps)
                           .arg(QString::number(s.end_value, 'g', 4))
                           .arg(s.decay_steps));
  else
    schedule_->setText(tr("constant, %1").arg(QString::fromStdString(p.optimizer.type)));
  threads_->setValue(0);
  meshDevices_ = std::max(1, meshDevices);
  devices_->setValue(meshDevices_);
}

void HyperparameterForm::setMeshDevices(int meshDevices) {
  meshDevices = std::max(1, meshDevices);
  if (devices_->value() == meshDevices_) devices_->setValue(meshDevices);
  meshDevices_ = meshDevices;
}

void HyperparameterForm::setMpirunFound(bool found) {
  if (!found) processes_->setValue(1);
  processes_->setEnabled(found);
  processes_->setToolTip(
      found ? tr("Train as this many processes on this machine, started by mpirun, each holding an equal share of the "
                 "mesh's devices (which must divide by it); 1 trains inside this window")
            : tr("mpirun was not found: install Open MPI (sudo apt install openmpi-bin) to train over several processes"));
}

bool HyperparameterForm::settings(RunSettings* out, QString* error) const {
  bool ok = false;
  const QString text = learningRate_->text().trimmed();
  const double lr = QLocale::c().toDouble(text, &ok);
  if (!ok || !std::isfinite(lr) || lr <= 0) {
    *error = tr("Learning rate: '%1' is not a positive number (e.g. 0.001 or 1e-3)").arg(text);
    return false;
  }
  if (batch_->value() % accumulate_->value() != 0) {
    *error = tr("Microbatches: %1 do not divide the batch size %2 (each microbatch must have as many examples)")
                 .arg(accumulate_->value())
                 .arg(batch_->value());
    return false;
  }
  RunSettings s;
  runtime::TrainOptions& o = s.options;
  if (steps_->value() > 0) {
    o.steps = steps_->value();
  } else {
    o.epochs = epochs_->value();  // the engine then trains whole epochs (steps 0)
  }
  o.batch_size = batch_->value();
  o.accumulate = accumulate_->value();
  o.pipeline_schedule = pipelineSchedule();
  o.seed = seed_->value();
  o.threads = threads_->value();
  o.devices = devices_->value();
  s.learningRate = lr;
  s.processes = processes_->value();
  *out = s;
  return true;
}

}  // namespace shardlab::ui
