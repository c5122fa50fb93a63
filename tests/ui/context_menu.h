// Drives a context menu as a person does, for the UI tests: a right-click, then the keyboard.
#pragma once

#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QMenu>
#include <QStringList>
#include <QTimer>
#include <QtTest>

namespace shardlab::testing {

// Right-clicks `at` on the viewport; once the menu shows, returns its items' texts (through
// `shown`) and picks `choice` ("Add Layer/Core/Dense") with the keyboard, or closes it with Escape.
inline void contextMenu(QWidget* viewport, QPoint at, const QString& choice, QStringList* shown) {
  QTimer::singleShot(0, [=] {
    QMenu* menu = nullptr;
    for (int i = 0; i < 200 && !menu; ++i) {
      menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
      if (!menu) QTest::qWait(10);
    }
    if (!menu) return;
    for (QAction* a : menu->actions())
      if (!a->isSeparator()) *shown << a->text().remove('&');
    if (choice.isEmpty()) {
      QTest::keyClick(menu, Qt::Key_Escape);
      return;
    }
    const QStringList steps = choice.split('/');
    for (int s = 0; s < steps.size(); ++s) {
      QAction* pick = nullptr;
      for (QAction* a : menu->actions())
        if (a->text().remove('&') == steps[s]) pick = a;
      if (!pick) {
        qWarning("no menu item '%s'", qPrintable(steps[s]));
        QTest::keyClick(menu, Qt::Key_Escape);
        return;
      }
      menu->setActiveAction(pick);
      if (pick->menu()) {
        QTest::keyClick(menu, Qt::Key_Right);
        for (int i = 0; i < 200 && !pick->menu()->isVisible(); ++i) QTest::qWait(10);
        menu = pick->menu();
      } else {
        QTest::keyClick(menu, Qt::Key_Return);
      }
    }
  });
  QContextMenuEvent event(QContextMenuEvent::Mouse, at, viewport->mapToGlobal(at));
  QApplication::sendEvent(viewport, &event);
}

}  // namespace shardlab::testing
