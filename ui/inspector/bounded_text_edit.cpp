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
  // UTF-8 sizes counted without converting a megabyte: a UTF-16 unit is 1 to 3 bytes.
  auto utf8Bytes = [](QStringView s) {
    qsizetype n = 0;
    for (const QChar c : s) n += c.unicode() < 0x80 ? 1 : c.unicode() < 0x800 ? 2 : c.isSurrogate() ? 2 : 3;
    return n;
  };
  const QString current = toPlainText();
  const qsizetype wouldBe = utf8Bytes(current) - utf8Bytes(textCursor().selectedText()) + utf8Bytes(pasted);
  if (wouldBe > maxBytes_) {
    emit pasteRefused(wouldBe);
    return;
  }
  fitWrapTo(pasted);
  QPlainTextEdit::insertFromMimeData(source);
}

}  // namespace shardlab::ui
