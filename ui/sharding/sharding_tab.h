// PLACEHOLDER: replaced by the real ShardingTab.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class ProjectDocument;

class ShardingTab : public QWidget {
  Q_OBJECT

 public:
  explicit ShardingTab(ProjectDocument* doc, QWidget* parent = nullptr);
};

}  // namespace shardlab::ui
