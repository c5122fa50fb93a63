// The project page's Data section: where the training data comes from (a Fashion-MNIST folder,
// MNIST-format IDX files, NumPy .npy files or a synthetic set), with folder and file pickers, its
// normalisation, test split and seed, and what the files hold read as a run would read them. Each
// change is one undoable edit of the project's `data`, and the design check re-runs on it. A type
// whose required files are not chosen yet is held here, not written, until they are.
#pragma once

#include <QGroupBox>
#include <QMap>

#include "engine/api/engine.h"
#include "ui/inspector/inspector_page.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QToolButton;

namespace shardlab::ui {

class ProjectDocument;

class DataSection : public QGroupBox {
  Q_OBJECT

 public:
  // Edits stop once `page` is retired (the selection moved on while a field had focus).
  DataSection(ProjectDocument* doc, const InspectorPage* page);
  void refresh();

 private:
  struct Field {
    QLineEdit* edit = nullptr;
    QToolButton* browse = nullptr;  // paths only
    QWidget* row = nullptr;
  };
  void addPathField(const char* key, const QString& label, const char* objectName, bool folder, const QString& tip);
  void addTextField(const char* key, const QString& label, const char* objectName, const QString& placeholder, const QString& tip);
  void typeChosen();
  void browse(const char* key, bool folder);
  // Builds the section's draft from what is shown and writes it when it is complete.
  void commit(const QString& what);
  // The draft for the type shown: the project's own keys where it is that type, the person's
  // changes over them. Throws shardlab::Error naming the field for a value that is not a number.
  graph::Json draft() const;
  void showType(const QString& type);
  void fill(const graph::Json& data);
  QString projectFolder() const;

  ProjectDocument* doc_;
  bool retired() const;
  const InspectorPage* page_;
  bool filling_ = false;
  QString pending_;              // a chosen type whose required fields are missing, or ""
  graph::Json pendingBase_;      // the project's data when that choice was made
  QComboBox* type_;
  QComboBox* kind_;
  QFormLayout* form_;
  QMap<QString, Field> fields_;  // by the key in the project file
  QLabel* found_;
  QLabel* pendingNote_;
  QLabel* error_;
};

}  // namespace shardlab::ui
