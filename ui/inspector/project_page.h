// The inspector page when nothing is selected: the project's name and description, its loss (type
// and the node whose output is the prediction), its precision policy (compute and parameter dtypes,
// matmul precision, dynamic loss scaling), its data source (DataSection), and a read-only summary of the design check
// (parameters, FLOPs, memory, errors and warnings).
#pragma once

#include "engine/api/engine.h"
#include "ui/inspector/inspector_page.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace shardlab::ui {

class BoundedTextEdit;
class DataSection;
class ProjectDocument;

class ProjectPage : public InspectorPage {
  Q_OBJECT

 public:
  explicit ProjectPage(ProjectDocument* doc, QWidget* parent = nullptr);
  void refresh() override;

 private:
  void nameEdited(const QString& text);
  void descriptionEdited();
  void lossTypeChosen();
  void lossOutputChosen();
  // One field of the precision section set to `value` (null: removed, its default again).
  void setPrecision(const char* key, const graph::Json& value, const QString& what);
  void refreshSummary();

  ProjectDocument* doc_;
  bool updating_ = false;  // setting the description from the project is not an edit
  QString lastName_;
  QLineEdit* name_;
  QLabel* nameError_;
  BoundedTextEdit* description_;
  QLabel* descriptionError_;
  QComboBox* lossType_;
  QComboBox* lossOutput_;
  QLabel* lossError_;
  QComboBox* dtype_;
  QComboBox* paramDtype_;
  QComboBox* matmulPrecision_;
  QCheckBox* lossScale_;
  DataSection* data_;
  QLabel* summary_;
  QLabel* errors_;
};

}  // namespace shardlab::ui
