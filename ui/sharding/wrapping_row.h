// A row of widgets that wraps onto further lines where its width does not hold them all (the
// Sharding tab's Rows and Columns pickers): a narrow panel gets two short lines instead of a page
// wider than itself.
#pragma once

#include <QLayout>
#include <vector>

namespace shardlab::ui {

class WrappingRow : public QLayout {
 public:
  explicit WrappingRow(QWidget* parent = nullptr, int spacing = 12);
  ~WrappingRow() override;

  void addItem(QLayoutItem* item) override;
  int count() const override { return int(items_.size()); }
  QLayoutItem* itemAt(int index) const override;
  QLayoutItem* takeAt(int index) override;

  Qt::Orientations expandingDirections() const override { return {}; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  // As narrow as its widest item: one item to a line.
  QSize minimumSize() const override;
  // Every item on one line.
  QSize sizeHint() const override;
  void setGeometry(const QRect& rect) override;

 private:
  // Places the items left to right in `rect`, a new line whenever the next does not fit; the
  // height used. Only measures when `apply` is false.
  int arrange(const QRect& rect, bool apply) const;

  std::vector<QLayoutItem*> items_;
  int gap_;
};

}  // namespace shardlab::ui
