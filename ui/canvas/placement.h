// Where the canvas draws the nodes of one graph: at their stored positions, and the rest where the
// automatic layout puts them, stepping aside from the placed ones. The scene uses it with its items'
// sizes; the palette uses it (with measured sizes) to add a layer beside the graph, not on top of it.
#pragma once

#include <QFont>
#include <QHash>
#include <QRectF>
#include <QVector>

#include "engine/api/engine.h"
#include "ui/canvas/graph_layout.h"

namespace shardlab::ui::placement {

// The edges of the graph at `parent` for the layout, each with the width of its shape label.
QVector<layout::Edge> edgesOf(const project::Project& p, const api::Design& d, const QFont& font, const QString& parent);

// `nodes` are the graph's nodes (ids as in the graph: "W1", "@in") with their sizes; the result is
// each node's rectangle in stored coordinates (the scene at the top, the block area inside one).
QHash<QString, QRectF> place(const project::Project& p, const QString& parent, const QVector<layout::Node>& nodes,
                             const QVector<layout::Edge>& edges);

// The same for the graph at `parent` with every node measured as the canvas draws it (an expanded
// Repeat around its laid-out block).
QHash<QString, QRectF> nodeRects(const project::Project& p, const api::Design& d, const QFont& font, const QString& parent);

}  // namespace shardlab::ui::placement
