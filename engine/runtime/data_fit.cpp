#include "engine/runtime/data_fit.h"

#include <optional>

namespace shardlab::runtime {

namespace {

Shape per_example(const Shape& s) { return s.empty() ? Shape{} : Shape(s.begin() + 1, s.end()); }

// The model's Input node (the first, where there are several): where examples that do not fit it
// are marked.
std::string input_node(const project::Project& p) {
  for (const graph::Node& n : p.graph.nodes)
    if (n.type == "Input") return n.name;
  return "";
}

Diagnostic problem(std::string message, std::string node, std::string fix) {
  Diagnostic d = make_diagnostic(Severity::Error, "data", "data", std::move(message), std::move(fix));
  if (!node.empty()) d.nodes.push_back(std::move(node));
  return d;
}

// The first way one split does not fit, or none.
std::optional<Diagnostic> split_problem(const project::Project& p, const data::SplitShape& ds, const std::string& split,
                                        const Shape& input, const Shape& output) {
  const std::string where = p.display_name() + ": data (" + split + " split): ";
  const std::string out_node = "'" + p.loss.output + "'";
  if (ds.features != per_example(input)) {
    const std::string in = input_node(p);
    return problem(where + "examples have shape " + shape_str(ds.features) + " but the Input node takes " +
                       shape_str(per_example(input)),
                   in, "set the shape of Input '" + in + "' to " + shape_str(ds.features) + ", the data's examples");
  }
  if (p.loss.type == "softmax_cross_entropy") {
    if (!ds.integer_labels)
      return problem(where + "softmax_cross_entropy needs integer class labels, the data has targets of shape " +
                         shape_str(ds.targets) + " per example",
                     p.loss.output, "use mean_squared_error for targets like these, or data with class ids");
    // One class id per position the output gives classes for: the output's shape per example but
    // its last (class) dimension. A Dense over (28, 28) gives (28, 10), asking a label per row.
    const Shape out = per_example(output);
    const Shape labels = out.empty() ? Shape{} : Shape(out.begin(), out.end() - 1);
    if (ds.targets != labels) {
      const bool extra = labels.size() > ds.targets.size();
      return problem(where + "the loss takes " +
                         (labels.empty() ? std::string("one class id per example") : "class ids of shape " + shape_str(labels) + " per example") +
                         " for the output of node " + out_node + ", " + shape_str(out) + " per example, but the data has labels of shape " +
                         shape_str(ds.targets) + " per example",
                     p.loss.output,
                     extra ? "add Flatten after the Input, or MeanPool before " + out_node + ", so that it gives " +
                                 std::to_string(out.empty() ? 0 : out.back()) + " classes per example"
                           : "make " + out_node + " give classes of shape " + shape_str(ds.targets) + " + (classes,) per example");
    }
    const int64_t classes = output.empty() ? 0 : output.back();
    if (ds.num_classes > classes)
      return problem(where + "labels go up to " + std::to_string(ds.num_classes - 1) + " but node " + out_node + " gives " +
                         std::to_string(classes) + " classes",
                     p.loss.output, "set the features of " + out_node + " to " + std::to_string(ds.num_classes));
  } else if (ds.targets != per_example(output)) {
    return problem(where + "targets have shape " + shape_str(ds.targets) + " per example but node " + out_node + " gives " +
                       shape_str(per_example(output)),
                   p.loss.output, "make " + out_node + " give " + shape_str(ds.targets) + " per example, as the data's targets are");
  }
  return std::nullopt;
}

}  // namespace

std::vector<Diagnostic> data_fit_problems(const project::Project& p, const data::SourceShape& data, const Shape& input,
                                          const Shape& output) {
  std::vector<Diagnostic> out;
  const std::optional<Diagnostic> train = split_problem(p, data.train, "train", input, output);
  if (train) out.push_back(*train);
  // The test split's problem, unless it is the training split's again.
  if (data.test.examples > 0) {
    const std::optional<Diagnostic> test = split_problem(p, data.test, "test", input, output);
    const std::optional<Diagnostic> as_train = split_problem(p, data.test, "train", input, output);
    if (test && !(train && as_train && as_train->message == train->message)) out.push_back(*test);
  }
  if (data.train.examples < p.training.batch_size) {
    Diagnostic d = make_diagnostic(Severity::Error, "data", "training.batch_size",
                                   p.display_name() + ": training.batch_size: " + std::to_string(p.training.batch_size) +
                                       " is larger than the training split (" + std::to_string(data.train.examples) + " examples)",
                                   "a batch of at most " + std::to_string(data.train.examples));
    out.push_back(std::move(d));
  }
  return out;
}

std::filesystem::path data_base_dir(const project::Project& p) {
  return p.file.empty() ? std::filesystem::path(".") : p.file.parent_path();
}

}  // namespace shardlab::runtime
