#include "engine/runtime/data_fit.h"

namespace shardlab::runtime {

namespace {

Shape per_example(const Shape& s) { return s.empty() ? Shape{} : Shape(s.begin() + 1, s.end()); }

// The first way one split does not fit, or "".
std::string split_problem(const project::Project& p, const data::SplitShape& ds, const std::string& split, const Shape& input,
                          const Shape& output) {
  const std::string where = p.display_name() + ": data (" + split + " split): ";
  if (ds.features != per_example(input))
    return where + "examples have shape " + shape_str(ds.features) + " but the Input node takes " +
           shape_str(per_example(input));
  if (p.loss.type == "softmax_cross_entropy") {
    if (!ds.integer_labels)
      return where + "softmax_cross_entropy needs integer class labels, the data has targets of shape " +
             shape_str(ds.targets) + " per example";
    // One class id per position the output gives classes for: the output's shape per example but
    // its last (class) dimension. A Dense over (28, 28) gives (28, 10), asking a label per row.
    const Shape out = per_example(output);
    const Shape labels = out.empty() ? Shape{} : Shape(out.begin(), out.end() - 1);
    if (ds.targets != labels)
      return where + "the loss takes " +
             (labels.empty() ? std::string("one class id per example") : "class ids of shape " + shape_str(labels) + " per example") +
             " for the output of node '" + p.loss.output + "', " + shape_str(out) + " per example, but the data has labels of shape " +
             shape_str(ds.targets) + " per example" +
             (labels.size() > ds.targets.size() ? ": flatten the input (a Flatten after the Input) or pool it (MeanPool) before '" +
                                                       p.loss.output + "'"
                                                 : "");
    const int64_t classes = output.empty() ? 0 : output.back();
    if (ds.num_classes > classes)
      return where + "labels go up to " + std::to_string(ds.num_classes - 1) + " but node '" + p.loss.output + "' gives " +
             std::to_string(classes) + " classes";
  } else if (ds.targets != per_example(output)) {
    return where + "targets have shape " + shape_str(ds.targets) + " per example but node '" + p.loss.output + "' gives " +
           shape_str(per_example(output));
  }
  return "";
}

}  // namespace

std::vector<std::string> data_fit_problems(const project::Project& p, const data::SourceShape& data, const Shape& input,
                                           const Shape& output) {
  std::vector<std::string> out;
  const std::string train = split_problem(p, data.train, "train", input, output);
  if (!train.empty()) out.push_back(train);
  // The test split's problem, unless it is the training split's again.
  if (data.test.examples > 0) {
    const std::string test = split_problem(p, data.test, "test", input, output);
    if (!test.empty() && split_problem(p, data.test, "train", input, output) != train) out.push_back(test);
  }
  if (data.train.examples < p.training.batch_size)
    out.push_back(p.display_name() + ": training.batch_size: " + std::to_string(p.training.batch_size) +
                  " is larger than the training split (" + std::to_string(data.train.examples) + " examples)");
  return out;
}

std::filesystem::path data_base_dir(const project::Project& p) {
  return p.file.empty() ? std::filesystem::path(".") : p.file.parent_path();
}

}  // namespace shardlab::runtime
