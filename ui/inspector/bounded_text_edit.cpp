#include "ui/inspector/bounded_text_edit.h"

#include <algorithm>

#include <QMimeData>
#include <QTextCursor>

namespace shardlab::ui {

namespace {

// An unbroken run longer than this is laid out breaking anywhere: by word boundaries, 64 KiB of it
// took a second; prose keeps its words whole.
constexpr qsizetype kLongRun = 200;

qsizetype longestRun(const QString& text) {
  qsizetype run = 0, longest = 0;
  for (const QChar c : text) longest = std::max(longest, run = c.isSpace() ? 0 : run + 1);
  return longest;
}

}  // namespace

BoundedTextEdit::BoundedTextEdit(qsizetype maxBytes, QWidget* parent) : QPlainTextEdit(parent), maxBytes_(maxBytes) {}

void BoundedTextEdit::fitWrapTo(const QString& text) {
  if (longestRun(text) > kLongRun) setWordWrapMode(QTextOption::WrapAnywhere);
}

void BoundedTextEdit::setTextFitted(const QString& text) {
  setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  fitWrapTo(text);
  setPlainText(text);
}

void BoundedTextEdit::insertFromMimeData(const QMimeData* source) {
  if (!source || !source->hasText()) return QPlainTextEdit::insertFromMimeData(source);
  const QString pasted = source->text();
  // Sizes in the project's bytes (UTF-8); converting even a megabyte takes milliseconds.
  const qsizetype wouldBe =
      toPlainText().toUtf8().size() - textCursor().selectedText().toUtf8().size() + pasted.toUtf8().size();
  if (wouldBe > maxBytes_) {
    emit pasteRefused(wouldBe);
    return;
  }
  fitWrapTo(pasted);
  QPlainTextEdit::insertFromMimeData(source);
}

}  // namespace shardlab::ui
