// One training run over several processes: a launcher (mpirun) started with QProcess, and the
// JSONL log its process 0 writes, followed as it grows and handed to the UI as the same events an
// in-process TrainingRun emits, so the Training tab draws both alike. Nothing here blocks the UI
// thread while the run goes: the log is polled on a timer and only complete lines are read. Stop
// sends SIGTERM to the launcher, which passes it on: every process stops after the same step.
//
// Or a run this window did not start (a cluster job writing to a shared folder), attached by its
// log alone: followed until its "end" record, and again from the top when the file is replaced or
// cut short (the job restarted from a checkpoint); Stop then only stops following it.
#pragma once

#include <QByteArray>
#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

#include "engine/api/engine.h"
#include "engine/api/run_log.h"

namespace shardlab::ui {

class ProcessRun : public QObject {
  Q_OBJECT

 public:
  // The log is read this often while the run goes.
  static constexpr int kPollMs = 100;
  // After Stop, a launcher still running this long later is killed.
  static constexpr int kStopGraceMs = 15000;

  explicit ProcessRun(QObject* parent = nullptr);
  ~ProcessRun() override;  // shutdown()

  // Starts `program` with `arguments`, which make it write its JSONL log to `logFile` (a file
  // that does not exist yet). False when a run is already going.
  bool start(const QString& program, const QStringList& arguments, const QString& logFile);
  // Follows the log of a run started elsewhere (it may not exist yet). False when a run is going.
  bool attach(const QString& logFile);
  // SIGTERM to the launcher: the processes stop between steps (and the run reports cancelled).
  void stop();
  // Ends a run without reporting anything more (the tab is closing): SIGTERM, a few seconds'
  // wait, then SIGKILL.
  void shutdown();

  // From start() until finished() or failed() has been emitted.
  bool isRunning() const { return running_; }
  bool isStopping() const { return stopping_; }
  bool isAttached() const { return running_ && attached_; }
  // An attached run whose log has not grown for the quiet threshold (quiet() was emitted, heard() not yet).
  bool isQuiet() const { return isAttached() && quiet_; }
  // The run going, or the one that just ended, was attached (not launched here).
  bool wasAttached() const { return attached_; }
  QString logFile() const { return logFile_; }
  // The launcher's pid while it runs (0 otherwise).
  qint64 processId() const { return process_.processId(); }
  // Seconds from the log's start record to its latest, by the times the run wrote in them (-1 for
  // a log without them): how long an attached run took, whenever the window attached.
  double loggedSeconds() const { return firstTime_ >= 0 && lastTime_ >= firstTime_ ? lastTime_ - firstTime_ : -1; }
  // An attached run whose log has not grown for this long is reported quiet (it may have stopped:
  // a job killed with its node writes no "end").
  void setQuietAfterMs(int ms) { quietAfterMs_ = ms; }
  static constexpr int kQuietAfterMs = 120000;

 signals:
  // In the run's order, on the UI thread.
  void started(const shardlab::runtime::StartInfo& info);
  void stepped(const shardlab::runtime::StepEvent& event);
  void evaluated(const shardlab::runtime::EvalEvent& event);
  void saved(qint64 step, const QString& dir);  // process 0 committed a checkpoint
  // An attached run's log was replaced or cut short: it is read again from its start.
  void restarted();
  // An attached run's log has not grown for `seconds` (once per silence); heard() when it grows again.
  void quiet(double seconds);
  void heard();
  // A line the processes wrote to stderr (warnings, and the reason when one fails).
  void output(const QString& line);
  void finished(bool cancelled);
  // The launcher could not start, or it (or a process) ended with an error: `message` ends with
  // the last lines it wrote.
  void failed(const QString& message);

 private:
  void poll();           // reads what the log gained, line by line
  void parse(const QByteArray& line);
  void readErrors();     // the launcher's stderr, kept as a tail
  void readOutput();     // its stdout (process 0's progress), read only to keep the pipe flowing
  void onExited(int code, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  void end();            // back to idle, before the last signal
  void reset(const QString& logFile);  // a new run's state, before it starts or is attached
  static QList<qint64> childrenOf(qint64 parent);  // the pids whose parent is `parent`
  QString tail() const;  // the last lines of stderr (else stdout), for an error message

  QProcess process_;
  QTimer poll_, killTimer_;
  QString logFile_;
  qint64 offset_ = 0;    // how far the log has been read
  quint64 logInode_ = 0; // the log file being read (0: not opened yet), to notice a replaced one
  QByteArray partial_;   // a line whose end has not been written yet
  QByteArray errBuffer_, outTail_;
  QStringList errTail_;
  runtime::StartInfo info_;
  bool running_ = false, stopping_ = false, began_ = false, attached_ = false;
  qint64 lastStep_ = 0;
  double firstTime_ = -1, lastTime_ = -1;  // the start record's and the latest record's "time"
  QElapsedTimer sinceGrowth_;               // since the log last grew
  int quietAfterMs_ = kQuietAfterMs;
  bool quiet_ = false;
};

}  // namespace shardlab::ui
