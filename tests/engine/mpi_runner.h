// Runs a program under mpirun as a user on one machine does, for the tests of runs over several
// processes: the launcher's flags for this machine, the run's exit code, output and wall time, and
// what a run's JSONL log says.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QVector>

namespace shardlab::testing {

// Whether the tests' runs keep Open MPI off shared memory (SHARDLAB_MPI_TRANSPORT=tcp): every
// message then crosses TCP over the loopback, as between two hosts.
inline bool over_tcp() { return qEnvironmentVariable("SHARDLAB_MPI_TRANSPORT") == QLatin1String("tcp"); }

// More processes than cores, and root inside a container.
inline QStringList launcher_flags(int processes) {
  QStringList flags{"--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-np", QString::number(processes)};
  if (over_tcp()) flags << "--mca" << "btl" << "tcp,self" << "--mca" << "pml" << "ob1" << "--mca" << "btl_tcp_if_include" << "lo";
  return flags;
}

struct Launch {
  int exit_code = -1;  // -1 when a signal ended the launcher or it did not finish
  QString out, err;
  qint64 ms = 0;
};

inline Launch run_mpirun(const QString& launcher, int processes, const QString& program, const QStringList& args,
                         int timeout_ms = 180000) {
  QProcess p;
  p.setProgram(launcher);
  p.setArguments(launcher_flags(processes) + QStringList{program} + args);
  QElapsedTimer t;
  t.start();
  p.start();
  Launch r;
  if (!p.waitForStarted(10000) || !p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "mpirun did not finish: " + p.errorString();
    return r;
  }
  r.ms = t.elapsed();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

// The losses of a JSONL log's steps and evaluations, in order.
inline QVector<double> logged_losses(const QString& log) {
  QVector<double> out;
  QFile f(log);
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o["event"] == "step" || o["event"] == "eval") out.push_back(o["loss"].toDouble());
  }
  return out;
}

// The log's first record: {"event": "start", ...}.
inline QJsonObject start_record(const QString& log) {
  QFile f(log);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readLine()).object();
}

}  // namespace shardlab::testing
