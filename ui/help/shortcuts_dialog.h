// Help > Keyboard Shortcuts: a table of every menu command that has a shortcut, read from the
// window's own actions each time it opens, so it is always the shortcuts that work.
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

class QMenuBar;
class QTableWidget;

namespace shardlab::ui {

struct ShortcutRow {
  QString menu;     // "Edit"
  QString command;  // "Undo"
  QString keys;     // "Ctrl+Z", several joined by ", "
  QString where;    // "anywhere in the window", or the widget it works in ("the graph")
};

// Every action with a shortcut under `bar`'s menus (sub-menus included), in menu order. A command's
// name is its text without mnemonics and dots, or its "shortcutName" property where its text
// changes (Undo reads "Undo Rename dense1").
QList<ShortcutRow> shortcutRows(const QMenuBar* bar);

class ShortcutsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ShortcutsDialog(QWidget* parent = nullptr);

  // Fills the table from `bar`'s actions as they are now.
  void load(const QMenuBar* bar);
  QTableWidget* table() const { return table_; }

 private:
  QTableWidget* table_;
};

}  // namespace shardlab::ui
