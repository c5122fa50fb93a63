// The menu a right-click on an array's row opens, wherever arrays are listed (Mesh & Rules'
// Arrays, the Sharding tab's tree): show the array in the Sharding tab, select the node it belongs
// to, copy its name or its PartitionSpec (with its "+sum(...)" marker, as `shard` prints it).
#pragma once

#include <QPoint>
#include <QString>

class QMenu;
class QWidget;

namespace shardlab::ui {

class ProjectDocument;

// Fills `menu` for the array named `array` of the document's design; false (and nothing added)
// when the design has no such array.
bool fillArrayMenu(QMenu* menu, ProjectDocument* doc, const QString& array);
// Opens that menu at `globalPos` and runs what is chosen.
void execArrayMenu(ProjectDocument* doc, const QString& array, QWidget* parent, const QPoint& globalPos);

}  // namespace shardlab::ui
