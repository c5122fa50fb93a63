// The Inspector dock: shows and edits whatever the document has selected. Nothing selected: the
// project's settings. One node: its name, fields, error and arrays. Several nodes of one type: the
// fields they share. Several types: what is selected. It follows selectionChanged() and changed(),
// building a page only when the selection (or a selected node's type) changes and otherwise
// updating the page in place, so typing in an editor is never interrupted.
#pragma once

#include <QStringList>
#include <QWidget>

class QScrollArea;

namespace shardlab::ui {

class InspectorPage;
class NodePage;
class ProjectDocument;

class Inspector : public QWidget {
  Q_OBJECT

 public:
  explicit Inspector(ProjectDocument* doc, QWidget* parent = nullptr);

  // The page shown now, and the area that scrolls it when it is taller than the dock.
  InspectorPage* page() const { return page_; }
  QScrollArea* scrollArea() const { return scroll_; }

  // As wide as the page's fields need beside a vertical scroll bar (so a narrow dock never cuts
  // them off at the side), and short: a page taller than the dock scrolls.
  QSize minimumSizeHint() const override;

 private:
  // What a page is built for: kind, node paths and their one type (empty for the others).
  struct Subject {
    enum class Kind { Project, Nodes, Mixed } kind = Kind::Project;
    QStringList paths;
    QString type;
    bool operator==(const Subject&) const = default;
  };
  Subject wanted() const;
  void sync();
  void showPage(const Subject& s);
  void rename(NodePage* page, const QString& newName);

  ProjectDocument* doc_;
  QScrollArea* scroll_;
  InspectorPage* page_ = nullptr;
  Subject shown_;
  bool renaming_ = false;  // the document's signals during a rename are the rename's own
};

}  // namespace shardlab::ui
