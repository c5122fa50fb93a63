#include "ui/sharding/array_menu.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QMenu>

#include "ui/document/project_document.h"

namespace shardlab::ui {

bool fillArrayMenu(QMenu* menu, ProjectDocument* doc, const QString& array) {
  const api::Design& d = doc->design();
  const std::string name = array.toStdString();
  const sharding::ArraySharding* found = nullptr;
  for (const sharding::ArraySharding& a : d.sharding.arrays)
    if (a.name == name) found = &a;
  if (!found) return false;
  const QString node = QString::fromStdString(found->node);
  const QString spec = QString::fromStdString(found->spec_text());
  menu->addAction(QObject::tr("Show in Sharding"), doc, [doc, array] { doc->requestArray(array); });
  if (!node.isEmpty())
    menu->addAction(QObject::tr("Select Node '%1'").arg(node), doc, [doc, node] { doc->setSelection({node}); });
  menu->addSeparator();
  menu->addAction(QObject::tr("Copy Name"), doc, [array] { QGuiApplication::clipboard()->setText(array); });
  menu->addAction(QObject::tr("Copy PartitionSpec"), doc, [spec] { QGuiApplication::clipboard()->setText(spec); });
  return true;
}

void execArrayMenu(ProjectDocument* doc, const QString& array, QWidget* parent, const QPoint& globalPos) {
  QMenu menu(parent);
  menu.setObjectName("arrayMenu");
  if (fillArrayMenu(&menu, doc, array)) menu.exec(globalPos);
}

}  // namespace shardlab::ui
