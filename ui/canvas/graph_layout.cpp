#include "ui/canvas/graph_layout.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace shardlab::ui::layout {

QHash<QString, QPointF> layered(const QVector<Node>& nodes, const QVector<Edge>& edges, double aspect) {
  const int n = int(nodes.size());
  QHash<QString, int> index;
  for (int i = 0; i < n; ++i) index.insert(nodes[i].id, i);
  QVector<QVector<int>> preds(n), succs(n);
  QVector<int> indegree(n, 0);
  for (const Edge& e : edges) {
    auto f = index.find(e.from), t = index.find(e.to);
    if (f == index.end() || t == index.end() || *f == *t) continue;
    preds[*t].push_back(*f);
    succs[*f].push_back(*t);
    ++indegree[*t];
  }

  // Kahn's order; a node's layer is one more than its deepest predecessor's (longest path).
  QVector<int> layer(n, -1), order, ready;
  for (int i = n - 1; i >= 0; --i)
    if (indegree[i] == 0) ready.push_back(i);
  while (!ready.isEmpty()) {
    const int v = ready.takeLast();
    order.push_back(v);
    int l = 0;
    for (int p : preds[v]) l = std::max(l, layer[p] + 1);
    layer[v] = l;
    for (auto it = succs[v].rbegin(); it != succs[v].rend(); ++it)
      if (--indegree[*it] == 0) ready.push_back(*it);
  }
  int deepest = -1;
  for (int l : layer) deepest = std::max(deepest, l);
  for (int i = 0; i < n; ++i)
    if (layer[i] < 0) {
      layer[i] = deepest + 1;
      order.push_back(i);
    }

  // Within a layer, order nodes by the mean slot of their inputs so edges cross less; ties keep
  // the file's order.
  std::map<int, QVector<int>> layers;
  for (int v : order) layers[layer[v]].push_back(v);
  QVector<double> slot(n, 0);
  for (auto& [l, members] : layers) {
    QVector<double> key(n, 0);
    for (int v : members) {
      double sum = 0;
      int count = 0;
      for (int p : preds[v])
        if (layer[p] < l) sum += slot[p], ++count;
      key[v] = count ? sum / count : 1e9 + v;
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return key[a] < key[b]; });
    for (int i = 0; i < members.size(); ++i) slot[members[i]] = i;
  }

  QVector<double> label(n, 0);  // widest label on an edge leaving each node
  for (const Edge& e : edges)
    if (auto f = index.find(e.from); f != index.end()) label[*f] = std::max(label[*f], e.labelWidth);

  // Each layer as a column: its width, its height (members stacked) and the room after it.
  struct Column {
    QVector<int> members;
    double x = 0, width = 0, height = 0, gap = kLayerGap;
  };
  QVector<Column> columns;
  double x = 0;
  for (auto& [l, members] : layers) {
    Column c;
    c.members = members;
    c.x = x;
    for (int v : members) {
      c.height += (c.height > 0 ? kNodeGap : 0) + nodes[v].size.height();
      c.width = std::max(c.width, nodes[v].size.width());
      c.gap = std::max(c.gap, label[v] + 2 * kLabelMargin);
    }
    x += c.width + c.gap;
    columns << c;
  }

  // Folding: column i goes to the row its centre falls in when the one-row width is cut into
  // `rows` equal parts; rows left empty by a very wide column are dropped.
  auto rowsOf = [&](int rows) {
    const double width = std::max(1.0, columns.isEmpty() ? 0 : columns.last().x + columns.last().width);
    QVector<int> row(columns.size());
    int last = -1, next = -1;
    for (int i = 0; i < columns.size(); ++i) {
      const int r = std::min(rows - 1, int((columns[i].x + columns[i].width / 2) / (width / rows)));
      if (r != last) last = r, ++next;
      row[i] = next;
    }
    return row;
  };
  // The bounding box of the columns laid out in `row`s.
  auto extent = [&](const QVector<int>& row) {
    double width = 0, height = 0, rowStart = 0, rowHeight = 0;
    for (int i = 0; i < columns.size(); ++i) {
      if (i == 0 || row[i] != row[i - 1]) {
        if (i > 0) height += rowHeight + kRowGap;
        rowStart = columns[i].x;
        rowHeight = 0;
      }
      width = std::max(width, columns[i].x + columns[i].width - rowStart);
      rowHeight = std::max(rowHeight, columns[i].height);
    }
    return QSizeF(width, height + rowHeight);
  };
  QVector<int> row = rowsOf(1);
  const QSizeF oneRow = extent(row);
  if (oneRow.width() > kFoldWidth && aspect > 0) {
    double best = std::abs(std::log(oneRow.width() / std::max(1.0, oneRow.height()) / aspect));
    for (int rows = 2; rows <= columns.size(); ++rows) {
      const QVector<int> candidate = rowsOf(rows);
      const QSizeF e = extent(candidate);
      const double miss = std::abs(std::log(e.width() / std::max(1.0, e.height()) / aspect));
      if (miss < best) best = miss, row = candidate;
    }
  }

  QHash<QString, QPointF> out;
  double rowTop = 0, rowHeight = 0, rowStart = 0;
  for (int i = 0; i < columns.size(); ++i) {
    if (i > 0 && row[i] != row[i - 1]) {
      rowTop += rowHeight + kRowGap;
      rowHeight = 0;
    }
    if (i == 0 || row[i] != row[i - 1]) rowStart = columns[i].x;
    double y = rowTop;
    for (int v : columns[i].members) {
      // Whole pixels, as the project stores positions: a node placed here stays put when saved.
      out.insert(nodes[v].id, QPointF(std::round(columns[i].x - rowStart), std::round(y)));
      y += nodes[v].size.height() + kNodeGap;
    }
    rowHeight = std::max(rowHeight, columns[i].height);
  }
  return out;
}

QRectF freeSpot(QRectF want, const QVector<QRectF>& taken, double gap) {
  // Each step moves below the lowest rectangle in the way, so this ends after at most |taken| steps.
  for (int step = 0; step <= taken.size(); ++step) {
    const QRectF grown = want.adjusted(-gap, -gap, gap, gap);
    double below = -1e300;
    for (const QRectF& r : taken)
      if (grown.intersects(r)) below = std::max(below, r.bottom());
    if (below == -1e300) return want;
    want.moveTop(std::ceil(below + gap + 1));
  }
  return want;
}

}  // namespace shardlab::ui::layout
