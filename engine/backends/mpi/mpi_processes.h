// Joining a run that mpirun or srun launched: the Processes (backends/processes.h) of the run over
// MPI, with Open MPI's or the launcher's rank, size and per-host process count.
#pragma once

#include <memory>

#include "engine/backends/processes.h"

namespace shardlab::backends::mpi {

// True when a launcher started this process as one of several (Open MPI's mpirun, Slurm's srun
// with PMI or PMIx, MPICH's hydra): their environment says so.
bool launched_by_mpi();
// Initializes MPI and returns this run's processes when launched_by_mpi() and the run has more
// than one process; else null (MPI is then never initialized). Call once, early in main.
std::shared_ptr<Processes> join_mpi_run(int* argc, char*** argv);

}  // namespace shardlab::backends::mpi
