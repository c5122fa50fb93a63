// How the inspector shows a refused or broken value, the same way everywhere: the editor tinted
// red and the reason in a red line under it. Red reads on both the light and the dark palette.
#pragma once

#include <QColor>
#include <QLabel>
#include <QString>
#include <QWidget>

namespace shardlab::ui {

QColor errorColor();
// A hidden, word-wrapped red label for reasons.
QLabel* makeErrorLabel(const QString& objectName, QWidget* parent);
// Shows `error` in `label` (hidden when empty) and tints `editor` while there is one. The editor's
// "invalid" property says which, for tests and style sheets.
void showFieldError(QWidget* editor, QLabel* label, const QString& error);
// A label in the palette's secondary text colour (shapes, notes).
QLabel* makeNoteLabel(const QString& text, QWidget* parent);

}  // namespace shardlab::ui
