// Automatic placement of a graph's nodes: longest-path layers left to right (each node one layer
// right of its deepest input), nodes of a layer stacked top-down in the order of their inputs, and
// a free-spot search so nodes placed automatically never cover nodes the user placed. A graph too
// wide to read in one row (a deep chain of layers) folds into rows read left to right, top to
// bottom, like lines of text, shaped roughly like the view.
#pragma once

#include <QHash>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QVector>

namespace shardlab::ui::layout {

struct Node {
  QString id;
  QSizeF size;
};

struct Edge {
  QString from, to;
  double labelWidth = 0;  // the shape label drawn halfway along it
};

inline constexpr double kLayerGap = 90;      // least room between layers, for the edge curves
inline constexpr double kLabelMargin = 20;   // clear space each side of a label in that room
inline constexpr double kNodeGap = 36;
// Room between folded rows: an edge from a row's end to the next row's start runs left through
// the middle of it, with its shape label.
inline constexpr double kRowGap = 110;
// A graph wider than this in one row folds (about what a canvas shows at a readable zoom).
inline constexpr double kFoldWidth = 2400;
// The shape (width / height) a folded graph aims for: a typical canvas.
inline constexpr double kViewAspect = 1.6;

// Top-left corners for every node, the first layer at x = 0 and every layer starting at y = 0; the
// room after a layer fits the widest label on the edges leaving it. A graph wider than kFoldWidth
// is cut between layers into rows of about equal width, the number of rows chosen so the whole is
// closest to `aspect`; every row starts at x = 0, kRowGap below the tallest node of the row above.
// Nodes on a cycle (a broken file) go one layer right of everything else rather than being lost.
QHash<QString, QPointF> layered(const QVector<Node>& nodes, const QVector<Edge>& edges, double aspect = kViewAspect);

// `want` moved down until it overlaps none of `taken` by less than `gap`.
QRectF freeSpot(QRectF want, const QVector<QRectF>& taken, double gap = kNodeGap / 2);

}  // namespace shardlab::ui::layout
