#include "ui/mesh/mesh_rules_tab.h"

#include <QAbstractScrollArea>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QResizeEvent>
#include <QScrollArea>
#include <QShowEvent>
#include <QSplitter>
#include <QVBoxLayout>

#include "ui/document/project_document.h"
#include "ui/mesh/issues_list.h"
#include "ui/mesh/memory_bars.h"
#include "ui/mesh/mesh_editor.h"
#include "ui/mesh/rules_editor.h"
#include "ui/mesh/spec_model.h"
#include "ui/mesh/spec_table.h"

namespace shardlab::ui {

namespace {

QGroupBox* boxed(const QString& title, QWidget* content, QWidget* parent) {
  auto* box = new QGroupBox(title, parent);
  auto* l = new QVBoxLayout(box);
  l->setContentsMargins(6, 6, 6, 6);
  l->addWidget(content);
  return box;
}

}  // namespace

MeshRulesTab::MeshRulesTab(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  mesh_ = new MeshEditor(doc_, this);
  rules_ = new RulesEditor(doc_, this);
  specs_ = new SpecTable(doc_, this);
  bars_ = new MemoryBars(this);
  bars_->setObjectName("memoryBars");
  issues_ = new IssuesList(doc_, this);
  issues_->setObjectName("issues");

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(boxed(tr("Device mesh"), mesh_, left));
  left->addWidget(boxed(tr("Logical axis rules"), rules_, left));
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 1);

  // The arrays over memory and problems side by side: in a short panel the array list keeps rows
  // enough to read, and the problems stay in view beside the memory bars.
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(boxed(tr("Arrays"), specs_, right));
  auto* below = below_ = new QSplitter(Qt::Horizontal, right);
  memoryBox_ = boxed(tr("Memory per device"), bars_, below);
  below->addWidget(memoryBox_);
  issuesBox_ = boxed(tr("Problems"), issues_, below);
  below->addWidget(issuesBox_);
  below->setStretchFactor(0, 1);
  below->setStretchFactor(1, 1);
  right->addWidget(below);
  right->setStretchFactor(0, 2);
  right->setStretchFactor(1, 1);
  for (QSplitter* s : {left, right, below}) s->setChildrenCollapsible(false);

  // The mesh and the rules scroll on their own when the panel is short or narrow, so the page never
  // needs more room than the arrays and problems: those stay in view.
  auto* leftScroll = new QScrollArea(this);
  leftScroll->setObjectName("meshAndRulesScroll");
  leftScroll->setWidgetResizable(true);
  leftScroll->setFrameShape(QFrame::NoFrame);
  leftScroll->setWidget(left);
  leftScroll->setMinimumWidth(240);

  auto* split = sides_ = new QSplitter(Qt::Horizontal, this);
  split->addWidget(leftScroll);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  connect(doc_, &ProjectDocument::changed, this, &MeshRulesTab::refresh);
  refresh();
}

void MeshRulesTab::refresh() {
  const api::Design& d = doc_->design();
  if (d.sharding_ok) {
    bars_->setMemory(d.sharding.devices, d.device_capacity_bytes);
    memoryBox_->setTitle(tr("Memory per device (mesh %1)").arg(QString::fromStdString(d.sharding.mesh.str())));
  } else {
    bars_->setMemory({}, 0);
    memoryBox_->setTitle(tr("Memory per device"));
  }
  const bool clean = !issues_->errorCount() && !issues_->warningCount();
  issuesBox_->setTitle(clean ? tr("Problems") : tr("Problems: %1").arg(issues_->summary()));
}

namespace {
// Below these panel widths the sides stack, and the memory and problems stack: side by side they
// would need more than the panel and scroll sideways.
constexpr int kSidesMinWidth = 720;
constexpr int kBelowMinWidth = 460;
}  // namespace

void MeshRulesTab::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (!panel_)
    for (QWidget* p = parentWidget(); p; p = p->parentWidget())
      if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
        panel_ = area->viewport();
        panel_->installEventFilter(this);
        break;
      }
  reflow();
}

void MeshRulesTab::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if (!panel_) reflow();
}

bool MeshRulesTab::eventFilter(QObject* watched, QEvent* e) {
  if (watched == panel_ && e->type() == QEvent::Resize) reflow();
  return QWidget::eventFilter(watched, e);
}

void MeshRulesTab::reflow() {
  const int w = panel_ ? panel_->width() : width();
  const bool sideBySide = w >= kSidesMinWidth;
  if (sides_->orientation() != (sideBySide ? Qt::Horizontal : Qt::Vertical)) sides_->setOrientation(sideBySide ? Qt::Horizontal : Qt::Vertical);
  const int right = sideBySide ? w * 3 / 5 : w;
  const Qt::Orientation below = right >= kBelowMinWidth ? Qt::Horizontal : Qt::Vertical;
  if (below_->orientation() != below) below_->setOrientation(below);
}

}  // namespace shardlab::ui
