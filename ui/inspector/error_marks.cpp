#include "ui/inspector/error_marks.h"

namespace shardlab::ui {

QColor errorColor() { return QColor(220, 50, 47); }

QLabel* makeErrorLabel(const QString& objectName, QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setObjectName(objectName);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QPalette p = l->palette();
  p.setColor(QPalette::WindowText, errorColor());
  l->setPalette(p);
  l->hide();
  return l;
}

void showFieldError(QWidget* editor, QLabel* label, const QString& error) {
  const bool invalid = !error.isEmpty();
  if (label) {
    label->setText(error);
    label->setVisible(invalid);
  }
  if (!editor || editor->property("invalid").toBool() == invalid) return;
  editor->setProperty("invalid", invalid);
  // A translucent tint keeps the text readable over either palette's base colour.
  const QColor c = errorColor();
  editor->setStyleSheet(invalid ? QString("%1 { background-color: rgba(%2, %3, %4, 50); border: 1px solid rgb(%2, %3, %4); "
                                          "border-radius: 2px; padding: 1px; }")
                                      .arg(editor->metaObject()->className())
                                      .arg(c.red())
                                      .arg(c.green())
                                      .arg(c.blue())
                                : QString());
}

QLabel* makeNoteLabel(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->setForegroundRole(QPalette::PlaceholderText);
  return l;
}

}  // namespace shardlab::ui
