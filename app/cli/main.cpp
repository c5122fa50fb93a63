// shardlab-cli: everything but looking, from a terminal or a cluster node without a display.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "app/cli/commands.h"
#include "engine/api/build_info.h"
#include "engine/backends/processes.h"
#include "engine/util/error.h"
#if SHARDLAB_HAVE_MPI
#include "engine/backends/mpi/mpi_processes.h"
#endif

namespace {

// The overrides every command that plans a run takes, worded alike.
void add_mesh_options(CLI::App* command, std::string& mesh, std::string& rules, std::string& preset) {
  command->add_option("--mesh", mesh, "mesh axes and sizes, e.g. data=2,model=4 (overrides the project's)");
  command->add_option("--rules", rules,
                      "logical axis rules in order, e.g. batch=data,hidden=model,embed=none,batch=data+model (override "
                      "the project's)");
  command->add_option("--preset", preset,
                      "a ready-made strategy instead of --rules: data_parallel, model_parallel, megatron or fsdp (sets the "
                      "mesh's axes too, keeping its device count or --mesh's)");
}

// --backend for the commands that plan for or run on devices.
void add_backend_option(CLI::App* cmd, std::string& backend) {
  cmd->add_option("--backend", backend, "where the devices are: cpu (virtual devices on threads) or cuda (virtual devices on GPU 0; under mpirun, a GPU per "
                  "device and NCCL between processes)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}
}  // namespace

// The microbatch options read the same on train, check and shard.
static void add_microbatch_options(CLI::App* cmd, int64_t& accumulate, std::string& schedule) {
  cmd->add_option("--accumulate,--microbatches", accumulate,
                  "run each batch as M equal microbatches and apply one update with their mean gradient; with pipeline "
                  "stages (a rule layer=<mesh axis>) they are what flows through the stages (overrides training.accumulate)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pipeline-schedule", schedule,
                  "how pipeline stages order the microbatches: gpipe (every forward, then every backward) or 1f1b (one "
                  "forward, one backward: fewer activations held) (overrides training.pipeline_schedule)")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
}

// --dtype, --param-dtype and --matmul-precision read the same on every command that plans a step.
static void add_precision_options(CLI::App* cmd, shardlab::cli::PrecisionArgs& p) {
  cmd->add_option("--dtype", p.dtype,
                  "compute dtype of activations and matmul inputs: float32, bfloat16 or float16 (overrides precision.dtype)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16", "f32", "bf16", "f16"}));
  cmd->add_option("--param-dtype", p.param_dtype, "dtype the parameters are stored in (overrides precision.param_dtype)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16", "f32", "bf16", "f16"}));
  cmd->add_option("--matmul-precision", p.matmul_precision,
                  "how float32 matmuls round their operands: highest, tf32 or bf16, as jax.default_matmul_precision "
                  "(overrides precision.matmul_precision)")
      ->check(CLI::IsMember({"highest", "tf32", "bf16", "tensorfloat32", "bfloat16", "float32"}));
}

// The processes of a run that mpirun or srun launched (null: this process alone).
std::shared_ptr<shardlab::backends::Processes> join_launched_run(int* argc, char*** argv) {
#if SHARDLAB_HAVE_MPI
  return shardlab::backends::mpi::join_mpi_run(argc, argv);
#else
  (void)argc, (void)argv;
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size) size = std::getenv("PMI_SIZE");
  if (size && std::atoi(size) > 1)
    throw shardlab::Error("this shardlab-cli was built without MPI, so it cannot run as one of several processes; "
                          "rebuild with libopenmpi-dev installed, or run it without mpirun");
  return nullptr;
#endif
}

int main(int argc, char** argv) {
  std::shared_ptr<shardlab::backends::Processes> processes;
  try {
    processes = join_launched_run(&argc, &argv);
  } catch (const std::exception& e) {
    std::cerr << "shardlab-cli: error: " << e.what() << "\n";
    return 1;
  }
  CLI::App app{"Shardlab: build, shard, train and inspect neural networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    std::string text = shardlab::api::build_info_text();
    text.pop_back();  // CLI11 ends the line itself
    return text;
  },
                       "print the version, build options and the CPU code path, and exit");

  struct {
    std::string check, shard, train, profile;
  } presets;  // --preset, resolved into --mesh and --rules once the command is known
  shardlab::cli::CheckArgs check;
  auto* c = app.add_subcommand(
      "check", "Validate a project as train would (graph, mesh, rules, memory, data) and print its layers, shapes, parameters and FLOPs");
  c->add_option("project", check.project, "the *.shardlab.json file")->required();
  c->add_flag("--json", check.json, "print the table as JSON");
  c->add_option("--batch-size", check.batch_size, "override the project's batch size")->check(CLI::PositiveNumber);
  add_microbatch_options(c, check.accumulate, check.pipeline_schedule);
  add_precision_options(c, check.precision);
  add_mesh_options(c, check.mesh, check.rules, presets.check);
  c->add_option("--devices", check.devices, "virtual CPU devices (must match the mesh)")->check(CLI::PositiveNumber);

  shardlab::cli::ShardArgs shard;
  auto* sh = app.add_subcommand("shard", "Show how every array is split over a device mesh, and what each device holds");
  sh->add_option("project", shard.project, "the *.shardlab.json file")->required();
  add_mesh_options(sh, shard.mesh, shard.rules, presets.shard);
  sh->add_flag("--json", shard.json, "print the report as JSON");
  sh->add_option("--show", shard.show, "draw one array's blocks and devices, like visualize_array_sharding");
  sh->add_option("--dims", shard.dims, "the two dimensions --show draws, e.g. 1,2")->capture_default_str();
  sh->add_option("--batch-size", shard.batch_size, "override the project's batch size");
  add_microbatch_options(sh, shard.accumulate, shard.pipeline_schedule);
  add_precision_options(sh, shard.precision);
  sh->add_option("--processes", shard.processes,
                 "for a run over this many processes (mpirun -np): show which process holds each device's blocks")
      ->check(CLI::PositiveNumber);
  add_backend_option(sh, shard.backend);

  shardlab::cli::TrainArgs train;
  auto* t = app.add_subcommand("train", "Train a project on the CPU");
  t->add_option("project", train.project, "the *.shardlab.json file")->required();
  auto* steps = t->add_option("--steps", train.steps, "number of training steps")->check(CLI::PositiveNumber);
  t->add_option("--epochs", train.epochs, "number of epochs")->check(CLI::PositiveNumber)->excludes(steps);
  t->add_option("--batch-size", train.batch_size, "examples per step")->check(CLI::PositiveNumber);
  add_microbatch_options(t, train.accumulate, train.pipeline_schedule);
  add_precision_options(t, train.precision);
  t->add_option("--seed", train.seed, "seed for initialisation, shuffling and dropout")->check(CLI::NonNegativeNumber);
  t->add_option("--lr", train.learning_rate, "learning rate: the constant schedule's value or the warmup-cosine schedule's peak")
      ->check(CLI::NonNegativeNumber);
  t->add_option("--threads", train.threads,
                 "CPU threads (default: every core; under mpirun, the cores over the processes on each machine)")
      ->check(CLI::PositiveNumber);
  add_backend_option(t, train.backend);
  t->add_option("--devices", train.devices, "virtual CPU devices (must match the mesh)")->check(CLI::PositiveNumber);
  add_mesh_options(t, train.mesh, train.rules, presets.train);
  t->add_option("--log", train.log, "write one JSON object per step and per evaluation to this file");
  t->add_flag("--quiet", train.quiet, "print only the final metrics");
  t->add_option("--trace", train.trace, "write every span as Chrome trace JSON (Perfetto opens it)");
  t->add_option("--trace-steps", train.trace_steps, "only trace steps a:b (1-based, inclusive)");
  t->add_option("--checkpoint-dir", train.checkpoint_dir, "save checkpoints here (step_NNNNNN/ directories)");
  t->add_option("--save-every", train.save_every, "save every N steps (and at the end)")->check(CLI::PositiveNumber);
  t->add_option("--keep", train.keep, "keep the newest K checkpoints")->check(CLI::PositiveNumber);
  auto* resume = t->add_flag("--resume", train.resume, "continue from the newest checkpoint in --checkpoint-dir");
  auto* cont = t->add_flag("--continue", train.continue_run,
                           "continue the run in --checkpoint-dir if it holds one (as --resume), else start it")
                   ->excludes(resume);
  t->add_flag("--start-over", train.start_over,
              "move the checkpoints of the run in --checkpoint-dir into old-run-<id>/ there, then start a new run")
      ->excludes(resume)
      ->excludes(cont);
  t->add_option("--resume-from", train.resume_from, "continue from this step_NNNNNN directory")->excludes(resume);
  t->add_option("--max-shard-size", train.max_shard_size,
                "split each checkpoint's tensors over safetensors shards of at most this size, e.g. 500MB, 2GB, 1GiB");

  shardlab::cli::CheckpointArgs inspect;
  auto* in = app.add_subcommand("inspect", "List a checkpoint's tensors, shapes, dtypes, shardings, step and project");
  in->add_option("checkpoint", inspect.checkpoint, "a step_NNNNNN directory, or a checkpoint root")->required();
  shardlab::cli::CheckpointArgs exp;
  auto* ex = app.add_subcommand("export", "Export a checkpoint's parameters");
  ex->add_option("checkpoint", exp.checkpoint, "a step_NNNNNN directory, or a checkpoint root")->required();
  ex->add_option("--format", exp.format,
                 "safetensors (the parameters), onnx (the inference graph with them) or hf (a project imported from "
                 "Hugging Face, as a model folder: config.json and model.safetensors under its own names)")
      ->capture_default_str();
  ex->add_option("--out", exp.out, "the file to write (--format hf: a new folder)")->required();
  ex->add_option("--hf-config", exp.hf_config,
                 "--format hf: the model's config.json (default: the one import kept beside the checkpoints, hf_config.json)");
  ex->add_option("--dtype", exp.dtype,
                 "write the parameters as float32, bfloat16 or float16 (an ONNX graph then computes in it, its input "
                 "and output float32); default: safetensors as the checkpoint stores them, ONNX float32")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16", "f32", "bf16", "f16"}));

  shardlab::cli::ImportArgs import;
  auto* im = app.add_subcommand("import", "Make a project of a Hugging Face model folder (Llama family: config.json and "
                                          "safetensors weights), its weights the project's step-0 checkpoint");
  im->add_option("path", import.path, "the model folder (config.json, model.safetensors or model.safetensors.index.json)")->required();
  im->add_option("--out", import.out, "the project file to write, e.g. llama.shardlab.json (its weights go to llama.init/)")->required();
  im->add_option("--seq", import.seq, "tokens per example (default: the model's context, at most 256)")->check(CLI::PositiveNumber);

  shardlab::cli::AdviseArgs advise;
  auto* ad = app.add_subcommand("advise", "Rank the meshes and rules a project could use on N devices (named strategies and a "
                                          "search over the model's own axes): memory per device from each partitioned step, "
                                          "predicted step time, what bounds it");
  ad->add_option("project", advise.project, "the *.shardlab.json file")->required();
  ad->add_option("--devices", advise.devices, "how many devices to lay the model over")->required()->check(CLI::Range(1, 4096));
  ad->add_option("--threads", advise.threads, "CPU cores the devices share (default: every core)")->check(CLI::PositiveNumber);
  ad->add_option("--batch-size", advise.batch_size, "override the project's batch size")->check(CLI::PositiveNumber);
  ad->add_flag("--json", advise.json, "print every candidate and figure as JSON, best first");
  ad->add_option("--hardware", advise.hardware,
                 "a hardware profile: a file, or a name (h100-sxm-node, h100-infiniband, or one in ~/.config/shardlab/hardware); "
                 "default: this machine, calibrated once and saved");
  ad->add_option("--gpu", advise.gpu, "the GPU profile 'is a GPU worth it?' compares this machine with")->capture_default_str();
  ad->add_flag("!--no-search", advise.search, "rank the named strategies only, without searching the model's own axes");
  ad->add_option("--search-limit", advise.search_limit, "partition at most this many searched layouts")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  shardlab::cli::CalibrateArgs calibrate;
  auto* ca = app.add_subcommand("calibrate", "Measure this machine for the layout advisor (GEMM rates by shape, memory bandwidth, "
                                             "fixed costs, collectives for 2-8 virtual devices) and save the profile advise reuses");
  ca->add_option("--threads", calibrate.threads, "CPU cores the devices share (default: every core)")->check(CLI::PositiveNumber);
  ca->add_option("--devices", calibrate.max_devices, "measure 1, 2, 4, ... up to this many devices")->check(CLI::Range(1, 64))->capture_default_str();
  ca->add_option("--out", calibrate.out, "write the profile here instead of the saved calibration (~/.config/shardlab/hardware/this-machine.json)");
  ca->add_flag("--json", calibrate.json, "print the profile as JSON");

  shardlab::cli::ProfileArgs profile;
  auto* pr = app.add_subcommand("profile", "Train a few steps traced and print where each device's step time went");
  pr->add_option("project", profile.project, "the *.shardlab.json file")->required();
  pr->add_option("--steps", profile.steps, "steps to run (the first is warm-up)")->check(CLI::Range(2, 1000000));
  pr->add_option("--threads", profile.threads, "CPU threads (default: every core)")->check(CLI::PositiveNumber);
  add_mesh_options(pr, profile.mesh, profile.rules, presets.profile);
  add_precision_options(pr, profile.precision);
  pr->add_option("--trace", profile.trace, "also write the Chrome trace JSON");
  add_backend_option(pr, profile.backend);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every process parses the same line: one of them says what is wrong.
    if (processes && processes->rank() != 0) return e.get_exit_code();
    return app.exit(e);
  }
  train.processes = processes;
  try {
    // Under mpirun only training spans the processes; any other command runs once, on process 0.
    if (processes && !*t && processes->rank() != 0) return 0;
    using shardlab::cli::resolve_preset;
    if (*c) resolve_preset(check.project, presets.check, check.mesh, check.rules);
    if (*sh) resolve_preset(shard.project, presets.shard, shard.mesh, shard.rules);
    if (*t) resolve_preset(train.project, presets.train, train.mesh, train.rules);
    if (*pr) resolve_preset(profile.project, presets.profile, profile.mesh, profile.rules);
    if (*c) return shardlab::cli::run_check(check);
    if (*t) return shardlab::cli::run_train(train);
    if (*sh) return shardlab::cli::run_shard(shard);
    if (*pr) return shardlab::cli::run_profile(profile);
    if (*ad) return shardlab::cli::run_advise(advise);
    if (*ca) return shardlab::cli::run_calibrate(calibrate);
    if (*in) return shardlab::cli::run_inspect(inspect);
    if (*ex) return shardlab::cli::run_export(exp);
    if (*im) return shardlab::cli::run_import(import);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ';';
    if (processes) {
      // One process's error ends every process of the run at once: none is left waiting for it.
      // One write: std::cerr writes each piece apart, and mpirun's own notice of the abort could
      // land between them in the forwarded output.
      const std::string line = "shardlab-cli: error (process " + std::to_string(processes->rank()) + " of " +
                               std::to_string(processes->size()) + "): " + msg + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
      processes->abort(1);
    }
    std::cerr << "shardlab-cli: error: " << msg << "\n";
    return 1;
  }
  return 0;
}
