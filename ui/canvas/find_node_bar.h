// The canvas's Find Node bar (Edit > Find Node, Ctrl+F): a search field over the canvas whose list
// shows the nodes whose names match what is typed, block nodes by their path ("blocks/W1"), even
// inside a collapsed Repeat. Enter (or a click on a match) picks one; Escape closes the bar.
#pragma once

#include <QFrame>
#include <QStringList>

#include "engine/api/engine.h"

class QLineEdit;
class QListWidget;

namespace shardlab::ui {

class ProjectDocument;

class FindNodeBar : public QFrame {
  Q_OBJECT

 public:
  FindNodeBar(ProjectDocument* doc, QWidget* parent);

  QLineEdit* field() const { return field_; }
  QListWidget* matches() const { return matches_; }

  // Shows the bar with the field focused and its text selected, so typing replaces it.
  void open();

  // Every node's path (blocks' nodes included, not their "@in") that contains `text`, ignoring
  // case: an exact path first, then paths and then names that start with it, then the rest, each
  // group in the project's order. Empty text matches every node.
  static QStringList matchingPaths(const project::Project& p, const QString& text);

 signals:
  // The user picked the node at `path`.
  void picked(const QString& path);

 protected:
  bool eventFilter(QObject* watched, QEvent* e) override;

 private:
  void refill();
  void pickCurrent();

  ProjectDocument* doc_;
  QLineEdit* field_;
  QListWidget* matches_;
};

}  // namespace shardlab::ui
