// Per-device memory as bars, one per device of the mesh, each stacked parameters / optimizer
// state / gradients / activations, against the device's capacity: a line when it is on the scale,
// a label when it is far above it, and a red bar for a device that needs more than it has.
#pragma once

#include <QWidget>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui {

class MemoryBars : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryBars(QWidget* parent = nullptr);

  void setMemory(const std::vector<sharding::DeviceMemory>& devices, double capacityBytes);

  int barCount() const { return int(devices_.size()); }
  double capacity() const { return capacity_; }
  bool overCapacity(int device) const;
  // The full-height slot of a bar, as it is laid out at the current size.
  QRect barRect(int device) const;
  // True when the capacity line is drawn (the capacity is on the same scale as the bars).
  bool capacityOnScale() const;

  QSize sizeHint() const override { return {480, 180}; }
  QSize minimumSizeHint() const override { return {160, 120}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // per-bar tooltips

 private:
  QRect plotArea() const;
  double scaleMax() const;

  std::vector<sharding::DeviceMemory> devices_;
  double capacity_ = 0;
};

}  // namespace shardlab::ui
