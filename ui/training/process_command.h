// The `shardlab-cli train` command line of a run over several processes, built in one place for
// both who need it: the Training tab, which launches it under a local mpirun, and the cluster
// dialog, which writes it out for a hostfile or a Slurm batch script. Pure text, no processes.
#pragma once

#include <QString>
#include <QStringList>

#include "engine/api/engine.h"

namespace shardlab::ui {

struct TrainCommand {
  QString project;  // the saved project file (absolute)
  QString mesh;     // "data=4,model=2"; "" leaves the project's (one device)
  QString rules;    // "batch=data,hidden=model"; "" leaves the project's (none)
  // What the Training tab would give an in-process run: steps or epochs, batch size,
  // microbatches and their pipeline schedule, seed, learning rate, CPU threads (0: the CLI's
  // default), checkpoints and how a run in the checkpoint folder continues. Devices, trace and the
  // rest are not passed.
  runtime::TrainOptions options;
};

// ["train", project, "--mesh", mesh, "--rules", rules, "--steps", ...]: the arguments after the
// program name, every process's own.
QStringList trainArguments(const TrainCommand& c);

// mpirun's arguments to run `cli` as `processes` processes on this machine, writing its JSONL log
// to `log`: more processes than cores allowed, and no core binding (the engine places its own
// threads), as root too (a container).
QStringList localMpirunArguments(int processes, const QString& cli, const TrainCommand& c, const QString& log,
                                 const QString& trace = {});

// The line to paste on a cluster's login node: `mpirun -np K --hostfile hosts shardlab-cli train …`
// (shardlab-cli from the PATH there).
QString hostfileCommandLine(int processes, const TrainCommand& c);
// A Slurm batch script: `nodes` nodes with `tasksPerNode` processes each, started by srun over PMIx.
QString sbatchScript(int nodes, int tasksPerNode, const TrainCommand& c);

// Words joined for a POSIX shell, each quoted only where it needs to be.
QString shellJoin(const QStringList& words);

// "" when a mesh of `meshDevices` devices can be split over `processes` processes (each holds
// the same number of whole devices); else why not, naming both numbers.
QString processCountProblem(qint64 meshDevices, int processes);

}  // namespace shardlab::ui
