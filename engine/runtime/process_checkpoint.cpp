#include "engine/runtime/process_checkpoint.h"

#include <map>

#include "engine/checkpoint/blocks.h"
#include "engine/checkpoint/checkpoint_meta.h"
#include "engine/checkpoint/sharded.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

namespace fs = std::filesystem;

namespace {

// Every process's error, or none: the first one is every process's exception.
void throw_if_any(backends::Processes& procs, const std::string& error, const std::string& what) {
  const std::vector<std::string> errors = backends::all_gather_strings(procs, error);
  for (size_t p = 0; p < errors.size(); ++p)
    if (!errors[p].empty()) throw Error(what + "process " + std::to_string(p) + ": " + errors[p]);
}

}  // namespace

void save_blocks(SpmdSession& session, backends::Processes& procs, const std::vector<StateArray>& arrays, const fs::path& root,
                 int64_t step, nlohmann::ordered_json meta, const std::function<void(const fs::path&)>& after_commit) {
  const int k = procs.size(), me = procs.rank();
  meta["version"] = checkpoint::kMetaVersionBlocks;
  nlohmann::ordered_json shapes = nlohmann::ordered_json::object();
  for (const StateArray& a : arrays) shapes[a.name] = session.global_step().program.shape(a.value);
  meta["blocks"] = std::move(shapes);

  // Which process writes each block: the one whose device of lowest index holds it. Every process
  // plans the same, so none needs to be told; the files are numbered over the processes that write.
  struct Planned {
    std::string name;
    int process = 0, value = 0, device = 0;
    checkpoint::StoredDType stored;
  };
  std::vector<Planned> plan;
  std::vector<uint64_t> bytes(size_t(k), 0);
  for (const StateArray& a : arrays)
    for (const SpmdSession::BlockPlace& b : session.blocks_of(a.value)) {
      const int p = session.process_of(b.device);
      plan.push_back({checkpoint::block_name(a.name, b.start), p, a.value, b.device, a.stored});
      bytes[size_t(p)] += uint64_t(numel(b.size)) * checkpoint::dtype_size(a.stored);
    }
  std::vector<int> file_of(size_t(k), 0);
  int files = 0;
  for (int p = 0; p < k; ++p)
    if (bytes[size_t(p)] > 0) file_of[size_t(p)] = ++files;

  std::string error, tmp;
  if (me == 0) {
    try {
      tmp = checkpoint::begin_save(root, step, meta).string();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = backends::broadcast_string(procs, error, 0);
  if (!error.empty()) throw Error(error);
  tmp = backends::broadcast_string(procs, tmp, 0);

  // Phase one: every process writes its own blocks, copied off its devices only now, one at a
  // time straight into the dtype they are stored in: a process holds its share of the state once.
  const std::string what = "checkpoint of step " + std::to_string(step) + ": ";
  if (bytes[size_t(me)] > 0) {
    try {
      checkpoint::SafetensorsFile mine;
      for (const Planned& b : plan)
        if (b.process == me) {
          checkpoint::SafetensorsFile one =
              checkpoint::tensor_file({{b.name, session.read_block(b.value, b.device)}}, step, {{b.name, b.stored}});
          mine.tensors.push_back(std::move(one.tensors.front()));
          mine.metadata = std::move(one.metadata);
        }
      checkpoint::write_shard(tmp, std::move(mine), size_t(file_of[size_t(me)]), size_t(files));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  try {
    throw_if_any(procs, error, what);
  } catch (const Error&) {
    if (me == 0) checkpoint::abandon_save(tmp);
    throw;
  }

  // Phase two: process 0 commits what all of them wrote. The index lists the blocks file by file.
  if (me == 0) {
    try {
      std::vector<std::pair<std::string, std::string>> weight_map;
      uint64_t total = 0;
      for (int p = 0; p < k; ++p)
        for (const Planned& b : plan)
          if (b.process == p) weight_map.push_back({b.name, checkpoint::shard_name(size_t(file_of[size_t(p)]), size_t(files))});
      for (uint64_t b : bytes) total += b;
      checkpoint::write_index(tmp, weight_map, total);
      const fs::path dir = checkpoint::commit_save(root, step, tmp, meta);
      if (after_commit) after_commit(dir);
    } catch (const std::exception& e) {
      checkpoint::abandon_save(tmp);
      error = e.what();
    }
  }
  error = backends::broadcast_string(procs, error, 0);
  if (!error.empty()) throw Error(error);
}

bool holds_blocks(const fs::path& dir) { return checkpoint::saved_over_processes(dir); }

checkpoint::LoadedBlocks restore_blocks(SpmdSession& session, backends::Processes& procs, const std::vector<StateArray>& arrays,
                                        const fs::path& dir) {
  // The parts this process's devices hold under the mesh that runs now.
  std::map<std::string, std::vector<SpmdSession::BlockPlace>> need;
  for (const StateArray& a : arrays) need[a.name] = session.local_blocks(a.value);
  checkpoint::LoadedBlocks c;
  std::string error;
  try {
    c = checkpoint::load_blocks(dir, [&](const std::string& array, const Shape& start, const Shape& size) {
      auto it = need.find(array);
      if (it == need.end()) return false;
      for (const SpmdSession::BlockPlace& b : it->second)
        if (checkpoint::boxes_overlap(start, size, b.start, b.size)) return true;
      return false;
    });
    std::map<std::string, Shape> saved(c.arrays.begin(), c.arrays.end());
    for (const StateArray& a : arrays) {
      auto it = saved.find(a.name);
      if (it == saved.end()) throw Error(dir.string() + ": the checkpoint has no array '" + a.name + "' (saved from another model?)");
      const Shape& want = session.global_step().program.shape(a.value);
      if (it->second != want)
        throw Error(dir.string() + ": '" + a.name + "' has shape " + shape_str(it->second) + ", unlike the model's " + shape_str(want));
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  throw_if_any(procs, error, "");

  std::map<std::string, std::vector<const checkpoint::StoredTensor*>> blocks;
  for (const checkpoint::StoredTensor& t : c.blocks) {
    checkpoint::BlockRef r;
    if (checkpoint::parse_block_name(t.name, r)) blocks[r.array].push_back(&t);
  }
  try {
    for (const StateArray& a : arrays)
      session.set_value_by_region(a.value, [&](const Shape& start, const Shape& size) {
        return checkpoint::region_from_blocks(a.name, blocks[a.name], start, size);
      });
  } catch (const std::exception& e) {
    error = dir.string() + ": " + e.what();
  }
  throw_if_any(procs, error, "");
  c.blocks.clear();
  return c;
}

}  // namespace shardlab::runtime
