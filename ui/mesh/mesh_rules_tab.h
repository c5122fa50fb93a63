// PLACEHOLDER: replaced by the real MeshRulesTab.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class ProjectDocument;

class MeshRulesTab : public QWidget {
  Q_OBJECT

 public:
  explicit MeshRulesTab(ProjectDocument* doc, QWidget* parent = nullptr);
};

}  // namespace shardlab::ui
