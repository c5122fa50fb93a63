// The rules table's view: rows reorder by dragging them. The drop asks the model to move the rows
// (one undo step) instead of Qt's default insert-a-copy-then-remove-the-original, which would be
// two edits and would briefly duplicate a rule.
#pragma once

#include <QTableView>

namespace shardlab::ui {

class RulesView : public QTableView {
  Q_OBJECT

 public:
  explicit RulesView(QWidget* parent = nullptr);

  // The row a drop at `pos` (viewport coordinates) moves rows in front of: the row under the
  // cursor, or the one after it in the lower half, or the end below the last row.
  int dropRow(const QPoint& pos) const;

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  bool carriesOwnRows(const QDropEvent* event) const;
};

}  // namespace shardlab::ui
