// A small picture of the device mesh (first axis down, the rest across, devices in the mesh's
// row-major order), each device tinted with the colour of its block in the array being drawn;
// clicking a device picks it.
#pragma once

#include <QColor>
#include <QWidget>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class DevicePicker : public QWidget {
  Q_OBJECT

 public:
  explicit DevicePicker(QWidget* parent = nullptr);

  void setMesh(const sharding::Mesh& mesh);
  // The mesh laid over this many processes: each device's tooltip names its process.
  void setProcesses(int processes) { processes_ = processes; }
  // What hovering a device shows: "Device 3 (data 1, model 1) — process 1".
  QString deviceToolTip(int64_t device) const;
  void setCurrent(int64_t device);
  int64_t current() const { return current_; }
  // One colour per device (the colour of its cell in the grid); empty for none.
  void setColors(std::vector<QColor> colors);
  QRect deviceRect(int64_t device) const;
  int64_t deviceAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return sizeHint(); }

 signals:
  void deviceClicked(int64_t device);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  bool event(QEvent* e) override;

 private:
  int64_t rows() const;
  int64_t cols() const;
  QSize cellSize() const;

  sharding::Mesh mesh_;
  int64_t current_ = 0;
  int processes_ = 1;
  std::vector<QColor> colors_;
};

}  // namespace shardlab::ui
