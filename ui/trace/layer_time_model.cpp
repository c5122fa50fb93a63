#include "ui/trace/layer_time_model.h"

#include <QBrush>
#include <QColor>
#include <cmath>
#include <set>

#include "ui/trace/trace_style.h"

namespace shardlab::ui {

std::map<std::string, double> layerTimePerStep(const std::vector<profiler::Span>& spans) {
  std::map<std::string, double> total;
  std::set<int64_t> steps;
  for (const auto& s : spans) {
    if (s.category == profiler::Category::Step) continue;
    steps.insert(s.step);
    const std::string& key = !s.node.empty()                            ? s.node
                             : s.category == profiler::Category::Data ? std::string("(data)")
                                                                       : std::string("(no layer)");
    total[key] += s.dur_us;
  }
  for (auto& [node, us] : total) us /= double(steps.size());
  return total;
}

LayerTimeModel::LayerTimeModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTimeModel::setRuns(const QString& baselineLabel, std::map<std::string, double> baseline, const QString& currentLabel,
                             std::map<std::string, double> current) {
  beginResetModel();
  baselineLabel_ = baselineLabel;
  currentLabel_ = currentLabel;
  rows_.clear();
  std::set<std::string> layers;
  for (const auto& [k, v] : baseline) layers.insert(k);
  for (const auto& [k, v] : current) layers.insert(k);
  for (const std::string& layer : layers) {
    Row r;
    r.layer = QString::fromStdString(layer);
    if (auto it = baseline.find(layer); it != baseline.end()) r.baseline = it->second;
    if (auto it = current.find(layer); it != current.end()) r.current = it->second;
    rows_.push_back(r);
  }
  endResetModel();
}

void LayerTimeModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

int LayerTimeModel::rowOf(const QString& layer) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].layer == layer) return int(i);
  return -1;
}

QString LayerTimeModel::layerAt(int row) const { return row >= 0 && row < int(rows_.size()) ? rows_[size_t(row)].layer : QString(); }

int LayerTimeModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int LayerTimeModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

double LayerTimeModel::value(const Row& r, int column) const {
  switch (column) {
    case Baseline: return r.baseline;
    case Current: return r.current;
    case Difference: return r.current - r.baseline;  // NaN when either run lacks the layer
    case Change: return r.baseline > 0 ? 100.0 * (r.current - r.baseline) / r.baseline : NAN;
  }
  return NAN;
}

QVariant LayerTimeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size()) || index.column() >= ColumnCount) return {};
  const Row& r = rows_[size_t(index.row())];
  const int c = index.column();
  if (c == Layer) {
    if (role == Qt::DisplayRole || role == ValueRole || role == SortRole || role == Qt::ToolTipRole) return r.layer;
    return {};
  }
  const double v = value(r, c);
  switch (role) {
    case Qt::DisplayRole:
      if (std::isnan(v)) return QStringLiteral("—");
      if (c == Change) return QStringLiteral("%1%2%").arg(v > 0 ? "+" : "").arg(v, 0, 'f', 1);
      if (c == Difference) return (v > 0 ? QStringLiteral("+") : QString()) + trace_style::durationText(v);
      return trace_style::durationText(v);
    case ValueRole:
      return v;
    case SortRole:
      return std::isnan(v) ? -1e300 : v;
    case Qt::TextAlignmentRole:
      return int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      // Slower than the baseline in red, faster in green; changes under 2% are noise on a shared CPU.
      if ((c == Difference || c == Change) && !std::isnan(v) && r.baseline > 0) {
        const double rel = (r.current - r.baseline) / r.baseline;
        if (rel > 0.02) return QBrush(QColor(0xc0, 0x39, 0x2b));
        if (rel < -0.02) return QBrush(QColor(0x1e, 0x84, 0x49));
      }
      return {};
    case Qt::ToolTipRole:
      if (std::isnan(v) && (c == Baseline || c == Current))
        return tr("%1 has no spans of %2").arg(c == Baseline ? baselineLabel_ : currentLabel_, r.layer);
      return {};
  }
  return {};
}

QVariant LayerTimeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Layer: return tr("Layer");
      case Baseline: return tr("Baseline / step");
      case Current: return tr("Current / step");
      case Difference: return tr("Difference");
      case Change: return tr("Change");
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Baseline: return tr("%1: span time per step, summed over its devices").arg(baselineLabel_);
      case Current: return tr("%1: span time per step, summed over its devices").arg(currentLabel_);
      case Difference: return tr("Current minus baseline");
      case Change: return tr("The difference relative to the baseline");
    }
  }
  return {};
}

}  // namespace shardlab::ui
