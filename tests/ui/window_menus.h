// The window's menu commands and the file dialogs they open, for the UI tests: a File menu item
// by its text, and Qt's own file dialog answered with a path once it shows.
#pragma once

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QMenu>
#include <QMenuBar>
#include <QTimer>
#include <QtTest>

#include "ui/main_window.h"

namespace shardlab::testing {

// File > `text` ("Attach to Run...", "Close Project"), or null.
inline QAction* fileAction(ui::MainWindow& w, const QString& text) {
  for (QAction* menu : w.menuBar()->actions())
    if (menu->text().remove('&') == "File")
      for (QAction* a : menu->menu()->actions())
        if (a->text().remove('&') == text) return a;
  return nullptr;
}

// Answers the next file dialog with `path` (Qt's dialog through its own API: what it does with
// keys is Qt's, tested there); call before the action that opens it.
inline void answerNextFileDialog(const QString& path) {
  QTimer::singleShot(0, [path] {
    for (int i = 0; i < 300; ++i) {
      if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
        dialog->selectFile(path);
        static_cast<QDialog*>(dialog)->accept();
        return;
      }
      QTest::qWait(10);
    }
  });
}

// Answers the file dialogs that open one after another (a folder, then a file to save) with
// `paths` in order.
inline void answerFileDialogs(QStringList paths) {
  if (paths.isEmpty()) return;
  QTimer::singleShot(0, [paths] {
    QStringList rest = paths;
    const QString path = rest.takeFirst();
    for (int i = 0; i < 300; ++i) {
      if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
        dialog->selectFile(path);
        answerFileDialogs(rest);  // waits for the next dialog once this one has gone
        static_cast<QDialog*>(dialog)->accept();
        return;
      }
      QTest::qWait(10);
    }
  });
}

}  // namespace shardlab::testing
