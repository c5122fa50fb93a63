// The inspector page for selected nodes. One node: its name (renamed through the inspector), type,
// a form of its layer's fields, the design check's error for it, and its arrays (ShapesSection).
// Several nodes of one type: the fields they share, a field whose values differ shown as
// "(mixed)"; an edit sets it on all of them as one undo step.
#pragma once

#include <QList>
#include <QStringList>

#include "ui/inspector/inspector_page.h"

class QLabel;
class QLineEdit;

namespace shardlab::ui {

class FieldEditor;
class ProjectDocument;
class ShapesSection;

class NodePage : public InspectorPage {
  Q_OBJECT

 public:
  NodePage(ProjectDocument* doc, const QStringList& paths, const QString& type, QWidget* parent = nullptr);

  void refresh() override;
  // After the node was renamed: follow it under its new path (one node only).
  void setPath(const QString& path);
  void showNameError(const QString& error);

 signals:
  // The person finished typing a valid, free name for the (single) node.
  void renameRequested(const QString& newName);

 private:
  void buildHeader();
  void buildFields();
  void applyField(FieldEditor* editor);
  void applyParamAxes(const QString& param, const QStringList& names);
  void applyOutputAxes(const QStringList& names);
  // Why `name` cannot be the node's name, or empty when it can.
  QString nameProblem(const QString& name) const;
  void nameEditingFinished();
  // Shows a refused edit's reason until the next refresh.
  void showRefusal();

  ProjectDocument* doc_;
  QStringList paths_;
  QString type_;
  QLabel* title_ = nullptr;
  QLabel* members_ = nullptr;  // several nodes: their names
  QLineEdit* name_ = nullptr;
  QLabel* nameError_ = nullptr;
  QLabel* nodeError_ = nullptr;
  QList<FieldEditor*> fields_;
  ShapesSection* shapes_ = nullptr;
};

}  // namespace shardlab::ui
