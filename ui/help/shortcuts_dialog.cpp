#include "ui/help/shortcuts_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace shardlab::ui {

namespace {

QString plainText(QString text) {
  text.remove('&');
  if (text.endsWith(QStringLiteral("..."))) text.chop(3);
  if (text.endsWith(QChar(0x2026))) text.chop(1);
  return text.trimmed();
}

QString whereItWorks(const QAction* a) {
  if (a->shortcutContext() == Qt::WidgetWithChildrenShortcut || a->shortcutContext() == Qt::WidgetShortcut)
    for (const QObject* o : a->associatedObjects())
      if (auto* w = qobject_cast<const QWidget*>(o); w && !qobject_cast<const QMenu*>(w) && !w->accessibleName().isEmpty())
        return QObject::tr("in the %1").arg(w->accessibleName().toLower());
  return QObject::tr("anywhere in the window");
}

void collect(const QMenu* menu, const QString& path, QList<ShortcutRow>& rows) {
  for (const QAction* a : menu->actions()) {
    if (a->isSeparator()) continue;
    if (a->menu()) {
      collect(a->menu(), path + QStringLiteral(" > ") + plainText(a->text()), rows);
      continue;
    }
    if (a->shortcuts().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    const QString name = a->property("shortcutName").toString();
    rows.append({path, name.isEmpty() ? plainText(a->text()) : name, keys.join(QStringLiteral(", ")), whereItWorks(a)});
  }
}

}  // namespace

QList<ShortcutRow> shortcutRows(const QMenuBar* bar) {
  QList<ShortcutRow> rows;
  for (const QAction* top : bar->actions())
    if (top->menu()) collect(top->menu(), plainText(top->text()), rows);
  return rows;
}

ShortcutsDialog::ShortcutsDialog(QWidget* parent) : QDialog(parent) {
  setObjectName("shortcutsDialog");
  setWindowTitle(tr("Keyboard Shortcuts"));
  table_ = new QTableWidget(0, 4, this);
  table_->setObjectName("shortcutsTable");
  table_->setHorizontalHeaderLabels({tr("Menu"), tr("Command"), tr("Shortcut"), tr("Works")});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(table_);
  layout->addWidget(buttons);
  resize(640, 560);
}

void ShortcutsDialog::load(const QMenuBar* bar) {
  const QList<ShortcutRow> rows = shortcutRows(bar);
  table_->setRowCount(int(rows.size()));
  for (int r = 0; r < rows.size(); ++r) {
    const ShortcutRow& row = rows[r];
    int c = 0;
    for (const QString& text : {row.menu, row.command, row.keys, row.where}) table_->setItem(r, c++, new QTableWidgetItem(text));
  }
  table_->resizeColumnsToContents();
}

}  // namespace shardlab::ui
