#include "ui/trace/span_arrays.h"

#include <algorithm>

namespace shardlab::ui {

namespace {

const graph::NodeReport* findNode(const std::vector<graph::NodeReport>& nodes, const std::string& path) {
  for (const graph::NodeReport& n : nodes) {
    if (n.name == path) return &n;
    // Body nodes carry their full path ("blocks/W1"), so only a prefix can hold it.
    if (!n.body.empty() && path.size() > n.name.size() && path.compare(0, n.name.size(), n.name) == 0 && path[n.name.size()] == '/')
      if (const graph::NodeReport* inner = findNode(n.body, path)) return inner;
  }
  return nullptr;
}

}  // namespace

std::vector<SpanArray> openableArrays(const profiler::Span& span, const api::Design& design) {
  std::vector<SpanArray> out;
  if (!design.sharding_ok || span.category == profiler::Category::Data || span.category == profiler::Category::Step) return out;
  auto note = [&](const std::string& name, bool written) {
    const sharding::ArraySharding* a = design.sharding.find(name);
    if (!a) return;
    const QString q = QString::fromStdString(name);
    for (SpanArray& seen : out)
      if (seen.name == q) {
        (written ? seen.written : seen.read) = true;
        return;
      }
    SpanArray s{q, QString::fromUtf8(sharding::kind_name(a->kind))};
    (written ? s.written : s.read) = true;
    out.push_back(s);
  };
  if (span.arrays) {
    for (const std::string& n : span.arrays->reads) note(n, false);
    for (const std::string& n : span.arrays->writes) note(n, true);
  } else {
    note(span.array, true);  // an older trace: its value name, which is an array only for some spans
  }
  return out;
}

QStringList openableArrayNames(const profiler::Span& span, const api::Design& design) {
  QStringList names;
  for (const SpanArray& a : openableArrays(span, design)) names << a.name;
  return names;
}

bool hasNode(const api::Design& design, const QString& path) {
  return !path.isEmpty() && findNode(design.graph.nodes, path.toStdString()) != nullptr;
}

QString graphNode(const api::Design& design, const QString& path) {
  for (QString p = path; !p.isEmpty(); p = p.left(std::max<qsizetype>(p.lastIndexOf('/'), 0)))
    if (hasNode(design, p)) return p;
  return path;
}

}  // namespace shardlab::ui
