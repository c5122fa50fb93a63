#include "engine/checkpoint/export.h"

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded.h"
#include "engine/export/onnx_export.h"
#include "engine/project/project.h"
#include "engine/util/error.h"

namespace shardlab::checkpoint {

namespace {

const std::string kParamPrefix = "params/";

std::string export_parameters(const std::filesystem::path& dir, const std::filesystem::path& out) {
  const SafetensorsFile all = read_model(dir);  // one file or shards
  SafetensorsFile params;
  for (const auto& t : all.tensors)
    if (t.name.rfind(kParamPrefix, 0) == 0) {
      StoredTensor p = t;
      p.name = t.name.substr(kParamPrefix.size());
      params.tensors.push_back(std::move(p));
    }
  if (params.tensors.empty()) throw Error(dir.string() + ": the checkpoint holds no parameters (no params/... tensors)");
  params.metadata = all.metadata;
  write_safetensors(out, params);
  return "wrote " + std::to_string(params.tensors.size()) + " parameters to " + out.string();
}

// The checkpoint's own project (checkpoint.json keeps it) with its trained parameters.
std::string export_onnx_model(const std::filesystem::path& dir, const std::filesystem::path& out) {
  if (!interop::onnx_available()) interop::export_onnx({}, {}, out);  // throws, saying why
  const Loaded c = load(dir);
  const std::filesystem::path meta_file = dir / kMetaFile;
  if (!c.meta.contains("project") || !c.meta["project"].is_object())
    throw Error(meta_file.string() + ": project: missing (a checkpoint written before projects were recorded?)");
  const project::Project p = project::parse_project(c.meta["project"].dump(), meta_file.string() + ": project");
  std::map<std::string, Tensor> params;
  for (const auto& [name, t] : c.arrays)
    if (name.rfind(kParamPrefix, 0) == 0) params[name.substr(kParamPrefix.size())] = t;
  return interop::export_onnx(p, params, out,
                              "Exported by Shardlab from " + dir.string() + " (step " + std::to_string(c.step) + ")");
}

}  // namespace

std::string export_checkpoint(const std::filesystem::path& dir, const std::string& format, const std::filesystem::path& out) {
  if (format == "safetensors") return export_parameters(dir, out);
  if (format == "onnx") return export_onnx_model(dir, out);
  throw Error("export format '" + format + "': expected safetensors or onnx");
}

}  // namespace shardlab::checkpoint
