// The Training tab's settings for one run: steps or epochs, batch size, microbatches and their
// pipeline schedule, learning rate, seed, CPU threads, virtual devices and local processes. Filled
// from the project's training section, where the Training tab stores steps, epochs, batch size,
// microbatches, pipeline schedule and seed back as they are edited; read into the engine's
// TrainOptions plus a learning rate that overrides the project's schedule in the copy of the
// project a run trains (the learning rate, threads, devices and processes are this run's alone).
#pragma once

#include <QWidget>
#include <string>

#include "engine/api/engine.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace shardlab::ui {

struct RunSettings {
  runtime::TrainOptions options;
  double learningRate = 0;
  // 1: train in this process; more: as that many local processes under mpirun.
  int processes = 1;
};

// The schedule's headline rate: the constant value, or the peak of a warmup-cosine schedule.
double headlineLearningRate(const project::ScheduleSpec& s);

class HyperparameterForm : public QWidget {
  Q_OBJECT

 public:
  explicit HyperparameterForm(QWidget* parent = nullptr);

  // Every field from the project: its training section, its learning rate, and `meshDevices`
  // (the device count of its mesh).
  void loadDefaults(const project::Project& p, int meshDevices);
  // The training section's steps, epochs, batch size, microbatches, pipeline schedule and seed (after
  // an undo, say); the other fields stay as they are.
  void showTraining(const project::TrainingSpec& t);
  // The mesh changed: the devices field follows it unless the user set it to something else.
  void setMeshDevices(int meshDevices);

  // Whether mpirun was found: without it the processes field stays at 1 and says what to install.
  void setMpirunFound(bool found);

  // The settings as entered; false with a message naming the field when one is not usable.
  bool settings(RunSettings* out, QString* error) const;

  QSpinBox* stepsBox() const { return steps_; }
  QSpinBox* epochsBox() const { return epochs_; }
  QSpinBox* batchBox() const { return batch_; }
  QSpinBox* accumulateBox() const { return accumulate_; }
  QComboBox* pipelineScheduleBox() const { return pipelineSchedule_; }
  // The schedule chosen, as the project writes it: "1f1b" or "gpipe".
  std::string pipelineSchedule() const;
  QLineEdit* learningRateEdit() const { return learningRate_; }
  QSpinBox* seedBox() const { return seed_; }
  QSpinBox* threadsBox() const { return threads_; }
  QSpinBox* devicesBox() const { return devices_; }
  QSpinBox* processesBox() const { return processes_; }

 private:
  QSpinBox* steps_;
  QSpinBox* epochs_;
  QSpinBox* batch_;
  QSpinBox* accumulate_;
  QComboBox* pipelineSchedule_;
  QLineEdit* learningRate_;
  QLabel* schedule_;
  QSpinBox* seed_;
  QSpinBox* threads_;
  QSpinBox* devices_;
  QSpinBox* processes_;
  int meshDevices_ = 1;
};

}  // namespace shardlab::ui
