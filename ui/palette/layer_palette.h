// PLACEHOLDER: replaced by the real LayerPalette.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class ProjectDocument;

class LayerPalette : public QWidget {
  Q_OBJECT

 public:
  explicit LayerPalette(ProjectDocument* doc, QWidget* parent = nullptr);
};

}  // namespace shardlab::ui
