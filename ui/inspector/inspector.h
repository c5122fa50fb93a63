// PLACEHOLDER: replaced by the real Inspector.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class ProjectDocument;

class Inspector : public QWidget {
  Q_OBJECT

 public:
  explicit Inspector(ProjectDocument* doc, QWidget* parent = nullptr);
};

}  // namespace shardlab::ui
