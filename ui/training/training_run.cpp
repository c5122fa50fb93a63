#include "ui/training/training_run.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <map>

namespace shardlab::ui {

namespace {

constexpr qint64 kDrainBudgetMs = 15;

double peakFlops(int threads) {
  static std::mutex mutex;
  static std::map<int, double> measured;
  std::lock_guard lock(mutex);
  auto it = measured.find(threads);
  if (it != measured.end()) return it->second;
  return measured[threads] = profiler::measure_gemm_peak_flops(threads);
}

}  // namespace

// Runs on the worker thread, inside Trainer::run(): it only queues events and, between steps,
// waits out a pause or turns a stop into Trainer::cancel().
class TrainingRun::Listener : public runtime::TrainerListener {
 public:
  explicit Listener(TrainingRun* run) : run_(run) {}

  void on_start(const runtime::StartInfo& info) override {
    Event e;
    e.kind = Event::Start;
    e.start = info;
    run_->post(std::move(e));
    // The trainer clears its cancel flag when run() begins, so a stop that came while it was
    // being built is applied here, before the first step.
    run_->betweenSteps();
  }
  void on_step(const runtime::StepEvent& step) override {
    Event e;
    e.kind = Event::Step;
    e.step = step;
    run_->post(std::move(e));
    run_->betweenSteps();
  }
  void on_eval(const runtime::EvalEvent& eval) override {
    Event e;
    e.kind = Event::Eval;
    e.eval = eval;
    run_->post(std::move(e));
  }
  // From the thread that wrote the checkpoint (a background save's own): post() is thread-safe.
  void on_saved(int64_t step, const std::string& dir) override {
    Event e;
    e.kind = Event::Save;
    e.savedStep = step;
    e.message = QString::fromStdString(dir);
    run_->post(std::move(e));
  }
  void on_finish(bool cancelled) override { cancelled_ = cancelled; }

  bool cancelled() const { return cancelled_; }

 private:
  TrainingRun* run_;
  bool cancelled_ = false;
};

TrainingRun::TrainingRun(QObject* parent) : QObject(parent) {}

TrainingRun::~TrainingRun() { shutdown(); }

bool TrainingRun::start(project::Project project, runtime::TrainOptions options) {
  if (running_) return false;
  if (worker_.joinable()) worker_.join();  // a finished run whose last event is not drained yet
  {
    std::lock_guard lock(eventsMutex_);
    events_.clear();
  }
  paused_ = false;
  stopRequested_ = false;
  running_ = true;
  worker_ = std::thread([this, p = std::move(project), options]() mutable { work(std::move(p), options); });
  return true;
}

void TrainingRun::pause() {
  std::lock_guard lock(controlMutex_);
  if (running_) paused_ = true;
}

void TrainingRun::resume() {
  {
    std::lock_guard lock(controlMutex_);
    paused_ = false;
  }
  resumed_.notify_all();
}

void TrainingRun::stop() {
  {
    std::lock_guard lock(controlMutex_);
    if (!running_) return;
    stopRequested_ = true;
    if (trainer_) trainer_->cancel();
  }
  resumed_.notify_all();  // a paused worker wakes up to stop
}

bool TrainingRun::requestSave() {
  std::lock_guard lock(controlMutex_);
  if (!trainer_) return false;
  trainer_->request_save();
  return true;
}

void TrainingRun::shutdown() {
  stop();
  if (worker_.joinable()) worker_.join();
}

void TrainingRun::betweenSteps() {
  std::unique_lock lock(controlMutex_);
  resumed_.wait(lock, [this] { return !paused_ || stopRequested_; });
  if (stopRequested_ && trainer_) trainer_->cancel();
}

void TrainingRun::work(project::Project project, runtime::TrainOptions options) {
  Listener listener(this);
  std::unique_ptr<runtime::Trainer> trainer;
  Event end;
  end.kind = Event::Finish;
  try {
    // MFU needs the machine's peak with the run's threads: measured once per thread count, here
    // rather than on the UI thread (it takes a fraction of a second) and before training starts
    // (which would disturb it).
    Event prepared;
    prepared.kind = Event::Prepare;
    prepared.peakFlops = peakFlops(options.threads);
    post(std::move(prepared));
    trainer = std::make_unique<runtime::Trainer>(std::move(project), options);
    trainer->add_listener(&listener);
    {
      std::lock_guard lock(controlMutex_);
      trainer_ = trainer.get();
    }
    if (stopRequested_) {
      end.cancelled = true;  // stopped while the trainer was being built: no step was taken
    } else {
      trainer->run();
      end.cancelled = listener.cancelled();
    }
  } catch (const std::exception& e) {
    end.kind = Event::Fail;
    end.message = QString::fromStdString(e.what());
  } catch (...) {
    end.kind = Event::Fail;
    end.message = tr("the engine stopped with an unknown error");
  }
  {
    std::lock_guard lock(controlMutex_);
    trainer_ = nullptr;
  }
  trainer.reset();  // the model's memory is freed here, not on the UI thread
  post(std::move(end));
}

void TrainingRun::post(Event event) {
  bool schedule = false;
  {
    std::lock_guard lock(eventsMutex_);
    events_.push_back(std::move(event));
    schedule = !drainPending_;
    drainPending_ = true;
  }
  // One queued call drains everything that piles up before it runs.
  if (schedule) QMetaObject::invokeMethod(this, &TrainingRun::drain, Qt::QueuedConnection);
}

void TrainingRun::drain() {
  // Emits what is queued, but hands the event loop back after kDrainBudgetMs: a burst of
  // thousands of tiny steps (after the UI was busy) is spread over several turns.
  QElapsedTimer budget;
  budget.start();
  for (;;) {
    Event e;
    {
      std::lock_guard lock(eventsMutex_);
      if (events_.empty()) {
        drainPending_ = false;
        return;
      }
      if (budget.elapsed() >= kDrainBudgetMs) {
        QMetaObject::invokeMethod(this, &TrainingRun::drain, Qt::QueuedConnection);  // still pending
        return;
      }
      e = std::move(events_.front());
      events_.pop_front();
    }
    switch (e.kind) {
      case Event::Prepare:
        emit prepared(e.peakFlops);
        break;
      case Event::Save:
        emit saved(e.savedStep, e.message);
        break;
      case Event::Start:
        emit started(e.start);
        break;
      case Event::Step:
        emit stepped(e.step);
        break;
      case Event::Eval:
        emit evaluated(e.eval);
        break;
      case Event::Finish:
      case Event::Fail:
        // The worker posts this as its very last act, so the join returns at once.
        if (worker_.joinable()) worker_.join();
        {
          std::lock_guard lock(controlMutex_);
          running_ = false;
          paused_ = false;
          stopRequested_ = false;
        }
        if (e.kind == Event::Finish)
          emit finished(e.cancelled);
        else
          emit failed(e.message);
        break;
    }
  }
}

}  // namespace shardlab::ui
