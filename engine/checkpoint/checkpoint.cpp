#include "engine/checkpoint/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

#include "engine/checkpoint/blocks.h"
#include "engine/checkpoint/checkpoint_meta.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/checkpoint/regular_file.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded.h"
#include "engine/util/atomic_file.h"
#include "engine/util/error.h"

namespace shardlab::checkpoint {

namespace fs = std::filesystem;

namespace {

// The files of a step whose integrity the COMMITTED marker records: they carry no checksum of
// their own (the tensor files do, tensor by tensor).
const char* const kRecorded[] = {kMetaFile, kIndexFile};
constexpr uint64_t kMaxRecordedBytes = uint64_t(64) << 20;
// A line per recorded file; a checkpoint of thousands of shards still fits.
constexpr uint64_t kMaxCommitBytes = uint64_t(1) << 20;
constexpr const char* kHeaderTag = "crc32c-header";

// The tensor files of a step directory, by name: their headers are recorded as a whole.
std::vector<std::string> tensor_files(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string hex8(uint32_t v) {
  char s[9];
  std::snprintf(s, sizeof s, "%08x", v);
  return s;
}

// "committed", then "crc32c <file> <8 hex digits>" for each recorded file the step has, then
// "crc32c-header <file> <8 hex digits>" for each tensor file's header (its tensors carry their own).
std::string commit_record(const fs::path& dir) {
  std::string text = "committed\n";
  for (const char* name : kRecorded) {
    std::error_code ec;
    if (!fs::exists(dir / name, ec)) continue;
    const std::string bytes = read_small_file(dir / name, kMaxRecordedBytes);
    text += std::string("crc32c ") + name + " " + hex8(crc32c(bytes.data(), bytes.size())) + "\n";
  }
  for (const std::string& name : tensor_files(dir))
    text += std::string(kHeaderTag) + " " + name + " " + hex8(header_crc32c(dir / name)) + "\n";
  return text;
}

// Each file COMMITTED records, and each tensor file's header, has the checksum recorded for it; a
// marker of "committed" alone (a save before the record existed) records nothing to check.
void verify_commit_record(const fs::path& dir) {
  const fs::path marker = dir / kCommitFile;
  const std::string text = read_small_file(marker, kMaxCommitBytes);
  size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (first) {
      if (line != "committed") throw Error(marker.string() + ": does not begin with \"committed\" (the marker was altered)");
      first = false;
      continue;
    }
    char tag[16] = {}, name[256] = {}, hex[16] = {};
    if (std::sscanf(line.c_str(), "%15s %255s %15s", tag, name, hex) == 3 && std::strcmp(tag, kHeaderTag) == 0 &&
        std::strlen(hex) == 8 && fs::path(name).extension() == ".safetensors" && fs::path(name).filename() == name) {
      const std::string actual = hex8(header_crc32c(dir / name));
      if (actual != hex)
        throw Error((dir / name).string() + ": header CRC32C " + actual + " where " + kCommitFile + " records " + hex +
                    " (the header was edited after the checkpoint was committed)");
      continue;
    }
    if (std::strcmp(tag, "crc32c") != 0 || std::strlen(hex) != 8 ||
        std::find_if(std::begin(kRecorded), std::end(kRecorded), [&](const char* r) { return std::strcmp(r, name) == 0; }) ==
            std::end(kRecorded))
      throw Error(marker.string() + ": unreadable line \"" + line.substr(0, 80) + "\" (the marker was altered)");
    const std::string bytes = read_small_file(dir / name, kMaxRecordedBytes);
    const std::string actual = hex8(crc32c(bytes.data(), bytes.size()));
    if (actual != hex)
      throw Error((dir / name).string() + ": CRC32C " + actual + " where " + kCommitFile + " records " + hex +
                  " (the file was changed after the checkpoint was committed)");
  }
  if (first) throw Error(marker.string() + ": empty (the marker was altered)");
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Removes a checkpoint directory so that no reader ever sees it half-deleted (COMMITTED still there,
// a shard already gone): it is first renamed to a temporary name that never loads and is never
// restored, which recover() clears if this process dies before it is gone.
void remove_atomically(const fs::path& dir) {
  std::error_code ec;
  const fs::path doomed = temp_path(dir, TempKind::Deleting);
  fs::remove_all(doomed, ec);
  fs::rename(dir, doomed, ec);
  if (ec) throw Error(dir.string() + ": could not remove the old checkpoint: " + ec.message());
  fs::remove_all(doomed, ec);
}

// Puts the fully written `built` in place of the committed `final_dir`, which stays committed until
// then: the two are swapped in one rename (the old one then lies at `built`'s name and is removed).
// Where the file system cannot swap, the old one is moved aside as .tmp-old-<pid>, which recover()
// puts back if this process dies before the new one is renamed in.
void replace_committed(const fs::path& built, const fs::path& final_dir, const fs::path& root) {
  std::error_code ec;
  if (::renameat2(AT_FDCWD, built.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
    fsync_dir(root);
    fs::remove_all(built, ec);  // a .tmp- name, which never loads and recover() never restores
    return;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    throw Error(final_dir.string() + ": could not commit the checkpoint: " + std::strerror(errno));
  const fs::path displaced = temp_path(final_dir, TempKind::Displaced);
  fs::remove_all(displaced, ec);
  fs::rename(final_dir, displaced, ec);
  if (ec) throw Error(final_dir.string() + ": could not move the old checkpoint aside: " + ec.message());
  fs::rename(built, final_dir, ec);
  if (ec) {
    std::error_code ignored;
    fs::rename(displaced, final_dir, ignored);  // else the next run's recover() puts it back
    throw Error(final_dir.string() + ": could not commit the checkpoint: " + ec.message());
  }
  fsync_dir(root);
  remove_atomically(displaced);
}

}  // namespace

fs::path step_dir(const fs::path& root, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%06lld", (long long)step);
  return root / name;
}

fs::path begin_save(const fs::path& root, int64_t step, nlohmann::ordered_json& meta) {
  const fs::path final_dir = step_dir(root, step);
  // Checked before anything is written: a wrapped or negative step, or a field of the wrong type,
  // would otherwise be saved and only refused (or misread) at the resume.
  if (step < 0 || step > kMaxStep)
    throw Error(root.string() + ": cannot save a checkpoint of step " + std::to_string(step) + " (steps are 0 .. " +
                std::to_string(kMaxStep) + ")");
  if (!meta.contains("format")) meta["format"] = kMetaFormat;
  // Whole arrays stay version 1, which older builds read; only blocks need version 2.
  if (!meta.contains("version")) meta["version"] = meta.contains("blocks") ? kMetaVersionBlocks : kMetaVersionWhole;
  meta["step"] = step;
  validate_meta(meta, (final_dir / kMetaFile).string(), step);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(root.string() + ": cannot create the checkpoint directory: " + ec.message());
  const fs::path tmp = temp_path(final_dir, TempKind::Building);
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) throw Error(tmp.string() + ": cannot create: " + ec.message());
  return tmp;
}

// A NaN or an infinity in any array: the checkpoint resume would refuse is not written either.
void check_finite(const std::vector<std::pair<std::string, Tensor>>& arrays, int64_t step) {
  for (const auto& [name, t] : arrays)
    for (size_t i = 0; i < t.data.size(); ++i)
      if (!std::isfinite(t.data[i]))
        throw Error("checkpoint of step " + std::to_string(step) + ": '" + name + "' element " + std::to_string(i) + " is " +
                    (std::isnan(t.data[i]) ? "NaN" : "infinite") +
                    ": the run has diverged, and resume would refuse this checkpoint, so it is not saved");
}

SafetensorsFile tensor_file(const std::vector<std::pair<std::string, Tensor>>& arrays, int64_t step, const StoredDTypes& dtypes) {
  check_finite(arrays, step);
  SafetensorsFile f;
  for (const auto& [name, t] : arrays) {
    const auto d = dtypes.find(name);
    f.tensors.push_back(from_tensor(name, t, d == dtypes.end() ? StoredDType::F32 : d->second));
  }
  f.metadata["format"] = "shardlab";
  f.metadata["step"] = std::to_string(step);
  return f;
}

fs::path commit_save(const fs::path& root, int64_t step, const fs::path& tmp, const nlohmann::ordered_json& meta) {
  const fs::path final_dir = step_dir(root, step);
  util::write_file_atomically(tmp / kMetaFile, meta.dump(2) + "\n");
  // The marker goes last: a directory without it is an interrupted save and never loads. It
  // records the checksums of the files that have none of their own.
  util::write_file_atomically(tmp / kCommitFile, commit_record(tmp));
  fsync_dir(tmp);
  if (fs::exists(final_dir)) {
    replace_committed(tmp, final_dir, root);
    return final_dir;
  }
  std::error_code ec;
  fs::rename(tmp, final_dir, ec);
  if (ec) throw Error(final_dir.string() + ": could not commit the checkpoint: " + ec.message());
  fsync_dir(root);
  return final_dir;
}

void abandon_save(const fs::path& tmp) {
  std::error_code ec;
  fs::remove_all(tmp, ec);
}

fs::path save(const fs::path& root, int64_t step, const std::vector<std::pair<std::string, Tensor>>& arrays,
              nlohmann::ordered_json meta, uint64_t max_shard_bytes, const StoredDTypes& dtypes) {
  check_finite(arrays, step);  // before anything is written
  const fs::path tmp = begin_save(root, step, meta);
  write_model(tmp, tensor_file(arrays, step, dtypes), max_shard_bytes);
  return commit_save(root, step, tmp, meta);
}

fs::path save(const fs::path& root, int64_t step, SafetensorsFile tensors, nlohmann::ordered_json meta, uint64_t max_shard_bytes) {
  const fs::path tmp = begin_save(root, step, meta);
  write_model(tmp, std::move(tensors), max_shard_bytes);
  return commit_save(root, step, tmp, meta);
}

std::optional<fs::path> latest(const fs::path& root) {
  auto all = committed(root);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

std::vector<std::pair<std::string, Shape>> block_arrays(const nlohmann::ordered_json& meta) {
  std::vector<std::pair<std::string, Shape>> out;
  if (!meta.contains("blocks")) return out;
  for (const auto& [name, shape] : meta["blocks"].items()) out.push_back({name, shape.get<Shape>()});
  return out;
}

namespace {

// Everything read_checked() checks, reading the data of the tensors `want` accepts only.
CheckedModel read_verified(const fs::path& dir, const TensorFilter& want) {
  if (!fs::is_directory(dir)) {
    for (const Leftover& l : leftovers(dir.parent_path()))
      if (l.restorable && l.step == step_of(dir)) throw Error(dir.string() + ": no such checkpoint directory; " + describe_restorable(l));
    throw Error(dir.string() + ": no such checkpoint directory");
  }
  if (!fs::exists(dir / kCommitFile))
    throw Error(dir.string() + ": not a committed checkpoint (no " + kCommitFile + " marker: the save was interrupted)");
  CheckedModel out;
  MetaFields fields;
  out.meta = read_meta(dir / kMetaFile, step_from_dir_name(dir), fields);
  out.step = fields.step;
  out.data_position = fields.data_position;
  out.model = read_model(dir, &out.where, want);  // checksums verified file by file
  const SafetensorsFile& f = out.model;
  // Shardlab's writer marks every tensor file it writes: one without the mark (another tool's
  // file put in its place) holds tensors nothing vouches for.
  if (auto it = f.metadata.find("format"); it == f.metadata.end() || it->second != "shardlab")
    throw Error((dir / out.where.files.front()).string() + ": __metadata__ has no \"format\": \"shardlab\", which every " +
                "tensor file of a Shardlab checkpoint carries (the file was replaced by another tool's?)");
  if (auto it = f.metadata.find("step"); it != f.metadata.end() && it->second != std::to_string(out.step))
    throw Error((dir / out.where.files.front()).string() + ": __metadata__ step '" + it->second +
                "' does not match " + kMetaFile + "'s step " + std::to_string(out.step) +
                " (files of two checkpoints mixed?)");
  if (out.meta.contains("blocks")) {
    std::map<std::string, Shape> shapes;
    for (auto& [name, shape] : block_arrays(out.meta)) shapes[name] = shape;
    std::vector<std::pair<std::string, Shape>> blocks;
    for (const StoredTensor& t : f.tensors) blocks.push_back({t.name, t.shape});
    check_tiling(shapes, blocks, dir.string());
  }
  for (const StoredTensor& t : f.tensors) {
    if (t.skipped) continue;
    // A diverged run's checkpoint must not be resumed (nor exported) as if it were fine.
    const Tensor x = to_tensor(t);
    for (size_t i = 0; i < x.data.size(); ++i)
      if (!std::isfinite(x.data[i]))
        throw Error((dir / out.where.file_of[t.name]).string() + ": tensor '" + t.name + "': element " + std::to_string(i) +
                    " is " + (std::isnan(x.data[i]) ? "NaN" : "infinite") +
                    " (the run had diverged when this was saved; resume from an earlier checkpoint)");
  }
  // Last: a file that reads well on its own but was changed since the commit (a data_position,
  // an index of another step).
  verify_commit_record(dir);
  return out;
}

}  // namespace

CheckedModel read_checked(const fs::path& dir) {
  CheckedModel out = read_verified(dir, TensorFilter{});
  if (const auto arrays = block_arrays(out.meta); !arrays.empty()) {
    // Whole arrays from the blocks; each array's file is its first block's.
    std::map<std::string, std::string> file_of;
    std::map<std::string, std::set<std::string>> files;
    for (const StoredTensor& t : out.model.tensors) {
      BlockRef r;
      if (!parse_block_name(t.name, r)) continue;
      if (!file_of.count(r.array)) file_of[r.array] = out.where.file_of[t.name];
      files[r.array].insert(out.where.file_of[t.name]);
      ++out.blocks[r.array].blocks;
    }
    for (auto& [array, b] : out.blocks) b.files = int(files[array].size());
    out.model = assemble_blocks(std::move(out.model), arrays, dir.string());
    out.where.file_of = std::move(file_of);
  }
  return out;
}

LoadedBlocks load_blocks(const fs::path& dir, const BlockFilter& want) {
  CheckedModel c = read_verified(dir, [&](const std::string& name, const Shape& shape) {
    BlockRef r;
    return parse_block_name(name, r) && want(r.array, r.start, shape);
  });
  LoadedBlocks out;
  out.arrays = block_arrays(c.meta);
  if (out.arrays.empty()) throw Error(dir.string() + ": holds whole arrays, not the blocks of a checkpoint saved over processes");
  out.dir = dir;
  out.step = c.step;
  out.data_position = c.data_position;
  out.meta = std::move(c.meta);
  out.where = std::move(c.where);
  for (StoredTensor& t : c.model.tensors) {
    BlockRef r;
    parse_block_name(t.name, r);  // checked by the tiling
    out.dtypes[r.array] = t.dtype;
    if (!t.skipped) out.blocks.push_back(std::move(t));
  }
  return out;
}

bool saved_over_processes(const fs::path& dir) {
  try {
    MetaFields fields;
    return read_meta(dir / kMetaFile, step_from_dir_name(dir), fields).contains("blocks");
  } catch (const std::exception&) {
    return false;
  }
}

CheckpointSummary summarize(const fs::path& dir) {
  CheckpointSummary out;
  if (!saved_over_processes(dir)) {
    CheckedModel c = read_checked(dir);
    out.step = c.step;
    out.meta = std::move(c.meta);
    out.where = std::move(c.where);
    for (const StoredTensor& t : c.model.tensors)
      out.arrays.push_back({t.name, t.dtype, t.shape, double(t.bytes.size()), out.where.sharded ? out.where.file_of.at(t.name) : ""});
    return out;
  }
  // The index (every header, the tiling, the commit record), then each array's blocks read and
  // checked in turn, and let go.
  LoadedBlocks index = load_blocks(dir, [](const std::string&, const Shape&, const Shape&) { return false; });
  out.blocks = true;
  out.step = index.step;
  out.meta = std::move(index.meta);
  out.where = std::move(index.where);
  for (const auto& [array, shape] : index.arrays) {
    const LoadedBlocks c = load_blocks(dir, [&](const std::string& a, const Shape&, const Shape&) { return a == array; });
    ArraySummary s;
    s.name = array;
    s.dtype = index.dtypes.at(array);
    s.shape = shape;
    std::set<std::string> files;
    for (const StoredTensor& t : c.blocks) {
      s.bytes += double(t.bytes.size());
      ++s.blocks;
      files.insert(c.where.file_of.at(t.name));
    }
    s.files = int(files.size());
    out.arrays.push_back(std::move(s));
  }
  return out;
}

Loaded load(const fs::path& dir) {
  CheckedModel c = read_checked(dir);
  Loaded out;
  out.dir = dir;
  out.step = c.step;
  out.data_position = c.data_position;
  out.meta = std::move(c.meta);
  for (StoredTensor& t : c.model.tensors) {
    out.arrays[t.name] = to_tensor(t);
    out.dtypes[t.name] = t.dtype;
    std::vector<uint8_t>().swap(t.bytes);  // converted: the model is held once, not twice
  }
  return out;
}

void prune(const fs::path& root, int keep) {
  auto all = committed(root);
  for (size_t i = 0; i + size_t(std::max(keep, 1)) < all.size(); ++i) {
    try {
      remove_atomically(all[i].second);
    } catch (const Error&) {
      // Left for the next prune; it is an older checkpoint, never the one a resume picks.
    }
  }
  try {
    recover(root);
  } catch (const Error&) {
    // A leftover that cannot be removed now is tried again at the next prune and the next run's start.
  }
}

}  // namespace shardlab::checkpoint
