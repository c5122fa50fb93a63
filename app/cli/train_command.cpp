// `shardlab-cli train`: trains a project and prints progress and the final evaluation.
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <unistd.h>
#include <utility>

#include "app/cli/commands.h"
#include "app/cli/progress.h"
#include "engine/backends/processes.h"
#include "engine/checkpoint/sharded.h"
#include "engine/profiler/process_traces.h"
#include "engine/runtime/trainer.h"
#include "engine/util/output_file.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {
runtime::Trainer* g_trainer = nullptr;
// Ctrl-C stops between steps, so the run ends with its metrics rather than mid-step.
void on_interrupt(int) {
  if (g_trainer) g_trainer->cancel();
}

// One of several processes: the launcher sends SIGTERM to every process when one of them died or
// the user interrupted the run. Each process says so at once and stops between steps when every
// process can; one held in a collective by a dead peer ends a few seconds later instead of hanging
// (once all have agreed to stop, none is dead, and the final save may take its time).
char g_stopping_message[200], g_stuck_message[200];
// write(2) alone: a signal handler may call nothing that allocates or locks.
void say(const char* text) {
  const ssize_t written = write(STDERR_FILENO, text, std::strlen(text));
  (void)written;  // nowhere to report a failed write to stderr
}
void on_stuck(int) {
  say(g_stuck_message);
  _exit(143);
}
// Set once every process has agreed to stop: no peer is dead then, so a SIGTERM arriving later
// (the launcher signals the processes one by one) must not arm the deadline over the final save,
// which a loaded disk can stretch past it.
volatile std::sig_atomic_t g_stop_agreed = 0;
constexpr unsigned kStuckSeconds = 4;
void on_terminate(int) {
  say(g_stopping_message);
  if (g_trainer) g_trainer->cancel();
  if (g_stop_agreed) return;
  std::signal(SIGALRM, on_stuck);
  // A backstop for launchers that leave the survivors of a dead process running (Open MPI's mpirun
  // ends them itself); live peers agree within a step, well inside it.
  alarm(kStuckSeconds);
}

// Warnings (a continued run's changed seed or optimizer, an old run moved aside) go to stderr,
// beside the progress on stdout.
struct WarningPrinter : runtime::TrainerListener {
  void on_warning(const std::string& message) override { std::cerr << "shardlab-cli: warning: " << message << "\n"; }
};

}  // namespace

int run_train(const TrainArgs& a) {
  // The files this run will write, checked before anything trains or claims a checkpoint
  // directory: a refused --trace found only at the end would cost the whole run.
  if (!a.processes || a.processes->rank() == 0) {
    if (!a.log.empty()) util::output_path(a.log, "--log");
    if (!a.trace.empty()) util::output_path(a.trace, "--trace");
  }
  runtime::TrainOptions opt;
  opt.steps = a.steps;
  opt.epochs = a.epochs;
  opt.batch_size = a.batch_size;
  opt.accumulate = a.accumulate;
  opt.pipeline_schedule = a.pipeline_schedule;
  opt.seed = a.seed;
  opt.learning_rate = a.learning_rate;
  opt.dtype = a.precision.dtype;
  opt.param_dtype = a.precision.param_dtype;
  opt.matmul_precision = a.precision.matmul_precision;
  opt.threads = a.threads;
  opt.backend = a.backend;
  opt.devices = a.devices;
  opt.mesh = a.mesh;
  opt.rules = a.rules;
  opt.trace_detailed = !a.trace.empty();
  opt.checkpoint_dir = a.checkpoint_dir;
  opt.save_every = a.save_every;
  opt.keep = a.keep;
  opt.resume = a.resume;
  opt.continue_run = a.continue_run;
  opt.start_over = a.start_over;
  opt.resume_from = a.resume_from;
  opt.processes = a.processes;
  if (a.processes)
    opt.on_stop_agreed = [] {
      g_stop_agreed = 1;
      alarm(0);
    };
  project::Project project = project::load_project(a.project);
  // Without --checkpoint-dir, the folder the project names (training.checkpoint, relative to the
  // project file), with its save_every and keep unless those flags say otherwise.
  if (opt.checkpoint_dir.empty() && project.training.checkpoint) {
    opt.checkpoint_dir = project::checkpoint_dir(project).string();
    if (a.save_every == 0) opt.save_every = project.training.checkpoint->save_every;
    if (a.keep == runtime::TrainOptions{}.keep) opt.keep = int(project.training.checkpoint->keep);
  }
  if ((a.resume || a.continue_run || a.start_over || a.save_every > 0) && opt.checkpoint_dir.empty())
    throw Error("--resume, --continue, --start-over and --save-every need --checkpoint-dir (or the project's "
                "training.checkpoint.dir)");
  if (!a.max_shard_size.empty()) {
    if (opt.checkpoint_dir.empty()) throw Error("--max-shard-size needs --checkpoint-dir");
    try {
      opt.max_shard_bytes = checkpoint::parse_size(a.max_shard_size);
    } catch (const Error& e) {
      throw Error(std::string("--max-shard-size: ") + e.what());
    }
  }
  if (!a.trace_steps.empty()) {
    long long first = 0, last = 0;
    if (std::sscanf(a.trace_steps.c_str(), "%lld:%lld", &first, &last) != 2 || first < 1 || last < first)
      throw Error("--trace-steps '" + a.trace_steps + "': expected a:b with 1 <= a <= b");
    opt.trace_first = first;
    opt.trace_last = last;
    opt.trace_keep = int(last - first + 1);
  }
  runtime::Trainer trainer(std::move(project), opt);
  // Over several processes, process 0 speaks for the run: it prints, and writes the log.
  const bool speaks = !a.processes || a.processes->rank() == 0;
  ProgressPrinter printer(isatty(STDOUT_FILENO) != 0, a.quiet);
  WarningPrinter warnings;
  std::unique_ptr<JsonlLog> log;
  if (speaks) {
    trainer.add_listener(&printer);
    trainer.add_listener(&warnings);
    if (!a.log.empty()) {
      log = std::make_unique<JsonlLog>(a.log);
      trainer.add_listener(log.get());
    }
  }
  g_trainer = &trainer;
  std::signal(SIGINT, on_interrupt);
  if (a.processes) {
    const int rank = a.processes->rank(), size = a.processes->size();
    std::snprintf(g_stopping_message, sizeof g_stopping_message,
                  "shardlab-cli: process %d of %d: the launcher is stopping the run (another process ended, or the run "
                  "was interrupted); stopping after this step\n",
                  rank, size);
    std::snprintf(g_stuck_message, sizeof g_stuck_message,
                  "shardlab-cli: error (process %d of %d): stopped mid-step: a peer process no longer answers\n", rank,
                  size);
    std::signal(SIGTERM, on_terminate);
  }
  trainer.run();
  g_trainer = nullptr;
  if (!a.trace.empty()) {
    if (a.processes) {
      // Every process's spans in one file, a track per global device.
      const std::vector<std::string> traces = backends::all_gather_strings(*a.processes, trainer.trace().to_chrome_json());
      std::vector<double> origins(size_t(a.processes->size()));
      const double mine = trainer.trace().origin_unix_us();
      a.processes->all_gather(&mine, origins.data(), sizeof mine);
      if (speaks) util::write_output_file(a.trace, profiler::merge_process_traces(traces, origins), "--trace");
    } else {
      trainer.trace().write_chrome_json(a.trace);
    }
    if (!a.quiet && speaks) std::printf("trace written to %s\n", a.trace.c_str());
  }
  return 0;
}

}  // namespace shardlab::cli
