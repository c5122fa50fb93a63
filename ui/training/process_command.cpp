#include "ui/training/process_command.h"

#include <QFileInfo>
#include <QLocale>
#include <QObject>
#include <QRegularExpression>
#include <cmath>

namespace shardlab::ui {

namespace {

QString integer(qint64 v) { return QString::number(v); }

// The shortest text that reads back as the same double, so every process gets exactly the rate
// typed; plain decimals where they are short ("0.0001"), an exponent otherwise ("2.5e-09").
QString exact(double v) {
  const double a = std::abs(v);
  const char format = a == 0 || (a >= 1e-5 && a < 1e7) ? 'f' : 'g';
  return QString::number(v, format, QLocale::FloatingPointShortest);
}

}  // namespace

QStringList trainArguments(const TrainCommand& c) {
  const runtime::TrainOptions& o = c.options;
  QStringList a{QStringLiteral("train"), c.project};
  if (!c.mesh.isEmpty()) a << QStringLiteral("--mesh") << c.mesh;
  if (!c.rules.isEmpty()) a << QStringLiteral("--rules") << c.rules;
  // The CLI takes steps or epochs, not both; -1 leaves the project's own.
  if (o.steps > 0)
    a << QStringLiteral("--steps") << integer(o.steps);
  else if (o.epochs > 0)
    a << QStringLiteral("--epochs") << integer(o.epochs);
  if (o.batch_size > 0) a << QStringLiteral("--batch-size") << integer(o.batch_size);
  if (o.accumulate > 0) a << QStringLiteral("--accumulate") << integer(o.accumulate);
  if (!o.pipeline_schedule.empty())
    a << QStringLiteral("--pipeline-schedule") << QString::fromStdString(o.pipeline_schedule);
  if (o.seed >= 0) a << QStringLiteral("--seed") << integer(o.seed);
  if (o.learning_rate) a << QStringLiteral("--lr") << exact(*o.learning_rate);
  if (o.threads > 0) a << QStringLiteral("--threads") << integer(o.threads);
  if (!o.checkpoint_dir.empty()) {
    a << QStringLiteral("--checkpoint-dir") << QString::fromStdString(o.checkpoint_dir);
    if (o.save_every > 0) a << QStringLiteral("--save-every") << integer(o.save_every);
    a << QStringLiteral("--keep") << integer(o.keep);
    if (!o.resume_from.empty())
      a << QStringLiteral("--resume-from") << QString::fromStdString(o.resume_from);
    else if (o.continue_run)
      a << QStringLiteral("--continue");
    else if (o.start_over)
      a << QStringLiteral("--start-over");
  } else if (!o.resume_from.empty()) {
    a << QStringLiteral("--resume-from") << QString::fromStdString(o.resume_from);
  }
  return a;
}

QStringList localMpirunArguments(int processes, const QString& cli, const TrainCommand& c, const QString& log,
                                 const QString& trace) {
  QStringList args{QStringLiteral("--oversubscribe"), QStringLiteral("--allow-run-as-root"), QStringLiteral("--bind-to"),
                   QStringLiteral("none"),           QStringLiteral("-np"),                QString::number(processes), cli};
  args += trainArguments(c) + QStringList{QStringLiteral("--log"), log};
  if (!trace.isEmpty()) args += QStringList{QStringLiteral("--trace"), trace};
  return args;
}

QString hostfileCommandLine(int processes, const TrainCommand& c) {
  return shellJoin(QStringList{QStringLiteral("mpirun"), QStringLiteral("-np"), QString::number(processes),
                               QStringLiteral("--hostfile"), QStringLiteral("hosts"), QStringLiteral("shardlab-cli")} +
                   trainArguments(c));
}

QString sbatchScript(int nodes, int tasksPerNode, const TrainCommand& c) {
  QString name = QFileInfo(c.project).fileName();
  name.remove(QRegularExpression(QStringLiteral("(\\.shardlab)?\\.json$")));
  if (name.isEmpty()) name = QStringLiteral("shardlab");
  QStringList lines{QStringLiteral("#!/bin/bash"),
                    QStringLiteral("#SBATCH --job-name=%1").arg(name),
                    QStringLiteral("#SBATCH --nodes=%1").arg(nodes),
                    QStringLiteral("#SBATCH --ntasks-per-node=%1").arg(tasksPerNode),
                    QString(),
                    QStringLiteral("# Every task runs the same command over one global mesh; task 0 prints and writes "
                                   "checkpoints."),
                    QStringLiteral("# The project, its data and shardlab-cli must be at the same paths on every node."),
                    shellJoin(QStringList{QStringLiteral("srun"), QStringLiteral("--mpi=pmix"), QStringLiteral("shardlab-cli")} +
                              trainArguments(c))};
  return lines.join('\n') + '\n';
}

QString shellJoin(const QStringList& words) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./=+,:@%-]+$"));
  QStringList out;
  for (const QString& w : words) {
    if (plain.match(w).hasMatch())
      out << w;
    else
      out << QLatin1Char('\'') + QString(w).replace(QLatin1Char('\''), QStringLiteral("'\\''")) + QLatin1Char('\'');
  }
  return out.join(QLatin1Char(' '));
}

QString processCountProblem(qint64 meshDevices, int processes) {
  if (processes < 1) return QObject::tr("Processes: %1 is not a process count").arg(processes);
  if (meshDevices % processes == 0) return QString();
  return QObject::tr("The mesh's %1 device(s) cannot be shared by %2 processes: the device count must divide by the "
                     "process count (each process holds the same number of devices). Change the mesh in Mesh & Rules "
                     "or the number of processes.")
      .arg(meshDevices)
      .arg(processes);
}

}  // namespace shardlab::ui
