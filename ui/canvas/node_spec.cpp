#include "ui/canvas/node_spec.h"

#include <QCoreApplication>
#include <QObject>
#include <QSet>

#include "ui/document/graph_edits.h"

namespace shardlab::ui {

namespace {

const graph::NodeReport* findIn(const std::vector<graph::NodeReport>& nodes, const std::string& path) {
  for (const graph::NodeReport& n : nodes) {
    if (n.name == path) return &n;
    // Body reports are named with their Repeat's path as prefix.
    if (!n.body.empty() && path.rfind(n.name + "/", 0) == 0)
      if (const graph::NodeReport* r = findIn(n.body, path)) return r;
  }
  return nullptr;
}

QString quoted(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

QString joinPath(const QString& parent, const QString& leaf) { return parent.isEmpty() ? leaf : parent + "/" + leaf; }

QString shapeText(const graph::ArrayInfo& a) {
  QStringList dims;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const QString size = QString::number(a.shape[i]);
    dims << (i < a.axes.size() && !a.axes[i].empty() ? QString::fromStdString(a.axes[i]) + " " + size : size);
  }
  return "(" + dims.join(", ") + ")";
}

const graph::NodeReport* findReport(const api::Design& d, const QString& path) {
  return findIn(d.graph.nodes, path.toStdString());
}

QString nodeError(const api::Design& d, const QString& path) {
  QStringList lines;
  auto add = [&](const QString& s) {
    if (!s.isEmpty() && !lines.contains(s)) lines << s;
  };
  if (const graph::NodeReport* r = findReport(d, path)) add(quoted(r->error));
  // The graph's problems name their nodes as data: the node's own, and a cycle it is on. A block's
  // problem also lists its failing inner nodes, whose own reports (above) say why.
  const std::string p = path.toStdString();
  for (const Diagnostic* x : api::diagnostics_of_node(d, p)) {
    if (x->severity != Severity::Error || x->code.rfind("graph.", 0) != 0) continue;
    if (x->code == "graph.cycle") add(QObject::tr("on a cycle: %1").arg(quoted(x->message)));
    else if (x->nodes.front() == p) add(quoted(x->reason));
  }
  return lines.join('\n');
}

QString edgeShape(const api::Design& d, const QString& parent, const QString& from) {
  if (from == QLatin1String(graph::kCarryNode)) {
    const graph::NodeReport* r = findReport(d, parent);
    return r && !r->inputs.empty() ? shapeText(r->inputs.front()) : QString();
  }
  const graph::NodeReport* r = findReport(d, joinPath(parent, from));
  return r && r->layer && r->error.empty() ? shapeText(r->output) : QString();
}

QString edgeArray(const project::Project& p, const QString& parent, const QString& from) {
  if (from != QLatin1String(graph::kCarryNode)) return joinPath(parent, from);
  // A block's carried input is, for layer 0, whatever feeds the Repeat.
  const std::string repeat = parent.toStdString();
  const graph::Graph* outer = edits::graph_at(p, edits::parent_of(repeat));
  if (!outer) return {};
  for (const graph::Edge& e : outer->edges)
    if (e.to.node == edits::leaf_of(repeat))
      return edgeArray(p, QString::fromStdString(edits::parent_of(repeat)), QString::fromStdString(e.from.node));
  return {};
}

NodeSpec nodeSpec(const project::Project& p, const api::Design& d, const QString& path) {
  NodeSpec s;
  s.path = path;
  s.parent = QString::fromStdString(edits::parent_of(path.toStdString()));
  s.name = QString::fromStdString(edits::leaf_of(path.toStdString()));

  if (s.name == QLatin1String(graph::kCarryNode)) {
    s.carry = true;
    s.type = QObject::tr("block input");
    s.category = QStringLiteral("Blocks");
    s.outputShape = edgeShape(d, s.parent, s.name);
    s.notes << QObject::tr("each layer's input");
    return s;
  }

  const graph::Node* node = edits::find_node(p, path.toStdString());
  if (!node) return s;
  s.type = QString::fromStdString(node->type);
  std::vector<std::string> ports;
  try {
    const graph::LayerInfo info = graph::layer_info(node->type);
    s.category = QString::fromStdString(info.category);
    ports = info.inputs;
  } catch (const Error&) {
    // An unknown type still shows the ports its edges use, so those edges have somewhere to end.
    s.category = QObject::tr("Unknown");
    if (const graph::Graph* g = edits::graph_at(p, s.parent.toStdString()))
      for (const graph::Edge& e : g->edges)
        if (e.to.node == node->name && std::find(ports.begin(), ports.end(), e.to.port) == ports.end())
          ports.push_back(e.to.port);
  }

  const graph::NodeReport* r = findReport(d, path);
  const bool inferred = r && r->layer && r->error.empty();
  for (size_t i = 0; i < ports.size(); ++i) {
    s.inputs << QString::fromStdString(ports[i]);
    // An Input's report carries the batch as a pseudo input; it has no ports.
    s.inputShapes << (r && node->type != "Input" && i < r->inputs.size() ? shapeText(r->inputs[i]) : QString());
  }
  if (inferred) s.outputShape = shapeText(r->output);
  if (r)
    for (const graph::ParamInfo& info : r->params) {
      // A shared parameter is shown, and selected, as the node it belongs to.
      if (!info.tied.empty()) {
        s.params.push_back({QString::fromStdString(info.name + " = " + info.tied) + " " + shapeText({info.shape, info.axes}),
                            QString::fromStdString(info.tied)});
        continue;
      }
      s.params.push_back({QString::fromStdString(info.name) + " " + shapeText({info.shape, info.axes}), joinPath(path, QString::fromStdString(info.name))});
    }

  if (node->type == "Repeat") {
    s.repeat = true;
    s.expanded = edits::expanded(p, path.toStdString());
    const QString count = node->params.contains("count") ? QString::fromStdString(node->params["count"].dump()) : "?";
    s.type = QObject::tr("Repeat × %1").arg(count);
    if (r && !r->params.empty() && !r->params.front().axes.empty())
      s.notes << QObject::tr("params stacked on %1 (%2)").arg(quoted(r->params.front().axes.front()), count);
    else
      s.notes << QObject::tr("block runs %1 times").arg(count);
  }
  const graph::Graph* g = edits::graph_at(p, s.parent.toStdString());
  if (!s.parent.isEmpty() && g && g->output == node->name) {
    s.blockOutput = true;
    s.notes << QObject::tr("block output: feeds the next layer");
  }
  if (s.parent.isEmpty() && p.loss.output == node->name)
    s.notes << QObject::tr("loss: %1").arg(QString::fromStdString(p.loss.type));
  const bool feedsSomething = g && std::any_of(g->edges.begin(), g->edges.end(), [&](const graph::Edge& e) { return e.from.node == node->name; });
  if (!feedsSomething && !s.blockOutput && !s.outputShape.isEmpty()) s.notes << QObject::tr("output %1").arg(s.outputShape);
  s.error = nodeError(d, path);
  return s;
}

}  // namespace shardlab::ui
