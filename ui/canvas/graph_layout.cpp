#include "ui/canvas/graph_layout.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace shardlab::ui::layout {

QHash<QString, QPointF> layered(const QVector<Node>& nodes, const QVector<Edge>& edges) {
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

  QHash<QString, QPointF> out;
  double x = 0;
  for (auto& [l, members] : layers) {
    double y = 0, width = 0, gap = kLayerGap;
    for (int v : members) {
      // Whole pixels, as the project stores positions: a node placed here stays put when saved.
      out.insert(nodes[v].id, QPointF(std::round(x), std::round(y)));
      y += nodes[v].size.height() + kNodeGap;
      width = std::max(width, nodes[v].size.width());
      gap = std::max(gap, label[v] + 2 * kLabelMargin);
    }
    x += width + gap;
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
