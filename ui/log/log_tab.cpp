#include "ui/log/log_tab.h"

#include <QTime>

#include "ui/document/project_document.h"

namespace shardlab::ui {

LogTab::LogTab(ProjectDocument* doc, QWidget* parent) : QPlainTextEdit(parent), doc_(doc) {
  setObjectName("log");
  setReadOnly(true);
  setMaximumBlockCount(5000);
  setFont(QFont("monospace"));
  connect(doc, &ProjectDocument::message, this, &LogTab::append);
  connect(doc, &ProjectDocument::changed, this, &LogTab::designChecked);
}

void LogTab::append(const QString& level, const QString& text) {
  appendPlainText(QString("%1  %2  %3").arg(QTime::currentTime().toString("HH:mm:ss"), level.leftJustified(7), text));
}

void LogTab::designChecked() {
  QStringList problems;
  for (const std::string& e : doc_->design().errors) problems << "error: " + QString::fromStdString(e);
  for (const std::string& w : doc_->design().warnings) problems << "warning: " + QString::fromStdString(w);
  if (problems == lastProblems_) return;
  // Only what is new since the last check: a long session stays readable.
  for (const QString& p : problems)
    if (!lastProblems_.contains(p)) append(p.startsWith("error") ? "error" : "warning", p.section(": ", 1));
  lastProblems_ = problems;
}

}  // namespace shardlab::ui
