// The committed checkpoints of a directory as a table: step, training loss, eval accuracy, mesh,
// size, when written. Refreshed by re-reading the directory (metadata only).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class CheckpointListModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Step, Loss, EvalAccuracy, Mesh, Size, Written, ColumnCount };

  explicit CheckpointListModel(QObject* parent = nullptr);

  void setRoot(const QString& root);
  QString root() const { return root_; }
  void refresh();
  const checkpoint::Entry* entry(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QString root_;
  std::vector<checkpoint::Entry> entries_;
};

}  // namespace shardlab::ui
