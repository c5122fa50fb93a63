#include "ui/mesh/mesh_rules_tab.h"

#include <QLabel>
#include <QVBoxLayout>

namespace shardlab::ui {

MeshRulesTab::MeshRulesTab(ProjectDocument*, QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->addWidget(new QLabel("MeshRulesTab", this));
}

}  // namespace shardlab::ui
