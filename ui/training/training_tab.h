// The Training tab: run settings (those a project keeps are saved with it), Start / Pause / Stop, a progress bar with ETA, live charts of
// loss, accuracy, step time and throughput, and the run's log. Each run trains a copy of the
// open project on a worker thread (TrainingRun); the UI thread only draws what it reports. A run
// shares its trace (for the Trace tab) and saves checkpoints where the tab says, on request too,
// and a run can continue from a saved checkpoint. With Processes above 1 a run is instead the
// saved project file trained by shardlab-cli as that many local processes under mpirun
// (ProcessRun), drawn from the log it writes; "Command Line for a Cluster…" writes the same run out
// for a hostfile or Slurm.
#pragma once

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>
#include <QWidget>
#include <deque>
#include <memory>

#include "engine/api/engine.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace shardlab::ui {

class HyperparameterForm;
class LineChart;
class ProcessRun;
class ProjectDocument;
class RunOutputsForm;
class TrainingRun;
struct RunSettings;
struct TrainCommand;

class TrainingTab : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingTab(ProjectDocument* doc, QWidget* parent = nullptr);
  ~TrainingTab() override;  // stops a run and joins its thread

  // From an accepted start() until runFinished() or runFailed().
  bool isRunning() const;
  bool isPaused() const;

  HyperparameterForm* form() const { return form_; }
  RunOutputsForm* outputsForm() const { return outputs_; }
  LineChart* lossChart() const { return lossChart_; }
  LineChart* accuracyChart() const { return accuracyChart_; }
  LineChart* stepTimeChart() const { return stepTimeChart_; }
  LineChart* throughputChart() const { return throughputChart_; }
  QProgressBar* progressBar() const { return progress_; }
  QPlainTextEdit* runLog() const { return log_; }
  // The error banner's text ("" when there is none).
  QString errorText() const;

  // Runs over processes start `cli` (by default shardlab-cli beside this program) under `mpirun`
  // (by default the one on the PATH; "" when there is none, which disables the Processes field).
  void setCliProgram(const QString& cli) { cliProgram_ = cli; }
  QString cliProgram() const { return cliProgram_; }
  void setMpirunProgram(const QString& mpirun);
  // The JSONL log the current or last run over processes writes ("" before one); it lasts until
  // the next such run.
  QString processLogFile() const;
  ProcessRun* processRun() const { return processRun_; }

 public slots:
  void start();
  void pause();
  void resume();
  void togglePause();
  void stop();
  // Saves a checkpoint after the current step of the running run (its checkpoint directory must
  // have been set when it started).
  void saveCheckpointNow();
  // Starts a run that continues from a checkpoint's step directory ("…/step_000120") with the
  // form's settings; its further checkpoints go to the directory's parent unless one is set.
  void resumeFrom(const QString& stepDir);
  // Opens "Command Line for a Cluster" for the saved project and these settings (or says why not).
  void showClusterCommand();
  // Follows a run started elsewhere (a cluster job writing to a shared folder) by its JSONL log,
  // `path` or the one log in the folder `path`: drawn as a run of this window's, its checkpoints
  // listed as they commit, until its end record; Stop stops following it. False (saying why)
  // while a run is going or when no log is found.
  bool attachToRun(const QString& path);

 signals:
  // runStarted() when a run is accepted (its trainer is then built on the worker); each run
  // then ends with exactly one runFinished() or runFailed(). A start refused before any run
  // (project errors, a bad field, devices not matching the mesh) emits runFailed() alone.
  void runStarted();
  void runFinished(bool cancelled);
  void stepReported(qint64 step, double loss);
  void evalReported(qint64 step, double accuracy);
  void runFailed(const QString& message);
  // Before the run's first step: the trace it records into (the Trace tab polls it live), a label
  // naming the run ("run 2: data=2,model=4"), and the machine's peak FLOP/s for MFU.
  void traceStarted(std::shared_ptr<shardlab::profiler::Trace> trace, const QString& label, double peakFlops);
  // A run over processes ended and process 0 wrote every process's trace to `path`.
  void traceFileWritten(const QString& path);
  void checkpointDirChanged(const QString& dir);
  void checkpointSaved(qint64 step, const QString& dir);

 private:
  bool askAboutExistingRun(runtime::TrainOptions& options);
  void launch(const QString& resumeDir);
  void projectOpened();
  void projectChanged();
  // The run settings a project keeps (steps, epochs, batch size, seed and training.checkpoint):
  // shown from the document, and stored into it as one undoable edit per field as they are typed.
  void showRunSettings();
  void storeRunSettings(const QString& field);
  int meshDevices() const;
  bool running() const;   // either kind of run
  bool stopping() const;
  // The command line a run over processes gives shardlab-cli for the saved project file, its mesh and
  // rules and `settings`; false with the reason when the project has no file or no usable mesh.
  bool processCommand(const RunSettings& settings, TrainCommand* out, QString* problem) const;
  // Whether the saved file, with `o` on the command line, trains what the window shows: true when
  // nothing is unsaved or only run settings that `o` carries are.
  bool fileHoldsRun(const runtime::TrainOptions& o) const;

  void onPrepared(double peakFlops);
  void onStarted(const runtime::StartInfo& info);
  QString ranText(const QString& took) const;
  void onSaved(qint64 step, const QString& dir);
  void onStep(const runtime::StepEvent& e);
  void onEval(const runtime::EvalEvent& e);
  void onFinished(bool cancelled);
  void onFailed(const QString& message);

  void refuse(const QString& message);
  void showError(const QString& message);
  void log(const QString& line);
  void updateControls();
  void updateStatus();
  void refreshProgress();
  void beginRun();  // a new run's state: nothing reported yet, charts empty, progress busy
  void resetCharts();
  void showNotStarted();  // the progress bar before any run: no "0 / 1 steps"

  ProjectDocument* doc_;
  TrainingRun* run_;
  ProcessRun* processRun_;
  QString cliProgram_, mpirunProgram_;
  std::unique_ptr<QTemporaryDir> processLogDir_;
  int runProcesses_ = 1;  // of the current run: 1 in this process, more under mpirun
  HyperparameterForm* form_;
  RunOutputsForm* outputs_;
  QPushButton* startButton_;
  QPushButton* pauseButton_;
  QPushButton* stopButton_;
  QPushButton* clusterButton_;
  QLabel* error_;
  QProgressBar* progress_;
  QLabel* status_;
  QString quietText_;  // what the status says while a followed run's log is quiet
  // Under dynamic loss scaling (float16): the scale and the steps skipped so far; hidden otherwise.
  QLabel* lossScale_;
  LineChart* lossChart_;
  LineChart* accuracyChart_;
  LineChart* stepTimeChart_;
  LineChart* throughputChart_;
  QPlainTextEdit* log_;
  int skippedSteps_ = -1;  // the loss chart's marks of skipped steps
  int trainLoss_ = -1, evalLoss_ = -1, trainAcc_ = -1, evalAcc_ = -1, computeMs_ = -1, waitMs_ = -1, examples_ = -1;

  // The current run, as far as the UI knows it.
  QString runName_, runLabel_;
  int runCount_ = 0;
  std::shared_ptr<profiler::Trace> trace_;
  bool runSavesCheckpoints_ = false;
  bool pendingSave_ = false;  // asked for before the trainer was ready
  bool began_ = false;        // on_start arrived
  QString attachedTrace_;  // where an attached run's trace lands, if it writes one
  bool detached_ = false;  // Stop on an attached run: it goes on elsewhere, only the following ended
  runtime::StartInfo info_;
  runtime::StepEvent last_;
  std::deque<double> recentStepSeconds_;  // the ETA averages these
  QElapsedTimer clock_;
  QTimer refresh_;
  int64_t logEvery_ = 1;
  bool showing_ = false;  // the fields are being set from the document, not by the user
};

}  // namespace shardlab::ui
