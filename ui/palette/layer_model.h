// The layer types as a two-level item model for the palette: groups (the catalog's categories, in
// the order they first appear) holding their layer types. Layer rows drag as the layer mime type;
// each row's tooltip is its summary, and a search role joins what a filter should match.
#pragma once

#include <QAbstractItemModel>
#include <QStringList>
#include <QVector>

namespace shardlab::ui {

class LayerModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Role {
    TypeRole = Qt::UserRole + 1,  // "Dense" on layer rows, empty on group rows
    SearchRole,                   // type, category and summary: what the palette's filter matches
  };

  explicit LayerModel(QObject* parent = nullptr);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  Qt::DropActions supportedDragActions() const override { return Qt::CopyAction; }

  // The layer row of `type`, or an invalid index.
  QModelIndex indexOf(const QString& type) const;

 private:
  struct Layer {
    QString type, summary;
    QStringList inputs;
  };
  struct Group {
    QString name;
    QVector<Layer> layers;
  };
  QVector<Group> groups_;
};

}  // namespace shardlab::ui
