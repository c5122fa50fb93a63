#include "ui/inspector/inspector.h"

#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>
#include <set>

#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/inspector/error_marks.h"
#include "ui/inspector/inspector_page.h"
#include "ui/inspector/node_page.h"
#include "ui/inspector/project_page.h"

namespace shardlab::ui {

namespace {

// Nodes of different types share no fields: the page says what is selected and how to edit it.
class MixedPage : public InspectorPage {
 public:
  MixedPage(ProjectDocument* doc, const QStringList& paths, QWidget* parent) : InspectorPage(parent), doc_(doc), paths_(paths) {
    setObjectName("mixedPage");
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(8, 8, 8, 8);
    auto* title = new QLabel(tr("%1 nodes selected").arg(paths.size()), this);
    title->setObjectName("nodeTitle");
    QFont bold = title->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.15);
    title->setFont(bold);
    column->addWidget(title);
    column->addWidget(makeNoteLabel(tr("They are of different types, so they share no fields. Select nodes of one type to "
                                       "edit what they share."),
                                    this));
    list_ = new QLabel(this);
    list_->setObjectName("nodeMembers");
    list_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    column->addWidget(list_);
    column->addStretch(1);
    refresh();
  }

  void refresh() override {
    QStringList lines;
    for (const QString& path : paths_)
      if (const graph::Node* n = edits::find_node(doc_->project(), path.toStdString()))
        lines << QString("%1  (%2)").arg(path, QString::fromStdString(n->type));
    list_->setText(lines.join("\n"));
  }

 private:
  ProjectDocument* doc_;
  QStringList paths_;
  QLabel* list_;
};

}  // namespace

Inspector::Inspector(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  setObjectName("inspector");
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  // The page is never narrower than its minimum (minimumSizeHint below keeps the dock wide enough);
  // should a style make it so, the page scrolls across rather than being cut off.
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  column->addWidget(scroll_);
  connect(doc_, &ProjectDocument::changed, this, &Inspector::sync);
  connect(doc_, &ProjectDocument::selectionChanged, this, &Inspector::sync);
  showPage(wanted());
}

Inspector::Subject Inspector::wanted() const {
  Subject s;
  std::set<std::string> types;
  for (const QString& path : doc_->selection())
    if (const graph::Node* n = edits::find_node(doc_->project(), path.toStdString())) {
      s.paths << path;
      types.insert(n->type);
    }
  if (s.paths.isEmpty()) return s;
  if (types.size() == 1) {
    s.kind = Subject::Kind::Nodes;
    s.type = QString::fromStdString(*types.begin());
  } else {
    s.kind = Subject::Kind::Mixed;
  }
  return s;
}

void Inspector::sync() {
  if (renaming_) return;
  const Subject s = wanted();
  if (page_ && s == shown_) page_->refresh();
  else showPage(s);
}

void Inspector::showPage(const Subject& s) {
  if (page_) {
    // Retired first: an editor losing its focus as the page goes must not commit anything.
    page_->retire();
    scroll_->takeWidget();
    page_->hide();
    page_->deleteLater();
  }
  shown_ = s;
  switch (s.kind) {
    case Subject::Kind::Project: page_ = new ProjectPage(doc_); break;
    case Subject::Kind::Mixed: page_ = new MixedPage(doc_, s.paths, nullptr); break;
    case Subject::Kind::Nodes: {
      auto* page = new NodePage(doc_, s.paths, s.type);
      connect(page, &NodePage::renameRequested, this, [this, page](const QString& name) { rename(page, name); });
      page_ = page;
      break;
    }
  }
  scroll_->setWidget(page_);
  updateGeometry();  // another page, another minimum width
}

QSize Inspector::minimumSizeHint() const {
  const int page = page_ ? page_->minimumSizeHint().width() : 0;
  const int bar = scroll_->verticalScrollBar()->sizeHint().width();
  return {page + bar + 2 * scroll_->frameWidth(), 120};
}

void Inspector::rename(NodePage* page, const QString& newName) {
  if (page != page_ || shown_.paths.size() != 1) return;
  const QString old = shown_.paths.first();
  const std::string parent = edits::parent_of(old.toStdString());
  const QString renamed = parent.empty() ? newName : QString::fromStdString(parent) + "/" + newName;
  QStringList selection = doc_->selection();  // read before the edit drops the old path from it
  renaming_ = true;
  const bool ok = doc_->edit(tr("Rename %1 to %2").arg(old, newName),
                             [&](project::Project& p) { edits::rename_node(p, old.toStdString(), newName.toStdString()); });
  if (ok) {
    // The same node under its new name: keep the page (and the focus in it) and keep it selected.
    for (QString& s : selection)
      if (s == old) s = renamed;
    shown_.paths = {renamed};
    page->setPath(renamed);
    doc_->setSelection(selection);
  }
  renaming_ = false;
  if (ok) sync();
  else page->showNameError(doc_->lastError());
}

}  // namespace shardlab::ui
