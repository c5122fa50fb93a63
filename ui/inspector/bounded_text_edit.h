// A plain-text editor that holds at most a set number of bytes of UTF-8 (a project's strings are
// bounded). A paste that would pass the bound is refused before any of it is laid out: laying out
// a megabyte pasted as one line would stall the window for minutes. A paste holding one long
// unbroken run (a hash, a blob) switches the editor to breaking lines anywhere first, which keeps
// even the largest allowed paste to a fraction of a second.
#pragma once

#include <QPlainTextEdit>

namespace shardlab::ui {

class BoundedTextEdit : public QPlainTextEdit {
  Q_OBJECT

 public:
  BoundedTextEdit(qsizetype maxBytes, QWidget* parent = nullptr);
  qsizetype maxBytes() const { return maxBytes_; }
  // Sets the text, breaking lines anywhere when it has a long unbroken run (the same rule as a paste).
  void setTextFitted(const QString& text);

 signals:
  // A paste was refused: it would have made the text `wouldBe` bytes long.
  void pasteRefused(qsizetype wouldBe);

 protected:
  void insertFromMimeData(const QMimeData* source) override;

 private:
  void fitWrapTo(const QString& text);
  qsizetype maxBytes_;
};

}  // namespace shardlab::ui
