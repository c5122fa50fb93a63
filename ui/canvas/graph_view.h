// PLACEHOLDER: replaced by the real GraphView.
#pragma once

#include <QGraphicsView>

namespace shardlab::ui {

class ProjectDocument;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(ProjectDocument* doc, QWidget* parent = nullptr);

 public slots:
  void zoomIn();
  void zoomOut();
  void zoomToFit();
  void selectAll();
  void autoLayout();
};

}  // namespace shardlab::ui
