#include "ui/palette/layer_palette.h"

#include <QLabel>
#include <QVBoxLayout>

namespace shardlab::ui {

LayerPalette::LayerPalette(ProjectDocument*, QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->addWidget(new QLabel("LayerPalette", this));
}

}  // namespace shardlab::ui
