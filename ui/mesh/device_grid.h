// The mesh's devices drawn as a grid of cells: rows along the first mesh axis, columns along the
// second (any further axes flattened into the columns), numbered row-major as jax's
// create_device_mesh numbers them, with the axis names and coordinates on the edges.
#pragma once

#include <QWidget>

#include "engine/api/engine.h"

namespace shardlab::ui {

class DeviceGrid : public QWidget {
  Q_OBJECT

 public:
  explicit DeviceGrid(QWidget* parent = nullptr);

  void setMesh(const sharding::Mesh& mesh);
  const sharding::Mesh& mesh() const { return mesh_; }

  int deviceCount() const { return int(mesh_.device_count()); }
  int rows() const;
  int columns() const;
  // The device in a cell (row-major), and the cell's rectangle as last painted or laid out.
  int deviceAt(int row, int column) const { return row * columns() + column; }
  QRect cellRect(int device) const;

  // The bold captions on the edges: the column axes (or the device count) above the grid, and the
  // row axis down its left side (its rectangle as if unrotated: its width runs along the grid's
  // height). Each is at least as long as its text, within the widget, so no caption is clipped.
  QFont captionFont() const;
  QString columnCaption() const;
  QRect columnCaptionRect() const;
  QString rowCaption() const { return rowLabel(); }
  int rowCaptionLength() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // per-cell tooltips

 private:
  struct Geometry {
    QRect grid;  // the cells' area
    int cell = 0;
  };
  Geometry geometry() const;
  QString rowLabel() const;
  QString columnLabel() const;

  sharding::Mesh mesh_;
};

}  // namespace shardlab::ui
