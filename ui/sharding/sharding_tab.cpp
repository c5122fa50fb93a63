#include "ui/sharding/sharding_tab.h"

#include <QLabel>
#include <QVBoxLayout>

namespace shardlab::ui {

ShardingTab::ShardingTab(ProjectDocument*, QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->addWidget(new QLabel("ShardingTab", this));
}

}  // namespace shardlab::ui
