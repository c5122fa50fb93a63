#include "engine/backends/backend.h"

#include <algorithm>

#include "engine/ir/primitive.h"
#include "engine/util/bytes.h"

namespace shardlab::backends {

const char* device_kind_name(DeviceKind k) { return k == DeviceKind::Cuda ? "cuda" : "cpu"; }

bool Backend::supports(const ir::Instr& ins, const ir::Program& program) const {
  for (const std::vector<int>* vs : {&ins.in, &ins.out})
    for (int v : *vs)
      if (!supports(program.values[size_t(v)].dtype)) return false;
  return true;
}

std::optional<std::string> Backend::refusal(const ir::Program& program) const {
  const std::string who = std::string("the ") + (kind() == DeviceKind::Cuda ? "CUDA" : "CPU") + " backend";
  for (const ir::Value& v : program.values)
    if (!supports(v.dtype)) return who + " does not hold " + dtype_name(v.dtype) + " values ('" + v.name + "')";
  for (const ir::Instr& ins : program.instrs)
    if (!supports(ins, program))
      return who + " does not run " + ir::op_name(ins.op) + (ins.node.empty() ? std::string() : " (node '" + ins.node + "')") +
             " on these dtypes";
  return std::nullopt;
}

uint64_t bytes_needed(const plan::MemoryPlan& memory, bool shares_persistent) {
  return uint64_t(memory.arena_bytes + memory.staging_bytes + (shares_persistent ? 0 : memory.param_bytes + memory.opt_state_bytes));
}

std::optional<OutOfMemory> check_capacity(const ir::Program& program, const plan::MemoryPlan& memory,
                                          const LoadOptions& options, uint64_t capacity, uint64_t scratch,
                                          const std::string& device) {
  // State shared with another program (share_persistent_with) is already held.
  const uint64_t need = bytes_needed(memory, options.share_persistent_with != nullptr) + scratch;
  if (need <= capacity) return std::nullopt;
  return out_of_memory(device, options.what, need, capacity, program);
}

OutOfMemory out_of_memory(const std::string& device, const std::string& what, uint64_t need, uint64_t capacity,
                          const ir::Program& program) {
  // The three largest arrays, so the user sees what to shard.
  std::vector<std::pair<int64_t, std::string>> sizes;
  for (const ir::Value& v : program.values) sizes.push_back({numel(v.shape) * int64_t(dtype_size(v.dtype)), v.name});
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string biggest;
  for (size_t i = 0; i < sizes.size() && i < 3; ++i)
    biggest += (i ? ", " : "") + sizes[i].second + " " + util::format_bytes(double(sizes[i].first));
  return OutOfMemory(device + ": " + what + " needs " + util::format_bytes(double(need)) + " but only " +
                     util::format_bytes(double(capacity)) + " is available; the largest arrays: " + biggest);
}

}  // namespace shardlab::backends
