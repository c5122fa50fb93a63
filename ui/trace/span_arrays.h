// What a trace span touched, checked against the open project: the arrays among its reads and
// writes that the Sharding view can open (anything else, a temporary or an array of another
// project's trace, is left out), and whether its layer is a node of the graph. A trace file written
// before spans named their arrays offers only its one recorded array, and only when it is real.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

struct SpanArray {
  QString name;  // as the Sharding view names it: "blocks/W1/kernel", "d_blocks/W1/kernel", "blocks/W1"
  QString kind;  // "parameter", "activation", ... (sharding::kind_name)
  bool read = false, written = false;
};

// The span's arrays that `design` has, reads first, each once.
std::vector<SpanArray> openableArrays(const profiler::Span& span, const api::Design& design);
// Their names only.
QStringList openableArrayNames(const profiler::Span& span, const api::Design& design);
// Whether `path` ("blocks/W1") is a node of the design's graph, inside Repeat blocks too.
bool hasNode(const api::Design& design, const QString& path);
// The graph node a span's layer path names: itself, or for an optimizer update (recorded under its
// parameter, "blocks/W1/kernel") the node that holds it ("blocks/W1"). Unchanged when the graph
// has no such node (a trace of another project).
QString graphNode(const api::Design& design, const QString& path);

}  // namespace shardlab::ui
