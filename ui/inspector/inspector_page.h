// What the inspector shows for one kind of selection (the project, one or more nodes of a type,
// nodes of several types). A page is built once for a selection and then kept up to date in
// place, so editors keep their focus and cursor while the document changes under them.
#pragma once

#include <QWidget>

namespace shardlab::ui {

class InspectorPage : public QWidget {
  Q_OBJECT

 public:
  using QWidget::QWidget;
  // Brings every value, shape and error up to date without rebuilding editors.
  virtual void refresh() = 0;
  // The page is being replaced: from now on it must not edit the document (an editor losing focus
  // as it goes would otherwise commit into whatever is selected next).
  void retire() { retired_ = true; }
  bool retired() const { return retired_; }

 private:
  bool retired_ = false;
};

}  // namespace shardlab::ui
