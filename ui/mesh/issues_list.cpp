#include "ui/mesh/issues_list.h"

#include <QStyle>

#include "ui/document/project_document.h"
#include "ui/mesh/format.h"

namespace shardlab::ui {

IssuesList::IssuesList(ProjectDocument* doc, QWidget* parent) : QListWidget(parent), doc_(doc) {
  setWordWrap(true);
  setTextElideMode(Qt::ElideNone);
  setUniformItemSizes(false);
  setSelectionMode(QAbstractItemView::SingleSelection);
  connect(doc_, &ProjectDocument::changed, this, &IssuesList::refresh);
  refresh();
}

QString IssuesList::summary() const {
  if (!errors_ && !warnings_) return tr("no problems");
  QStringList parts;
  if (errors_) parts << counted(errors_, tr("error"), tr("errors"));
  if (warnings_) parts << counted(warnings_, tr("warning"), tr("warnings"));
  return parts.join(QStringLiteral(", "));
}

void IssuesList::refresh() {
  const api::Design& d = doc_->design();
  clear();
  errors_ = int(d.errors.size());
  warnings_ = int(d.warnings.size());
  // Each problem's sentence, then what would fix it; its code and nodes ride along as data.
  for (const Diagnostic& x : d.diagnostics) {
    const bool error = x.severity == Severity::Error;
    QString text = QString::fromStdString(x.message);
    if (!x.fix.empty()) text += "\n" + tr("Fix: %1").arg(QString::fromStdString(x.fix));
    auto* item = new QListWidgetItem(style()->standardIcon(error ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxWarning),
                                     text, this);
    item->setToolTip(text);
    item->setData(Qt::UserRole, error ? QStringLiteral("error") : QStringLiteral("warning"));
    item->setData(CodeRole, QString::fromStdString(x.code));
    QStringList nodes;
    for (const std::string& n : x.nodes) nodes << QString::fromStdString(n);
    item->setData(NodesRole, nodes);
  }
  if (!errors_ && !warnings_) {
    auto* item = new QListWidgetItem(
        style()->standardIcon(QStyle::SP_DialogApplyButton),
        tr("No problems: every array splits evenly over the mesh and the step fits in memory"), this);
    item->setFlags(Qt::ItemIsEnabled);
    item->setData(Qt::UserRole, QStringLiteral("ok"));
  }
  emit summaryChanged(summary());
}

}  // namespace shardlab::ui
