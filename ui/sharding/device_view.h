// The reverse of the grid: pick a device (from a list or the small mesh picture) and see every
// block it holds, one row per array, with its memory by kind and in total (and, with pipeline
// stages, each stage's layers and arena); choosing a row asks for that array to be drawn with this
// device's block outlined.
#pragma once

#include <QColor>
#include <QWidget>
#include <map>
#include <string>
#include <vector>

#include "engine/api/engine.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace shardlab::ui {

class DeviceBlocksModel;
class DevicePicker;

class DeviceView : public QWidget {
  Q_OBJECT

 public:
  explicit DeviceView(QWidget* parent = nullptr);

  // Re-reads the devices and their blocks from a (re)checked design, keeping the device picked
  // when it still exists.
  void refresh(const api::Design& design);
  void setDevice(int64_t device);
  // Labels each device (list, picture, memory line) with its process, the mesh laid over
  // `processes` processes; 1, or a count that does not divide the devices, names none.
  void setProcesses(int processes);
  int processes() const { return processes_; }
  int64_t device() const { return device_; }
  // Tints the mesh picture: one colour per device, the colour of its block in the drawn array.
  void setDeviceColors(std::vector<QColor> colors);

  QComboBox* deviceCombo() const { return combo_; }
  DevicePicker* picker() const { return picker_; }
  QTableView* table() const { return table_; }
  DeviceBlocksModel* blocksModel() const { return model_; }
  QString memorySummary() const;

 signals:
  void deviceChanged(int64_t device);
  // A row was chosen: draw `array` with `device`'s block outlined.
  void arrayActivated(const QString& array, int64_t device);

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void setSummary(const QString& text);
  void keepSummaryWhole();
  void showDevice();
  void fillCombo();
  void activateRow(const QModelIndex& proxyIndex);

  // A copy of what the view shows, so it never reads a design being replaced.
  sharding::ShardingReport report_;
  bool shardingOk_ = false;
  double capacity_ = 0;
  int64_t device_ = 0;
  int processes_ = 1;
  QComboBox* combo_ = nullptr;
  DevicePicker* picker_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;
  DeviceBlocksModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  std::map<std::string, int64_t> copies_;
};

}  // namespace shardlab::ui
