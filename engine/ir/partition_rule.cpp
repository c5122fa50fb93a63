#include "engine/ir/partition_rule.h"

namespace shardlab::ir {

// PartitionSpec('data', None), PartitionSpec(('data', 'model'),) and " partial over model".
std::string Layout::str() const {
  std::string s = "PartitionSpec(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    const auto& d = dims[i];
    if (d.empty()) s += "None";
    else if (d.size() == 1) s += "'" + d[0] + "'";
    else {
      s += "(";
      for (size_t k = 0; k < d.size(); ++k) s += (k ? ", '" : "'") + d[k] + "'";
      s += ")";
    }
  }
  if (dims.size() == 1 && dims[0].size() > 1) s += ",";
  s += ")";
  if (!partial.empty()) {
    s += " partial over";
    for (const std::string& a : partial) s += " " + a;
  }
  return s;
}

}  // namespace shardlab::ir
