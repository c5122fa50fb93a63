#include "engine/api/data_summary.h"

#include "engine/runtime/data_fit.h"

namespace shardlab::api {

namespace {

std::string count(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string targets(const data::SplitShape& s) {
  if (s.integer_labels) {
    const std::string range = s.num_classes > 0 ? " 0-" + std::to_string(s.num_classes - 1) : "";
    return s.targets.empty() ? "class labels" + range : "class labels of shape " + shape_str(s.targets) + range;
  }
  return "targets of shape " + shape_str(s.targets);
}

}  // namespace

DataSummary describe_data(const project::Project& p) {
  DataSummary d;
  try {
    d.shape = data::probe_dataset(p.data, runtime::data_base_dir(p));
    d.ok = true;
  } catch (const std::exception& e) {
    d.error = e.what();
    d.text = d.error;
    return d;
  }
  const data::SplitShape& train = d.shape.train;
  d.text = count(train.examples) + " training example" + (train.examples == 1 ? "" : "s") + " of " +
           shape_str(train.features) + " with " + targets(train);
  d.text += d.shape.test.examples > 0 ? "; " + count(d.shape.test.examples) + " test examples" : "; no test split";
  return d;
}

}  // namespace shardlab::api
