// The subcommands of shardlab-cli. Each returns the process exit code.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace shardlab::backends {
class Processes;
}

namespace shardlab::cli {

// --dtype, --param-dtype, --matmul-precision: the project's precision policy overridden for one run
// or report ("" keeps the project's).
struct PrecisionArgs {
  std::string dtype, param_dtype, matmul_precision;
};

struct CheckArgs {
  std::string project;
  bool json = false;
  int64_t batch_size = -1;
  int64_t accumulate = -1;  // microbatches per step (training.accumulate)
  std::string pipeline_schedule;  // "gpipe" or "1f1b" (training.pipeline_schedule)
  std::string mesh, rules;  // override the project's, as train's do
  int devices = 0;          // the device count the mesh must have, as train's --devices
  PrecisionArgs precision;
};
int run_check(const CheckArgs& a);

struct TrainArgs {
  std::string project;
  int64_t steps = -1, epochs = -1, batch_size = -1, seed = -1;
  int64_t accumulate = -1;  // microbatches per step (training.accumulate)
  std::string pipeline_schedule;  // "gpipe" or "1f1b" (training.pipeline_schedule)
  std::optional<double> learning_rate;  // --lr
  int threads = 0;
  std::string backend = "cpu";  // "cpu" or "cuda"
  int devices = 0;    // virtual CPU devices (0: as many as the mesh has)
  std::string mesh;   // overrides the project's
  std::string rules;  // overrides the project's
  std::string log;  // JSONL file
  std::string trace;        // Chrome trace JSON file
  std::string trace_steps;  // "a:b", 1-based inclusive
  std::string checkpoint_dir;
  int64_t save_every = 0;
  int keep = 3;
  bool resume = false;
  bool continue_run = false;  // --continue: continue the run in --checkpoint-dir (start one if it is empty)
  bool start_over = false;    // --start-over: move the old run's steps into old-run-<id>/ first
  std::string resume_from;    // --resume-from: a step directory to continue from
  std::string max_shard_size;  // "2GB": shard each checkpoint's safetensors; empty: one file
  bool quiet = false;
  PrecisionArgs precision;
  // Set when mpirun or srun launched this process as one of several: the run spans them all and
  // process 0 prints, logs and writes checkpoints.
  std::shared_ptr<backends::Processes> processes;
};
int run_train(const TrainArgs& a);

struct ProfileArgs {
  std::string project;
  int64_t steps = 10;
  int threads = 0;
  std::string backend = "cpu";
  std::string mesh, rules;
  std::string trace;  // also write the Chrome trace
  PrecisionArgs precision;
};
int run_profile(const ProfileArgs& a);

struct CheckpointArgs {
  std::string checkpoint;  // a step directory, or a root (its newest checkpoint)
  std::string format = "safetensors";
  std::string out;
  std::string dtype;  // export: the parameters' (and an ONNX graph's) dtype; "": as stored / float32
  std::string hf_config;  // export --format hf: the model's config.json ("": the one import kept beside the checkpoints)
};
int run_inspect(const CheckpointArgs& a);

struct ImportArgs {
  std::string path;  // a Hugging Face model folder
  std::string out;   // the project file to write
  int64_t seq = 0;   // tokens per example (0: the model's context, at most 256)
};
int run_import(const ImportArgs& a);
int run_export(const CheckpointArgs& a);

struct ShardArgs {
  std::string project;
  std::string mesh;   // "data=2,model=4": overrides the project's
  std::string rules;  // "batch=data,hidden=model": overrides the project's
  bool json = false;
  std::string show;   // draw this array's sharding
  std::string dims = "0,1";
  int64_t batch_size = -1;
  int64_t accumulate = -1;  // microbatches per step (training.accumulate)
  std::string pipeline_schedule;  // "gpipe" or "1f1b" (training.pipeline_schedule)
  std::string backend = "cpu";  // the report names its devices and their memory where not the CPU
  int processes = 1;  // a run over this many processes: which one holds each device's blocks
  PrecisionArgs precision;
};
int run_shard(const ShardArgs& a);

struct AdviseArgs {
  std::string project;
  int64_t devices = 8;
  int threads = 0;         // cores the virtual devices share (0: every core)
  int64_t batch_size = -1;
  bool json = false;
  std::string hardware;             // a profile's name or file ("": this machine, calibrated once and saved)
  std::string gpu = "h100-sxm-node";  // the GPU profile "is a GPU worth it?" compares with
  bool search = true;                 // beside the named strategies, search the model's own axes
  int64_t search_limit = 300;         // searched layouts partitioned at most
};
int run_advise(const AdviseArgs& a);

struct CalibrateArgs {
  int threads = 0;      // cores the virtual devices share (0: every core)
  int max_devices = 8;  // measured for 1, 2, 4, ... up to this many devices
  std::string out;      // "": the saved calibration advise reuses
  bool json = false;
};
int run_calibrate(const CalibrateArgs& a);

// --preset NAME (data_parallel, model_parallel, megatron, fsdp): fills `mesh` and `rules` with what
// the preset gives the project at `project_path` (a --mesh given beside it sets the device count).
// Nothing when `preset` is empty; an Error with --rules too, or for an unknown preset.
void resolve_preset(const std::string& project_path, const std::string& preset, std::string& mesh, std::string& rules);

}  // namespace shardlab::cli
