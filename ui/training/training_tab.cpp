#include "ui/training/training_tab.h"

#include <QLabel>
#include <QVBoxLayout>

namespace shardlab::ui {

TrainingTab::TrainingTab(ProjectDocument*, QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->addWidget(new QLabel("TrainingTab", this));
}

}  // namespace shardlab::ui
