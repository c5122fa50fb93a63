// Help > User Guide: the README's "Using the desktop application" and "Using the command line"
// sections, read from the README compiled into the program (ui/help/readme_text.h), so the guide
// is the README's own words in an installed package too and cannot drift from it.
#pragma once

#include <QDialog>
#include <QStringList>

class QTextBrowser;

namespace shardlab::ui {

// The README sections the guide shows, by their headings.
QStringList userGuideSections();
// Those sections (each with its sub-sections) as Markdown, in that order; a section missing from
// `readme` is left out.
QString extractSections(const QString& readme, const QStringList& headings);
// The guide's Markdown from the compiled-in README.
QString userGuideMarkdown();

class UserGuideDialog : public QDialog {
  Q_OBJECT

 public:
  explicit UserGuideDialog(QWidget* parent = nullptr);

  QTextBrowser* browser() const { return browser_; }

 private:
  QTextBrowser* browser_;
};

}  // namespace shardlab::ui
