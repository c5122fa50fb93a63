// A word-wrapped label asks its layout for one line's height, so a short splitter pane cuts its
// later lines off. Held to the height its text needs at its width, the pane scrolls instead.
#pragma once

#include <QLabel>

namespace shardlab::ui {

// Call when the label's text or width changes. (QLabel::heightForWidth is at least the label's
// minimum height, so the old minimum is cleared before measuring.)
inline void holdWrappedHeight(QLabel* label) {
  if (label->width() <= 0) return;
  label->setMinimumHeight(0);
  label->setMinimumHeight(label->text().isEmpty() ? 0 : label->heightForWidth(label->width()));
}

}  // namespace shardlab::ui
