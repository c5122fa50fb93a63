// The rules half of the tab: the ordered rules table with add/remove/up/down, the presets menu
// (each preset one undo step), the constraint fallback, and the reason an edit was refused.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QToolButton;

namespace shardlab::ui {

class ProjectDocument;
class LayoutAdvisorDialog;
class RulesModel;
class RulesView;

class RulesEditor : public QWidget {
  Q_OBJECT

 public:
  explicit RulesEditor(ProjectDocument* doc, QWidget* parent = nullptr);

  RulesModel* model() const { return model_; }
  RulesView* view() const { return view_; }
  QToolButton* presetsButton() const { return presets_; }
  QPushButton* suggestButton() const { return suggest_; }
  // The layout advisor's dialog, made on first use of Suggest (null before).
  LayoutAdvisorDialog* advisorDialog() const { return advisor_; }
  QComboBox* fallbackCombo() const { return fallback_; }
  QLabel* errorLabel() const { return error_; }
  QPushButton* addButton() const { return add_; }
  QPushButton* removeButton() const { return remove_; }
  QPushButton* upButton() const { return up_; }
  QPushButton* downButton() const { return down_; }

  // Replaces the rules (and the mesh, where the preset needs it) with preset `id`, as one undo step.
  bool applyPreset(const QString& id);

 private:
  void refresh();
  void showError(const QString& reason);
  void moveCurrent(int delta);

  ProjectDocument* doc_;
  RulesModel* model_;
  RulesView* view_;
  QToolButton* presets_;
  QPushButton* suggest_;
  LayoutAdvisorDialog* advisor_ = nullptr;
  QComboBox* fallback_;
  QLabel* error_;
  QPushButton* add_;
  QPushButton* remove_;
  QPushButton* up_;
  QPushButton* down_;
};

}  // namespace shardlab::ui
