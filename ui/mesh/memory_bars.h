// Per-device memory as bars, one per device of the mesh, each stacked parameters / optimizer
// state / gradients / activations, on a byte scale that always reaches the device's capacity (a
// dashed line): a design using a sliver of a device draws a sliver, and a device that needs more
// than it has draws a red bar past the line.
#pragma once

#include <QList>
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
  // The plotted part of a bar (its total against the scale) in pixels, from the slot's bottom.
  int barLength(int device) const;
  // The byte scale: its top, and the values of its labelled ticks (0 first, the top last).
  double scaleMax() const;
  QList<double> ticks() const;
  // The ticks that carry a label: from the top down, each whose label would not overlap one
  // above it (a short chart keeps its top value and drops "0 B" rather than draw one over the other).
  QList<double> labelledTicks() const;
  // Those labels as drawn, in the engine's byte format ("512.00 MiB").
  QStringList tickLabels() const;
  // The capacity line's height in pixels above the bars' bottom; -1 without a capacity, or where
  // the most any device uses is under a twentieth of it: the scale then reaches the largest bar
  // (3.6 MiB of 50 GiB would draw bars a pixel high) and the caption says the capacity.
  int capacityLevel() const;

  QSize sizeHint() const override { return {480, 200}; }
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // per-bar tooltips

 private:
  QRect plotArea() const;
  double tickStep() const;
  double used() const;            // the most any device holds
  bool capacityOnScale() const;   // the capacity is drawn (see capacityLevel)
  double scaleTop() const;        // what the scale must reach
  int lengthOf(double bytes) const;

  std::vector<sharding::DeviceMemory> devices_;
  double capacity_ = 0;
};

}  // namespace shardlab::ui
