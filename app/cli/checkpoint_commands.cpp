// `shardlab-cli inspect` and `export`: what a checkpoint holds, and its parameters as one
// safetensors file that Python's safetensors, PyTorch and Flax load.
#include <cstdio>
#include <filesystem>

#include "app/cli/commands.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/runtime/train_step.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {

// A step directory as given, or the newest committed checkpoint under a root.
std::filesystem::path resolve(const std::string& path) {
  if (std::filesystem::exists(std::filesystem::path(path) / checkpoint::kCommitFile)) return path;
  if (auto last = checkpoint::latest(path)) return *last;
  throw Error(path + ": neither a committed checkpoint nor a directory holding one");
}

}  // namespace

int run_inspect(const CheckpointArgs& a) {
  const std::filesystem::path dir = resolve(a.checkpoint);
  const checkpoint::Loaded c = checkpoint::load(dir);
  const checkpoint::SafetensorsFile f = checkpoint::read_safetensors(dir / checkpoint::kTensorsFile);
  std::printf("%s: step %lld, project %s, mesh %s\n\n", dir.string().c_str(), (long long)c.step,
              c.meta.contains("project") ? c.meta["project"].value("name", std::string("?")).c_str() : "?",
              c.meta.value("mesh", std::string("?")).c_str());
  std::printf("%-44s %-6s %-22s %12s  %s\n", "tensor", "dtype", "shape", "bytes", "sharding when saved");
  double total = 0;
  for (const auto& t : f.tensors) {
    const std::string spec = c.meta.contains("shardings") ? c.meta["shardings"].value(t.name, std::string("-")) : "-";
    std::printf("%-44s %-6s %-22s %12s  %s\n", t.name.c_str(), checkpoint::dtype_name(t.dtype), shape_str(t.shape).c_str(),
                runtime::format_bytes(double(t.bytes.size())).c_str(), spec.c_str());
    total += double(t.bytes.size());
  }
  std::printf("\n%zu tensors, %s\n", f.tensors.size(), runtime::format_bytes(total).c_str());
  return 0;
}

int run_export(const CheckpointArgs& a) {
  if (a.format == "onnx")
    throw Error("--format onnx: ONNX export is not implemented yet (only safetensors)");
  if (a.format != "safetensors") throw Error("--format " + a.format + ": expected safetensors");
  const std::filesystem::path dir = resolve(a.checkpoint);
  const checkpoint::SafetensorsFile all = checkpoint::read_safetensors(dir / checkpoint::kTensorsFile);
  checkpoint::SafetensorsFile params;
  const std::string prefix = "params/";
  for (const auto& t : all.tensors)
    if (t.name.rfind(prefix, 0) == 0) {
      checkpoint::StoredTensor p = t;
      p.name = t.name.substr(prefix.size());  // the parameter path, e.g. "dense1/kernel"
      params.tensors.push_back(std::move(p));
    }
  params.metadata = all.metadata;
  checkpoint::write_safetensors(a.out, params);
  std::printf("wrote %zu parameters to %s\n", params.tensors.size(), a.out.c_str());
  return 0;
}

}  // namespace shardlab::cli
