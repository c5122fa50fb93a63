#include "ui/inspector/inspector.h"

#include <QLabel>
#include <QVBoxLayout>

namespace shardlab::ui {

Inspector::Inspector(ProjectDocument*, QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->addWidget(new QLabel("Inspector", this));
}

}  // namespace shardlab::ui
