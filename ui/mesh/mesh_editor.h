// The mesh half of the tab: the device kind, the axes table (names editable in place, sizes as
// always-open spin boxes), add/remove axis buttons, the device count, the reason an edit was
// refused, and the device grid.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace shardlab::ui {

class DeviceGrid;
class MeshAxesModel;
class ProjectDocument;

class MeshEditor : public QWidget {
  Q_OBJECT

 public:
  explicit MeshEditor(ProjectDocument* doc, QWidget* parent = nullptr);

  MeshAxesModel* model() const { return model_; }
  QTableView* axesView() const { return view_; }
  DeviceGrid* deviceGrid() const { return grid_; }
  QComboBox* deviceKind() const { return kind_; }
  QLabel* deviceCountLabel() const { return count_; }
  QLabel* errorLabel() const { return error_; }
  QPushButton* addButton() const { return add_; }
  QPushButton* removeButton() const { return remove_; }

 private:
  void refresh();
  void showError(const QString& reason);
  void openSizeEditors();

  ProjectDocument* doc_;
  MeshAxesModel* model_;
  QTableView* view_;
  QComboBox* kind_;
  QLabel* count_;
  QLabel* error_;
  QPushButton* add_;
  QPushButton* remove_;
  DeviceGrid* grid_;
};

}  // namespace shardlab::ui
