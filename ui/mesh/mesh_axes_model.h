// The project's device mesh as an editable table of axes (name, size). Every change is checked by
// building the sharding::Mesh it would make; an invalid name or size is refused with the reason and
// not applied. A valid one is written to the project's "mesh" as one undo step; consecutive edits
// of one field (spinning a size) merge into one.
#pragma once

#include <QAbstractTableModel>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ProjectDocument;

class MeshAxesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { NameColumn, SizeColumn, ColumnCount };
  // More virtual CPU devices than this are refused: the design check walks every device on each edit.
  static constexpr int64_t kMaxDevices = 1024;

  explicit MeshAxesModel(ProjectDocument* doc, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  // Renaming an axis renames it in the rules too, in the same undo step.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  // New axes are size 1 (the device count does not change) and named data, model, or axisN.
  bool insertRows(int row, int count, const QModelIndex& parent = {}) override;
  bool removeRows(int row, int count, const QModelIndex& parent = {}) override;

  const sharding::Mesh& mesh() const { return mesh_; }
  // Why the project's own mesh cannot be read ("" when it can).
  QString meshError() const { return meshError_; }

 signals:
  void refused(const QString& reason);

 private:
  void sync();
  // Validates `axes` as a mesh and writes it (and `rules`, when given) as one edit.
  bool commit(const std::vector<sharding::MeshAxis>& axes, const QString& text, const QString& mergeKey,
              const sharding::LogicalRules* rules = nullptr);

  ProjectDocument* doc_;
  sharding::Mesh mesh_;
  QString meshError_;
};

}  // namespace shardlab::ui
