// Runs python3 for the tests that compare against Python packages (safetensors, onnxruntime):
// the exit code and everything it printed, or why it could not run, so a test can skip with a reason.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace shardlab::testing {

struct PyResult {
  bool started = false;
  int exit_code = -1;
  QString out;
};

inline PyResult run_python(const QStringList& args, int timeout_ms = 300000) {
  QProcess p;
  p.setProgram("python3");
  p.setArguments(args);
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start();
  PyResult r;
  if (!p.waitForStarted(10000)) {
    r.out = "could not start python3: " + p.errorString();
    return r;
  }
  r.started = true;
  p.closeWriteChannel();
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.out = "timed out";
    return r;
  }
  r.out = QString::fromUtf8(p.readAll());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

}  // namespace shardlab::testing
