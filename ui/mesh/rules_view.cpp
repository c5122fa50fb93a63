#include "ui/mesh/rules_view.h"

#include <QDropEvent>
#include <QHeaderView>

namespace shardlab::ui {

RulesView::RulesView(QWidget* parent) : QTableView(parent) {
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setDragEnabled(true);
  setAcceptDrops(true);
  setDropIndicatorShown(true);
  setDragDropMode(QAbstractItemView::InternalMove);
  setDefaultDropAction(Qt::MoveAction);
  setDragDropOverwriteMode(false);  // drops go between rows, never onto one
}

int RulesView::dropRow(const QPoint& pos) const {
  if (!model()) return 0;
  const QModelIndex at = indexAt(pos);
  if (!at.isValid()) return pos.y() < 0 ? 0 : model()->rowCount();
  const QRect r = visualRect(at);
  return pos.y() > r.center().y() ? at.row() + 1 : at.row();
}

bool RulesView::carriesOwnRows(const QDropEvent* event) const {
  return model() && model()->canDropMimeData(event->mimeData(), Qt::MoveAction, -1, -1, {});
}

// The base class accepts an internal move only when the drag's source is this view. The model's
// own row data (which names the model) says the same, and holds for drag events that do not come
// from a QDrag too, as a test sends them.
void RulesView::dragEnterEvent(QDragEnterEvent* event) {
  QTableView::dragEnterEvent(event);
  if (carriesOwnRows(event)) {
    event->setDropAction(Qt::MoveAction);
    event->accept();
    setState(DraggingState);
  }
}

void RulesView::dragMoveEvent(QDragMoveEvent* event) {
  QTableView::dragMoveEvent(event);  // drop indicator and auto-scroll
  if (carriesOwnRows(event)) {
    event->setDropAction(Qt::MoveAction);
    event->accept();
  } else {
    event->ignore();
  }
}

void RulesView::dropEvent(QDropEvent* event) {
  if (!carriesOwnRows(event)) {
    event->ignore();
    return;
  }
  const int row = dropRow(event->position().toPoint());
  if (model()->dropMimeData(event->mimeData(), Qt::MoveAction, row, 0, {})) {
    // The model has moved the rows; reporting a move back to the drag would make the view remove
    // the source rows a second time.
    event->setDropAction(Qt::IgnoreAction);
    event->accept();
  } else {
    event->ignore();
  }
  setState(NoState);
  viewport()->update();
}

}  // namespace shardlab::ui
