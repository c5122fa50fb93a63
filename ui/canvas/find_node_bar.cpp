#include "ui/canvas/find_node_bar.h"

#include <QKeyEvent>
#include <QLineEdit>
#include <QListWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

#include "ui/document/project_document.h"

namespace shardlab::ui {

namespace {

constexpr int kShownRows = 8;

}  // namespace

FindNodeBar::FindNodeBar(ProjectDocument* doc, QWidget* parent)
    : QFrame(parent), doc_(doc), field_(new QLineEdit(this)), matches_(new QListWidget(this)) {
  setObjectName("findNodeBar");
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(4, 4, 4, 4);
  box->setSpacing(2);
  field_->setObjectName("findNodeField");
  field_->setPlaceholderText(tr("Find node (e.g. dense1 or blocks/W1)"));
  field_->setClearButtonEnabled(true);
  field_->installEventFilter(this);
  matches_->setObjectName("findNodeMatches");
  matches_->setFocusPolicy(Qt::NoFocus);  // the keys stay in the field
  matches_->setUniformItemSizes(true);
  box->addWidget(field_);
  box->addWidget(matches_);
  setFixedWidth(300);
  connect(field_, &QLineEdit::textChanged, this, &FindNodeBar::refill);
  connect(matches_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    matches_->setCurrentItem(item);
    pickCurrent();
  });
  // Another project, or an edit that renames or removes nodes, changes what there is to find.
  connect(doc_, &ProjectDocument::changed, this, [this] {
    if (isVisible()) refill();
  });
  hide();
}

QStringList FindNodeBar::matchingPaths(const project::Project& p, const QString& text) {
  const QString want = text.trimmed();
  QStringList exact, pathStart, nameStart, inside;
  std::function<void(const graph::Graph&, const QString&)> walk = [&](const graph::Graph& g, const QString& parent) {
    for (const graph::Node& n : g.nodes) {
      const QString name = QString::fromStdString(n.name);
      const QString path = parent.isEmpty() ? name : parent + "/" + name;
      if (path.compare(want, Qt::CaseInsensitive) == 0) exact << path;
      else if (path.startsWith(want, Qt::CaseInsensitive)) pathStart << path;
      else if (name.startsWith(want, Qt::CaseInsensitive)) nameStart << path;
      else if (path.contains(want, Qt::CaseInsensitive)) inside << path;
      if (n.body) walk(*n.body, path);
    }
  };
  walk(p.graph, QString());
  return exact + pathStart + nameStart + inside;
}

void FindNodeBar::open() {
  refill();
  show();
  raise();
  field_->setFocus(Qt::ShortcutFocusReason);
  field_->selectAll();
}

void FindNodeBar::refill() {
  matches_->clear();
  const QStringList paths = matchingPaths(doc_->project(), field_->text());
  matches_->addItems(paths);
  if (!paths.isEmpty()) matches_->setCurrentRow(0);
  // As tall as the matches, up to a few rows; none shown when nothing matches.
  const int rows = std::min<int>(int(paths.size()), kShownRows);
  matches_->setVisible(rows > 0);
  matches_->setFixedHeight(rows * matches_->sizeHintForRow(0) + 2 * matches_->frameWidth());
  adjustSize();
}

void FindNodeBar::pickCurrent() {
  QListWidgetItem* item = matches_->currentItem();
  if (!item) return;
  emit picked(item->text());
}

bool FindNodeBar::eventFilter(QObject* watched, QEvent* e) {
  if (watched == field_ && e->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(e);
    switch (key->key()) {
      case Qt::Key_Down:
      case Qt::Key_Up: {
        const int step = key->key() == Qt::Key_Down ? 1 : -1;
        const int row = std::clamp(matches_->currentRow() + step, 0, matches_->count() - 1);
        if (matches_->count() > 0) matches_->setCurrentRow(row);
        return true;
      }
      case Qt::Key_Return:
      case Qt::Key_Enter:
        pickCurrent();
        return true;
      case Qt::Key_Escape:
        hide();
        if (parentWidget()) parentWidget()->setFocus();
        return true;
      default:
        break;
    }
  }
  return QFrame::eventFilter(watched, e);
}

}  // namespace shardlab::ui
