#include "ui/canvas/graph_view.h"

namespace shardlab::ui {

GraphView::GraphView(ProjectDocument*, QWidget* parent) : QGraphicsView(parent) {}
void GraphView::zoomIn() {}
void GraphView::zoomOut() {}
void GraphView::zoomToFit() {}
void GraphView::selectAll() {}
void GraphView::autoLayout() {}

}  // namespace shardlab::ui
