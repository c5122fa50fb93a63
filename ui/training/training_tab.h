// PLACEHOLDER: replaced by the real TrainingTab.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class ProjectDocument;

class TrainingTab : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingTab(ProjectDocument* doc, QWidget* parent = nullptr);
};

}  // namespace shardlab::ui
