// The Sharding tab: every array of the project in a filterable tree, the chosen one drawn as a
// grid of blocks coloured and labelled by the devices holding them (a visual
// jax.debug.visualize_array_sharding), and the reverse view of one device's blocks and memory.
// It follows the document: redrawn after every change, and showing whatever array another view
// asks for with requestArray().
#pragma once

#include <QString>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QSpinBox;
class QStackedWidget;
class QTreeView;

namespace shardlab::ui {

class ArrayTreeModel;
class DeviceView;
class ProjectDocument;
class ShardingGrid;

class ShardingTab : public QWidget {
  Q_OBJECT

 public:
  explicit ShardingTab(ProjectDocument* doc, QWidget* parent = nullptr);

  // Selects the array in the tree (clearing a filter that hides it) and draws it. False, with a
  // message in the heading, when the project has no such array.
  bool showArray(const QString& name);
  QString currentArray() const { return current_; }

  QLineEdit* filterEdit() const { return filter_; }
  QTreeView* tree() const { return tree_; }
  ArrayTreeModel* arrayModel() const { return model_; }
  ShardingGrid* grid() const { return grid_; }
  QComboBox* rowDimCombo() const { return rowCombo_; }
  QComboBox* columnDimCombo() const { return colCombo_; }
  DeviceView* deviceView() const { return devices_; }
  // How many processes the mesh is laid over (as mpirun -np K), to see which holds each block.
  QSpinBox* processesSpin() const { return processes_; }
  // The processes the views label: the spin box's value, or 1 when it does not divide the devices.
  int effectiveProcesses() const;
  // Why the processes are not shown ("" when they are, or K is 1).
  QString processesMessageText() const;
  // The legend above the grid: name and kind, then shape, logical axes, spec, shard shape, bytes.
  QString headingText() const;
  // Dimensions not drawn, one line each; empty for rank <= 2.
  QString notesText() const;
  // The array's error shown instead of a grid ("" when it draws), and the project-wide banner.
  QString arrayErrorText() const;
  QString bannerText() const;

 protected:
  void changeEvent(QEvent* e) override;
  // A wrapped text or the pickers' row got a new width: fitWrappedText.
  bool eventFilter(QObject* watched, QEvent* e) override;

 private:
  void rebuild();
  // Wrapped text and the wrapping pickers ask their layout for one line's height, so a short pane
  // cut their lines or squeezed the drawing to nothing: each is held to its height at its width.
  void fitWrappedText();
  // Makes `name` the tree's current row without treating it as the user's pick.
  void selectInTree(const QString& name);
  void onTreeSelection();
  void draw(const QString& name, int rowDim, int colDim);
  void fillDimCombos(int rank);
  void onDimPicked(bool rows, int dim);
  void updateDeviceColors();
  void applyProcesses();

  ProjectDocument* doc_;
  ArrayTreeModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QTreeView* tree_ = nullptr;
  QLabel* banner_ = nullptr;
  QSpinBox* processes_ = nullptr;
  QLabel* processesMessage_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* details_ = nullptr;
  QWidget* dimsRow_ = nullptr;
  QComboBox* rowCombo_ = nullptr;
  QComboBox* colCombo_ = nullptr;
  QLabel* notes_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  ShardingGrid* grid_ = nullptr;
  QLabel* error_ = nullptr;
  DeviceView* devices_ = nullptr;
  QString current_;
  bool selecting_ = false;
  int rowDim_ = -1, colDim_ = -1;
};

}  // namespace shardlab::ui
