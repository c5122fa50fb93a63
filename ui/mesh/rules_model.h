// The project's logical axis rules as an ordered, editable table: logical name -> mesh axes
// ("data", "data+model", None). Every change is one undo step through the document; rows can be
// added, removed and moved (by the buttons or by dragging), and a rule naming a mesh axis the mesh
// lacks is kept but flagged.
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <set>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ProjectDocument;

class RulesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { LogicalColumn, MeshColumn, StatusColumn, ColumnCount };
  // True on a row whose rule names a mesh axis that is not in the mesh.
  static constexpr int ProblemRole = Qt::UserRole + 1;
  // The MIME type a dragged rule carries: this model's address and the rows.
  static constexpr const char* kMimeType = "application/x-shardlab-rule-rows";

  explicit RulesModel(ProjectDocument* doc, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

  // New rules name a logical axis the project uses that has no rule yet, and map it to None.
  bool insertRows(int row, int count, const QModelIndex& parent = {}) override;
  bool removeRows(int row, int count, const QModelIndex& parent = {}) override;
  bool moveRows(const QModelIndex& sourceParent, int sourceRow, int count, const QModelIndex& destinationParent,
                int destinationChild) override;

  Qt::DropActions supportedDragActions() const override { return Qt::MoveAction; }
  Qt::DropActions supportedDropActions() const override { return Qt::MoveAction; }
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                       const QModelIndex& parent) const override;
  // Moves the dragged rows before `row` (or before `parent`'s row when dropped on an item).
  bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                    const QModelIndex& parent) override;

  const sharding::LogicalRules& rules() const { return rules_; }
  // Why row `row` is flagged ("" when it is fine).
  QString problem(int row) const;
  // What a rule's mesh axes may be on the current mesh: "None", each axis, each ordered pair.
  QStringList meshAxisChoices() const;

 signals:
  // An edit was not applied; the reason names the field.
  void refused(const QString& reason);

 private:
  void sync();
  bool commit(const sharding::LogicalRules& next, const QString& text);
  QStringList unknownAxes(const sharding::LogicalRule& r) const;
  QList<int> decodeRows(const QMimeData* data) const;

  ProjectDocument* doc_;
  sharding::LogicalRules rules_;
  sharding::Mesh mesh_;
  bool meshOk_ = true;
  std::vector<std::string> usedNames_;        // logical names of the project, in first-use order
  std::map<std::string, int> arraysPerName_;  // how many arrays carry each logical name
};

}  // namespace shardlab::ui
