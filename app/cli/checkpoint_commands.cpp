// `shardlab-cli inspect` and `export`: what a checkpoint holds (one file or shards), and its
// parameters as one safetensors file, or its inference graph as ONNX.
#include <cstdio>
#include <filesystem>

#include "app/cli/commands.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/export.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/checkpoint/sharded.h"
#include "engine/export/hf_export.h"
#include "engine/runtime/train_step.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {

// A step directory as given, or the newest committed checkpoint under a root. A newer step that an
// interrupted save left moved aside is named, never passed over in silence.
std::filesystem::path resolve(const std::string& path) {
  if (std::filesystem::exists(std::filesystem::path(path) / checkpoint::kCommitFile)) return path;
  const auto last = checkpoint::latest(path);
  for (const checkpoint::Leftover& l : checkpoint::leftovers(path)) {
    if (!l.restorable || (last && l.step < checkpoint::step_of(*last))) continue;
    if (!last) throw Error(checkpoint::describe_restorable(l));
    std::fprintf(stderr, "shardlab-cli: warning: %s; showing %s instead\n", checkpoint::describe_restorable(l).c_str(),
                 last->c_str());
  }
  if (last) return *last;
  throw Error(path + ": neither a committed checkpoint nor a directory holding one");
}

}  // namespace

int run_inspect(const CheckpointArgs& a) {
  const std::filesystem::path dir = resolve(a.checkpoint);
  // Every tensor read and checked, as resume checks it (inspect refuses what resume refuses), one
  // at a time: a checkpoint saved over processes is listed array by array from its blocks.
  const checkpoint::CheckpointSummary c = checkpoint::summarize(dir);
  const checkpoint::ModelFiles& where = c.where;
  std::printf("%s: step %lld, project %s, mesh %s\n", dir.string().c_str(), (long long)c.step,
              c.meta.contains("project") ? c.meta["project"].value("name", std::string("?")).c_str() : "?",
              c.meta.value("mesh", std::string("?")).c_str());
  if (c.blocks)
    std::printf("saved over processes: %zu files, each holding the blocks one process's devices held, indexed by %s\n",
                where.files.size(), checkpoint::kIndexFile);
  else if (where.sharded)
    std::printf("%zu shards, indexed by %s\n", where.files.size(), checkpoint::kIndexFile);
  std::printf("\n%-44s %-6s %-22s %12s  %-22s%s\n", "tensor", "dtype", "shape", "bytes", "sharding when saved",
              c.blocks ? "  blocks" : where.sharded ? "  file" : "");
  double total = 0;
  for (const checkpoint::ArraySummary& t : c.arrays) {
    const std::string spec = c.meta.contains("shardings") ? c.meta["shardings"].value(t.name, std::string("-")) : "-";
    std::string place = t.file;
    if (c.blocks)
      place = std::to_string(t.blocks) + (t.blocks == 1 ? " block in " : " blocks in ") + std::to_string(t.files) +
              (t.files == 1 ? " file" : " files");
    std::printf("%-44s %-6s %-22s %12s  %-22s%s%s\n", t.name.c_str(), checkpoint::dtype_name(t.dtype), shape_str(t.shape).c_str(),
                runtime::format_bytes(t.bytes).c_str(), spec.c_str(), place.empty() ? "" : "  ", place.c_str());
    total += t.bytes;
  }
  std::printf("\n%zu tensors, %s\n", c.arrays.size(), runtime::format_bytes(total).c_str());
  return 0;
}

int run_export(const CheckpointArgs& a) {
  if (a.format == "hf") {
    if (!a.dtype.empty()) throw Error("--dtype: a Hugging Face folder is written in float32");
    std::printf("%s\n", exporter::export_hf_folder(resolve(a.checkpoint), a.out, a.hf_config).c_str());
    return 0;
  }
  if (!a.hf_config.empty()) throw Error("--hf-config: only for --format hf");
  if (a.format != "safetensors" && a.format != "onnx")
    throw Error("--format " + a.format + ": expected safetensors, onnx or hf");
  std::optional<DType> dtype;
  if (!a.dtype.empty()) dtype = parse_float_dtype(a.dtype);
  std::printf("%s\n", checkpoint::export_checkpoint(resolve(a.checkpoint), a.format, a.out, dtype).c_str());
  return 0;
}

}  // namespace shardlab::cli
