#include "ui/training/process_run.h"

#include <csignal>
#include <sys/stat.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <cmath>
#include <string_view>
#include <utility>

namespace shardlab::ui {

namespace {

constexpr int kTailLines = 12;         // an error message ends with this many of the last lines
constexpr qsizetype kOutTailBytes = 4096;

}  // namespace

ProcessRun::ProcessRun(QObject* parent) : QObject(parent) {
  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &ProcessRun::poll);
  killTimer_.setSingleShot(true);
  connect(&killTimer_, &QTimer::timeout, this, [this] {
    emit output(tr("The processes did not stop within %1 s of Stop: killing them.").arg(kStopGraceMs / 1000));
    process_.kill();
  });
  connect(&process_, &QProcess::readyReadStandardError, this, &ProcessRun::readErrors);
  connect(&process_, &QProcess::readyReadStandardOutput, this, &ProcessRun::readOutput);
  connect(&process_, &QProcess::finished, this, &ProcessRun::onExited);
  connect(&process_, &QProcess::errorOccurred, this, &ProcessRun::onError);
}

ProcessRun::~ProcessRun() { shutdown(); }

void ProcessRun::reset(const QString& logFile) {
  running_ = true;
  stopping_ = began_ = attached_ = false;
  logFile_ = logFile;
  offset_ = 0;
  logInode_ = 0;
  lastStep_ = 0;
  firstTime_ = lastTime_ = -1;
  quiet_ = false;
  sinceGrowth_.start();
  info_ = {};
  partial_.clear();
  errBuffer_.clear();
  outTail_.clear();
  errTail_.clear();
}

bool ProcessRun::attach(const QString& logFile) {
  if (running_) return false;
  reset(logFile);
  attached_ = true;
  poll_.start();
  // What the log already holds, as soon as the caller has said the run began.
  QTimer::singleShot(0, this, [this] {
    if (running_ && attached_) poll();
  });
  return true;
}

bool ProcessRun::start(const QString& program, const QStringList& arguments, const QString& logFile) {
  if (running_) return false;
  reset(logFile);
  process_.setProgram(program);
  process_.setArguments(arguments);
  process_.start();
  poll_.start();
  return true;
}

void ProcessRun::stop() {
  if (!running_ || stopping_) return;
  if (attached_) {  // the run is not ours to stop: only the following ends
    end();
    emit finished(true);
    return;
  }
  stopping_ = true;
  // SIGTERM to the run's processes themselves: they agree on a step, stop after it, save and exit,
  // and mpirun with them. (SIGTERM to mpirun would reach them only after Open MPI's own delay and
  // be followed a second later by SIGKILL.) Without them yet, mpirun itself is asked.
  const QList<qint64> ranks = childrenOf(process_.processId());
  for (qint64 pid : ranks) ::kill(pid_t(pid), SIGTERM);
  if (ranks.isEmpty()) process_.terminate();
  killTimer_.start(kStopGraceMs);
}

QList<qint64> ProcessRun::childrenOf(qint64 parent) {
  QList<qint64> pids;
  if (parent <= 0) return pids;
  for (const QString& e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
    bool ok = false;
    const qint64 pid = e.toLongLong(&ok);
    if (!ok) continue;
    QFile stat(QStringLiteral("/proc/") + e + QStringLiteral("/stat"));
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QString text = QString::fromUtf8(stat.readAll());
    // "pid (name) state ppid ...": the name may hold spaces, so read after its closing parenthesis.
    const QStringList fields = text.mid(text.lastIndexOf(QLatin1Char(')')) + 2).split(QLatin1Char(' '));
    if (fields.size() > 1 && fields[1].toLongLong() == parent) pids.push_back(pid);
  }
  return pids;
}

void ProcessRun::shutdown() {
  if (!running_) return;
  if (attached_) {
    end();
    return;
  }
  // Nothing more is reported: whoever listens is going away.
  process_.disconnect(this);
  poll_.stop();
  killTimer_.stop();
  process_.terminate();
  if (!process_.waitForFinished(6000)) {
    process_.kill();
    process_.waitForFinished(3000);
  }
  running_ = false;
}

void ProcessRun::poll() {
  QFile f(logFile_);
  // An attached run that has gone quiet may have stopped where no "end" could be written.
  if (attached_ && !quiet_ && sinceGrowth_.elapsed() > quietAfterMs_) {
    quiet_ = true;
    emit quiet(sinceGrowth_.elapsed() / 1000.0);
  }
  // Process 0 creates the log once its trainer is built; until then there is nothing to read.
  if (!f.open(QIODevice::ReadOnly)) return;
  struct stat st {};
  const quint64 inode = ::fstat(f.handle(), &st) == 0 ? quint64(st.st_ino) : 0;
  if (f.size() < offset_ || (logInode_ != 0 && inode != logInode_)) {
    if (!attached_) return;  // not ours to follow (a truncated file)
    // A restarted job writes its log anew: the run is read again from its start.
    offset_ = 0;
    partial_.clear();
    lastStep_ = 0;
    firstTime_ = lastTime_ = -1;
    emit restarted();
  }
  logInode_ = inode;
  if (!f.seek(offset_)) return;
  const QByteArray more = f.readAll();
  offset_ += more.size();
  if (!more.isEmpty()) {
    sinceGrowth_.restart();
    if (std::exchange(quiet_, false)) emit heard();
  }
  partial_ += more;
  // Only whole lines: the writer may be half-way through the next one.
  qsizetype from = 0;
  for (qsizetype end; running_ && (end = partial_.indexOf('\n', from)) >= 0; from = end + 1)
    parse(partial_.mid(from, end - from));  // an attached run's "end" record stops the reading
  partial_.remove(0, from);
}

void ProcessRun::parse(const QByteArray& line) {
  using Kind = api::LogRecord::Kind;
  const api::LogRecord r = api::parse_log_line(std::string_view(line.constData(), size_t(line.size())), info_);
  if (std::isfinite(r.time)) {
    if (r.kind == Kind::Start) firstTime_ = r.time;
    lastTime_ = r.time;
  }
  switch (r.kind) {
    case Kind::Start:
      info_ = r.start;
      began_ = true;
      emit started(info_);
      break;
    case Kind::Step:
      lastStep_ = r.step.step;
      emit stepped(r.step);
      break;
    case Kind::Eval:
      emit evaluated(r.eval);
      break;
    case Kind::Saved: {
      QString dir = QString::fromStdString(r.dir);
      // A job names its checkpoints relative to where it runs; a window attached from elsewhere
      // takes that to be the log's folder (a job's shared run folder), not its own working folder.
      if (attached_ && QFileInfo(dir).isRelative()) dir = QFileInfo(logFile_).dir().filePath(dir);
      emit saved(r.saved_step, dir);
      break;
    }
    case Kind::Warning:
      // A launched run's warnings reach the window on its stderr already; an attached run has none.
      if (attached_) emit output(tr("warning: %1").arg(QString::fromStdString(r.message)));
      break;
    case Kind::End:
      // A launched run ends when its launcher exits (onExited); an attached one, here.
      if (!attached_) break;
      end();
      emit finished(r.cancelled);
      break;
    case Kind::Other:  // a record a newer CLI adds is not drawn
      break;
  }
}

void ProcessRun::readErrors() {
  errBuffer_ += process_.readAllStandardError();
  qsizetype from = 0;
  for (qsizetype end; (end = errBuffer_.indexOf('\n', from)) >= 0; from = end + 1) {
    const QString line = QString::fromLocal8Bit(errBuffer_.mid(from, end - from)).trimmed();
    if (line.isEmpty()) continue;
    errTail_ << line;
    if (errTail_.size() > kTailLines) errTail_.removeFirst();
    emit output(line);
  }
  errBuffer_.remove(0, from);
}

void ProcessRun::readOutput() {
  outTail_ += process_.readAllStandardOutput();
  if (outTail_.size() > kOutTailBytes) outTail_.remove(0, outTail_.size() - kOutTailBytes);
}

QString ProcessRun::tail() const {
  QStringList lines = errTail_;
  if (!errBuffer_.trimmed().isEmpty()) lines << QString::fromLocal8Bit(errBuffer_).trimmed();
  if (lines.isEmpty()) {
    // Some launcher messages go to stdout.
    lines = QString::fromLocal8Bit(outTail_).split('\n', Qt::SkipEmptyParts);
    if (lines.size() > kTailLines) lines = lines.mid(lines.size() - kTailLines);
  }
  return lines.join('\n');
}

void ProcessRun::end() {
  poll_.stop();
  killTimer_.stop();
  running_ = false;
}

void ProcessRun::onExited(int code, QProcess::ExitStatus status) {
  if (!running_) return;
  readErrors();
  readOutput();
  poll();  // the last records, written just before the processes ended
  if (!partial_.trimmed().isEmpty()) parse(partial_);
  partial_.clear();
  const bool stopped = stopping_;
  const bool ok = status == QProcess::NormalExit && code == 0;
  const QString program = QFileInfo(process_.program()).fileName();
  end();
  // After Stop the launcher may report the signal as an error: the user asked for it.
  if (stopped || ok) {
    emit finished(stopped || (began_ && lastStep_ < info_.total_steps));
    return;
  }
  const QString why = status == QProcess::CrashExit ? tr("%1 was killed").arg(program)
                                                    : tr("%1 exited with code %2").arg(program).arg(code);
  const QString last = tail();
  emit failed(last.isEmpty() ? why : tr("%1; its last lines:\n%2").arg(why, last));
}

void ProcessRun::onError(QProcess::ProcessError error) {
  // A crash or a failed write also ends in finished(); only a launch that never happened does not.
  if (error != QProcess::FailedToStart || !running_) return;
  end();
  emit failed(tr("Could not start %1: %2").arg(process_.program(), process_.errorString()));
}

}  // namespace shardlab::ui
