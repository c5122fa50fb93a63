// One training run on a worker thread: the thread builds its own runtime::Trainer from a copy of
// the project (building can take seconds), runs it, and hands every event to the UI thread.
// The UI thread never waits on training: events are queued under a mutex and drained by one
// queued call at a time, so a fast run cannot flood the event loop. Pause blocks the worker
// between steps; stop cancels between steps (also while paused); destroying the run stops and
// joins it.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine/api/engine.h"

namespace shardlab::ui {

class TrainingRun : public QObject {
  Q_OBJECT

 public:
  explicit TrainingRun(QObject* parent = nullptr);
  ~TrainingRun() override;  // stops a run and joins its thread

  // Starts a run of `project` (a copy the run owns). Returns false when one is already running.
  bool start(project::Project project, runtime::TrainOptions options);
  void pause();
  void resume();
  // Cancels between steps; a run still building its trainer stops as soon as that is done.
  void stop();
  // Asks the trainer to save a checkpoint after the current step (its options must name a
  // checkpoint directory); false when no trainer is running yet.
  bool requestSave();
  // Stops and waits for the worker (closing the window). Blocks for at most one step, or for the
  // trainer's construction when a run is stopped while still building.
  void shutdown();

  // From start() until finished() or failed() has been emitted.
  bool isRunning() const { return running_; }
  bool isPaused() const { return paused_; }
  bool isStopping() const { return stopRequested_; }

 signals:
  // All emitted on the thread this object lives in (the UI thread), in the run's order.
  // First: the machine's GEMM peak FLOP/s (measured once per process, on the worker).
  void prepared(double peakFlops);
  void started(const shardlab::runtime::StartInfo& info);
  void stepped(const shardlab::runtime::StepEvent& event);
  void evaluated(const shardlab::runtime::EvalEvent& event);
  void saved(qint64 step, const QString& dir);  // a checkpoint was committed
  void finished(bool cancelled);
  void failed(const QString& message);

 private:
  class Listener;
  struct Event {
    enum Kind { Prepare, Start, Step, Eval, Save, Finish, Fail } kind = Step;
    runtime::StartInfo start;
    runtime::StepEvent step;
    runtime::EvalEvent eval;
    bool cancelled = false;
    double peakFlops = 0;
    qint64 savedStep = 0;
    QString message;  // Fail: the error; Save: the checkpoint's directory
  };

  void work(project::Project project, runtime::TrainOptions options);
  // Worker side: queue an event, and schedule a drain unless one is already pending.
  void post(Event event);
  // UI side: emit everything queued so far.
  void drain();
  // Worker side, between steps: honours stop and blocks while paused.
  void betweenSteps();

  std::thread worker_;
  bool running_ = false;  // UI thread only

  std::mutex eventsMutex_;
  std::deque<Event> events_;
  bool drainPending_ = false;

  // Pause/stop, shared with the worker.
  std::mutex controlMutex_;
  std::condition_variable resumed_;
  std::atomic<bool> paused_{false}, stopRequested_{false};
  runtime::Trainer* trainer_ = nullptr;  // set while the worker's trainer exists (controlMutex_)
};

}  // namespace shardlab::ui
