// Runs shardlab-cli as a user does, for the tests that check its exit codes and output: the real
// binary from the build, its exit code (-1 when a signal killed it), stdout and stderr.
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace shardlab::testing {

inline const QString kCli = QStringLiteral(SHARDLAB_BINARY_DIR "/app/shardlab-cli");

struct CliResult {
  int exit_code = -1;
  QString out, err;
};

// `env`: variables to add to (or replace in) the test's own environment for this run.
inline CliResult run_cli(const QStringList& args, int timeout_ms = 120000, const QProcessEnvironment& env = {}) {
  QProcess p;
  if (!env.isEmpty()) {
    QProcessEnvironment all = QProcessEnvironment::systemEnvironment();
    all.insert(env);
    p.setProcessEnvironment(all);
  }
  p.setProgram(kCli);
  p.setArguments(args);
  p.start();
  CliResult r;
  if (!p.waitForStarted(10000)) {
    r.err = "could not start " + kCli + ": " + p.errorString();
    return r;
  }
  p.closeWriteChannel();
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

}  // namespace shardlab::testing
