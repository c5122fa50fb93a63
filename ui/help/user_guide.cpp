#include "ui/help/user_guide.h"

#include <QDialogButtonBox>
#include <QRegularExpression>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "ui/help/readme_text.h"

namespace shardlab::ui {

QStringList userGuideSections() {
  return {QStringLiteral("Using the desktop application"), QStringLiteral("Using the command line")};
}

QString extractSections(const QString& readme, const QStringList& headings) {
  const QStringList lines = readme.split('\n');
  static const QRegularExpression heading(QStringLiteral("^(#{1,6})\\s+(.*?)\\s*$"));
  QStringList sections;
  for (const QString& wanted : headings) {
    QStringList section;
    qsizetype level = 0;
    bool fenced = false;  // a '#' inside a code block is a shell comment, not a heading
    for (const QString& line : lines) {
      if (line.trimmed().startsWith(QStringLiteral("```"))) fenced = !fenced;
      const QRegularExpressionMatch m = fenced ? QRegularExpressionMatch() : heading.match(line);
      if (level == 0) {
        if (m.hasMatch() && m.captured(2) == wanted) {
          level = m.captured(1).size();
          section << line;
        }
        continue;
      }
      // A section runs to the next heading of its level or above.
      if (m.hasMatch() && m.captured(1).size() <= level) break;
      section << line;
    }
    if (!section.isEmpty()) sections << section.join('\n').trimmed();
  }
  return sections.join(QStringLiteral("\n\n"));
}

QString userGuideMarkdown() { return extractSections(QString::fromUtf8(readmeMarkdown()), userGuideSections()); }

UserGuideDialog::UserGuideDialog(QWidget* parent) : QDialog(parent) {
  setObjectName("userGuideDialog");
  setWindowTitle(tr("Shardlab User Guide"));
  browser_ = new QTextBrowser(this);
  browser_->setObjectName("userGuide");
  browser_->setOpenExternalLinks(true);
  const QString guide = userGuideMarkdown();
  if (guide.isEmpty()) browser_->setPlainText(tr("The user guide is missing from this build (its README.md lacks the usage sections)."));
  else browser_->setMarkdown(guide);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(browser_);
  layout->addWidget(buttons);
  resize(860, 720);
}

}  // namespace shardlab::ui
