#include "ui/checkpoints/checkpoint_list_model.h"

#include <QDateTime>
#include <chrono>
#include <cmath>

namespace shardlab::ui {

namespace {

QString metric(const nlohmann::ordered_json& meta, const char* key, bool percent) {
  if (!meta.contains("metrics") || !meta["metrics"].contains(key) || !meta["metrics"][key].is_number()) return "–";
  const double v = meta["metrics"][key].get<double>();
  return percent ? QString::number(100.0 * v, 'f', 2) + " %" : QString::number(v, 'g', 5);
}

QDateTime to_datetime(std::filesystem::file_time_type t) {
  const auto sys = std::chrono::file_clock::to_sys(t);
  return QDateTime::fromMSecsSinceEpoch(std::chrono::duration_cast<std::chrono::milliseconds>(sys.time_since_epoch()).count());
}

}  // namespace

CheckpointListModel::CheckpointListModel(QObject* parent) : QAbstractTableModel(parent) {}

void CheckpointListModel::setRoot(const QString& root) {
  root_ = root;
  refresh();
}

void CheckpointListModel::refresh() {
  beginResetModel();
  entries_ = root_.isEmpty() ? std::vector<checkpoint::Entry>{} : checkpoint::list(root_.toStdString());
  endResetModel();
}

const checkpoint::Entry* CheckpointListModel::entry(int row) const {
  return row >= 0 && row < int(entries_.size()) ? &entries_[size_t(row)] : nullptr;
}

int CheckpointListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(entries_.size()); }
int CheckpointListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CheckpointListModel::data(const QModelIndex& index, int role) const {
  const checkpoint::Entry* e = entry(index.row());
  if (!e || !index.isValid()) return {};
  // An unreadable step is listed (a resume would refuse it); the tooltip says why.
  if (role == Qt::ToolTipRole)
    return QString::fromStdString(e->error.empty() ? e->dir.string() : e->dir.string() + "\n" + e->error);
  if (role == Qt::TextAlignmentRole) return QVariant(index.column() == Mesh ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Step: return qlonglong(e->step);
    case Loss: return metric(e->meta, "loss", false);
    case EvalAccuracy: return metric(e->meta, "eval_accuracy", true);
    case Mesh: return QString::fromStdString(e->meta.value("mesh", std::string(e->meta.contains("error") ? "unreadable" : "–")));
    case Size: return QString::fromStdString(runtime::format_bytes(e->bytes));
    case Written: return to_datetime(e->written).toString("yyyy-MM-dd HH:mm:ss");
  }
  return {};
}

QVariant CheckpointListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Step", "Loss", "Eval accuracy", "Mesh", "Size", "Written"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace shardlab::ui
