#include "engine/checkpoint/export.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "engine/checkpoint/blocks.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded.h"
#include "engine/export/onnx_export.h"
#include "engine/project/project.h"
#include "engine/util/error.h"
#include "engine/util/file_kind.h"
#include "engine/util/output_file.h"

namespace shardlab::checkpoint {

namespace {

namespace fs = std::filesystem;

const std::string kParamPrefix = "params/";


// True if `inner` is `outer` or lies below it (both canonical).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

// `out` may only be a regular file (or a new name) in a directory other than the checkpoint's:
// replacing a symlink, a device node or one of the files being read loses data. Checked before
// reading anything; the write itself then goes to a temporary file renamed over `out`.
void check_export_target(const fs::path& dir, const fs::path& out) {
  const std::string who = "export to " + out.string() + ": ";
  if (out.empty()) throw Error("export: no output file given (--out FILE)");
  struct stat st {};
  if (::lstat(out.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw Error(who + "is a symbolic link; export writes only to a regular file path (give the link's target, or a new name)");
    if (S_ISDIR(st.st_mode)) throw Error(who + "is a directory; give the path of a file to write");
    if (!S_ISREG(st.st_mode))
      throw Error(who + "is " + util::file_kind(st.st_mode) + "; export writes only to a regular file path, never over one of these");
    // A hard link to a checkpoint file is that file, whatever its name.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      struct stat cs {};
      if (::stat(e.path().c_str(), &cs) == 0 && cs.st_dev == st.st_dev && cs.st_ino == st.st_ino)
        throw Error(who + "is " + e.path().string() + " of the checkpoint being exported; write the export elsewhere");
    }
  } else if (errno != ENOENT) {
    throw Error(who + "cannot check the path (" + std::strerror(errno) + ")");
  }
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) throw Error(who + "its directory " + parent.string() + " does not exist");
  const fs::path cparent = fs::canonical(parent, ec), cdir = fs::canonical(dir, ec);
  if (!cparent.empty() && !cdir.empty() && is_within(cparent, cdir))
    throw Error(who + "lies inside the checkpoint directory " + dir.string() +
                " being exported; write the export elsewhere");
  // And nowhere inside any other checkpoint's directory.
  util::output_path(out, "export to");
}

StoredDType stored_dtype(DType d) { return d == DType::BF16 ? StoredDType::BF16 : d == DType::F16 ? StoredDType::F16 : StoredDType::F32; }

// A checkpoint saved over processes (blocks.h), its parameters assembled one array at a time from
// their blocks and written as they come (write_safetensors_streamed): the export holds one array,
// not the model. Each array's blocks are read and checked as resume checks them.
std::string export_block_parameters(const std::filesystem::path& dir, const std::filesystem::path& out, std::optional<DType> dtype) {
  const LoadedBlocks index = load_blocks(dir, [](const std::string&, const Shape&, const Shape&) { return false; });
  std::vector<TensorEntry> entries;
  std::vector<std::pair<std::string, Shape>> arrays;
  for (const auto& [name, shape] : index.arrays)
    if (name.rfind(kParamPrefix, 0) == 0) {
      const StoredDType stored = index.dtypes.at(name);
      entries.push_back({name.substr(kParamPrefix.size()), dtype ? stored_dtype(*dtype) : stored, shape});
      arrays.push_back({name, shape});
    }
  if (entries.empty()) throw Error(dir.string() + ": the checkpoint holds no parameters (no params/... tensors)");
  // As every tensor file of a Shardlab checkpoint marks itself (what export_parameters copies).
  const std::map<std::string, std::string> metadata{{"format", "shardlab"}, {"step", std::to_string(index.step)}};
  write_safetensors_streamed(out, entries, metadata, true, [&](size_t i) {
    const auto& [array, shape] = arrays[i];
    LoadedBlocks c = load_blocks(dir, [&](const std::string& a, const Shape&, const Shape&) { return a == array; });
    SafetensorsFile blocks;
    blocks.tensors = std::move(c.blocks);
    SafetensorsFile whole = assemble_blocks(std::move(blocks), {{array, shape}}, dir.string());
    StoredTensor t = std::move(whole.tensors.at(0));
    t.name = entries[i].name;
    if (t.dtype != entries[i].dtype) t = from_tensor(t.name, to_tensor(t), entries[i].dtype);
    return t;
  });
  return "wrote " + std::to_string(entries.size()) + " parameters to " + out.string() + " (assembled array by array from " +
         "the blocks the processes saved)";
}

std::string export_parameters(const std::filesystem::path& dir, const std::filesystem::path& out, std::optional<DType> dtype) {
  if (saved_over_processes(dir)) return export_block_parameters(dir, out, dtype);
  // Checked as resume checks it: the step cross-check, finite values, every checksum.
  const SafetensorsFile all = read_checked(dir).model;  // one file or shards
  SafetensorsFile params;
  for (const auto& t : all.tensors)
    if (t.name.rfind(kParamPrefix, 0) == 0) {
      const std::string name = t.name.substr(kParamPrefix.size());
      if (dtype && t.dtype != stored_dtype(*dtype)) {
        params.tensors.push_back(from_tensor(name, to_tensor(t), stored_dtype(*dtype)));
        continue;
      }
      StoredTensor p = t;
      p.name = name;
      params.tensors.push_back(std::move(p));
    }
  if (params.tensors.empty()) throw Error(dir.string() + ": the checkpoint holds no parameters (no params/... tensors)");
  params.metadata = all.metadata;
  add_checksums(params);  // under the exported names; the checkpoint's own keys name params/...
  write_safetensors(out, params);  // atomically: a temporary file beside `out`, renamed over it
  return "wrote " + std::to_string(params.tensors.size()) + " parameters to " + out.string();
}

// The checkpoint's own project (checkpoint.json keeps it) with its trained parameters.
std::string export_onnx_model(const std::filesystem::path& dir, const std::filesystem::path& out, DType dtype) {
  if (!exporter::onnx_available()) exporter::export_onnx({}, {}, out);  // throws, saying why
  std::map<std::string, Tensor> params;
  nlohmann::ordered_json meta;
  int64_t step = 0;
  if (saved_over_processes(dir)) {
    // Saved over processes: only the parameters' blocks are read (not the optimizer state's), and
    // each array assembled whole.
    LoadedBlocks c = load_blocks(dir, [](const std::string& array, const Shape&, const Shape&) { return array.rfind(kParamPrefix, 0) == 0; });
    std::vector<std::pair<std::string, Shape>> arrays;
    for (const auto& a : c.arrays)
      if (a.first.rfind(kParamPrefix, 0) == 0) arrays.push_back(a);
    SafetensorsFile blocks;
    blocks.tensors = std::move(c.blocks);
    for (StoredTensor& t : assemble_blocks(std::move(blocks), arrays, dir.string()).tensors)
      params[t.name.substr(kParamPrefix.size())] = to_tensor(t);
    meta = std::move(c.meta);
    step = c.step;
  } else {
    const Loaded c = load(dir);
    for (const auto& [name, t] : c.arrays)
      if (name.rfind(kParamPrefix, 0) == 0) params[name.substr(kParamPrefix.size())] = t;
    meta = c.meta;
    step = c.step;
  }
  const std::filesystem::path meta_file = dir / kMetaFile;
  if (!meta.contains("project") || !meta["project"].is_object())
    throw Error(meta_file.string() + ": project: missing (a checkpoint written before projects were recorded?)");
  const project::Project p = project::parse_project(meta["project"].dump(), meta_file.string() + ": project");
  // export_onnx writes atomically (util::write_file_atomically), as write_safetensors does.
  return exporter::export_onnx(p, params, out,
                              "Exported by Shardlab from " + dir.string() + " (step " + std::to_string(step) + ")", dtype);
}

}  // namespace

std::string export_checkpoint(const std::filesystem::path& dir, const std::string& format, const std::filesystem::path& out,
                              std::optional<DType> dtype) {
  if (dtype && *dtype != DType::F32 && !is_16bit(*dtype))
    throw Error(std::string("export dtype ") + dtype_name(*dtype) + ": expected one of " + float_dtype_names());
  if (format == "safetensors" || format == "onnx") check_export_target(dir, out);
  if (format == "safetensors") return export_parameters(dir, out, dtype);
  if (format == "onnx") return export_onnx_model(dir, out, dtype.value_or(DType::F32));
  throw Error("export format '" + format + "': expected safetensors or onnx");
}

}  // namespace shardlab::checkpoint
