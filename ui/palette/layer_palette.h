// The layer palette: every layer type the engine offers, grouped by category and searchable.
// Drag a layer onto the canvas to place it there, or double-click it (Enter works too, also from
// the search field for the first match) to add it to the right of the graph, selected.
#pragma once

#include <QPointF>
#include <QWidget>

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace shardlab::ui {

class ProjectDocument;
class LayerModel;

class LayerPalette : public QWidget {
  Q_OBJECT

 public:
  explicit LayerPalette(ProjectDocument* doc, QWidget* parent = nullptr);

  QLineEdit* filterEdit() const { return filter_; }
  QTreeView* view() const { return view_; }
  LayerModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }

  // Adds a `type` node to the top-level graph right of the right-most node and selects it.
  // Returns its path, or empty when the document refused.
  QString addLayer(const QString& type);

 protected:
  bool eventFilter(QObject* watched, QEvent* e) override;

 private:
  void applyFilter(const QString& text);
  void activate(const QModelIndex& proxyIndex);
  QModelIndex firstLayer() const;
  // Where a new node goes so it does not cover the graph: right of its right-most node.
  QPointF spotRightOfGraph() const;

  ProjectDocument* doc_;
  LayerModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QTreeView* view_;
  QLabel* help_;
};

}  // namespace shardlab::ui
