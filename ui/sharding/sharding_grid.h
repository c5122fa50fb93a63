// A painted picture of one array's sharding, like jax.debug.visualize_array_sharding: a cell per
// block of the two dimensions drawn, coloured by the set of devices holding it and labelled
// "CPU 0,4", the mesh axes that split the rows and columns on the edges, shard shape and bytes on
// hover. Clicking a cell reports its devices; one device's cell can be outlined.
#pragma once

#include <QWidget>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class ShardingGrid : public QWidget {
  Q_OBJECT

 public:
  struct Cell {
    int64_t row = 0, col = 0;      // block index along the drawn row / column dimension
    std::vector<int64_t> devices;  // every device holding a block of this cell, sorted
    QString label;                 // "CPU 0,4", "CPU 0,4 (processes 0,1)" over processes
  };

  explicit ShardingGrid(QWidget* parent = nullptr);

  // Draws `array` over `mesh` (both copied). `rowDim`/`colDim` pick the dimensions drawn; rank 1 is
  // one row with the dimension across, a scalar one cell. An array with an error draws nothing.
  void setArray(const sharding::ArraySharding& array, const sharding::Mesh& mesh, int rowDim, int colDim);
  void clear();
  // Names the process(es) holding each cell's block, the mesh laid over `processes` processes
  // (shardfmt::processOf); 1, or a count that does not divide the devices, names none.
  void setProcesses(int processes);
  int processes() const { return processes_; }
  bool hasArray() const { return hasArray_; }
  const sharding::ArraySharding& array() const { return array_; }

  // The dimensions drawn by default: those the spec splits first, then the trailing ones, in order.
  static std::pair<int, int> defaultDims(const sharding::ArraySharding& array, const sharding::Mesh& mesh);

  int rowDim() const { return rowDim_; }  // -1 when the array has rank < 2
  int colDim() const { return colDim_; }  // -1 for a scalar
  int64_t rowCount() const { return rows_; }
  int64_t columnCount() const { return cols_; }
  const std::vector<Cell>& cells() const { return cells_; }
  // "" when there is no cell at (row, col).
  QString cellLabel(int64_t row, int64_t col) const;
  // The cell holding `device`'s block, or -1.
  int cellOfDevice(int64_t device) const;
  int cellAt(const QPoint& pos) const;
  QRect cellRect(int cell) const;
  // What hovering the cell shows: its devices, element ranges, shard shape and bytes per device.
  QString cellToolTip(int cell) const;
  QColor cellFill(int cell) const;
  QColor cellTextColor(int cell) const;
  // The edges' captions: "model → · dim 2 (hidden, 1024) in 4 blocks", "not split ↓ · dim 1 ...".
  QString rowCaption() const;
  QString columnCaption() const;
  // A line per dimension not drawn: "dim 0 (layer, 4): each cell holds all of it", or its split.
  QStringList otherDimsNotes() const;

  void setHighlightDevice(int64_t device);  // -1: none
  int64_t highlightDevice() const { return highlight_; }
  int hoveredCell() const { return hovered_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void cellClicked(int cell);

 protected:
  void paintEvent(QPaintEvent* e) override;
  bool event(QEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent* e) override;

 private:
  QRect gridRect() const;
  bool dark() const;
  QSize cellMinimum() const;
  QString dimCaption(int dim, const QString& arrow) const;
  void relabel();

  bool hasArray_ = false;
  sharding::ArraySharding array_;
  sharding::Mesh mesh_;
  int rowDim_ = -1, colDim_ = -1;
  int64_t rows_ = 0, cols_ = 0;
  std::vector<Cell> cells_;
  int processes_ = 1;
  int64_t highlight_ = -1;
  int hovered_ = -1;
};

}  // namespace shardlab::ui
