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
  auto add = [this](const std::string& text, QStyle::StandardPixmap icon, const QString& kind) {
    auto* item = new QListWidgetItem(style()->standardIcon(icon), QString::fromStdString(text), this);
    item->setToolTip(QString::fromStdString(text));
    item->setData(Qt::UserRole, kind);
  };
  for (const std::string& e : d.errors) add(e, QStyle::SP_MessageBoxCritical, QStringLiteral("error"));
  for (const std::string& w : d.warnings) add(w, QStyle::SP_MessageBoxWarning, QStringLiteral("warning"));
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
