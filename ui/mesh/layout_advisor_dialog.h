// Mesh & Rules > Suggest: the layout advisor's ranked candidates for the open project on N devices
// (memory per device from each partitioned step, whether it fits, predicted step time, what bounds
// it, or why it cannot run), worked out off the UI thread; Apply sets the chosen mesh and rules as
// one undoable edit.
#pragma once

#include <QDialog>
#include <vector>

#include "engine/api/engine.h"

class QLabel;
class QPushButton;
class QComboBox;
class QSpinBox;
class QTableWidget;

namespace shardlab::ui {

class ProjectDocument;

class LayoutAdvisorDialog : public QDialog {
  Q_OBJECT

 public:
  explicit LayoutAdvisorDialog(ProjectDocument* doc, QWidget* parent = nullptr);

  QSpinBox* devicesSpin() const { return devices_; }
  QComboBox* hardwareCombo() const { return hardware_; }
  QPushButton* suggestButton() const { return suggest_; }
  QPushButton* applyButton() const { return apply_; }
  QTableWidget* table() const { return table_; }
  QLabel* statusLabel() const { return status_; }
  QLabel* detailLabel() const { return detail_; }  // the selected layout's rules in full
  const std::vector<advisor::Candidate>& candidates() const { return candidates_; }
  bool busy() const { return busy_; }

  // Ranks the layouts for the spin box's device count (in the background; candidatesReady follows).
  void suggest();
  // Sets the project's mesh and rules (and a pipeline's microbatches) to candidate `row`'s, as one undo
  // step; false if it cannot run.
  bool applyRow(int row);

 signals:
  void candidatesReady();

 private:
  void showCandidates(std::vector<advisor::Candidate> ranked, const QString& error);

  ProjectDocument* doc_;
  QSpinBox* devices_;
  QComboBox* hardware_;
  QPushButton* suggest_;
  QPushButton* apply_;
  QTableWidget* table_;
  QLabel* status_;
  QLabel* detail_;
  std::vector<advisor::Candidate> candidates_;
  bool busy_ = false;
  advisor::SearchSummary search_;  // how the last Suggest's search went
};

}  // namespace shardlab::ui
