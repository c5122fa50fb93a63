// What the canvas shows for a node and an edge, read from the project and its design report: the
// title, ports, parameter lines with their array names, shapes with logical axis names, notes
// ("× 4", "block output"), and the error that belongs to the node, found wherever the report put it
// (the node's own report, the graph's error list, or inside its Repeat's error).
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/api/engine.h"

namespace shardlab::ui {

struct ParamLine {
  QString text;   // "kernel (embed 784, mlp 256)"
  QString array;  // the array the sharding view shows: "dense1/kernel", "blocks/W1/kernel"
};

struct NodeSpec {
  QString path;    // "dense1", "blocks/W1", "blocks/@in"
  QString parent;  // "" at the top, the Repeat's path inside its block
  QString name;    // "W1"
  QString type;    // "Dense"; a Repeat shows "Repeat × 4"
  QString category;
  QStringList inputs;       // input port names in order; empty for Input and "@in"
  QStringList inputShapes;  // the shape arriving at each input, or empty when unknown
  bool hasOutput = true;
  QString outputShape;  // "(batch 128, embed 784)", empty when unknown
  QStringList notes;    // dim lines under the ports
  QVector<ParamLine> params;
  QString error;
  bool repeat = false;
  bool expanded = false;  // a Repeat showing its block
  bool carry = false;     // the "@in" pseudo node of a block
  bool blockOutput = false;
};

// "(batch 128, embed 784)": graph::describe's form; a dimension without a logical name shows its size.
QString shapeText(const graph::ArrayInfo& a);

// The report of node `path`, searching Repeat bodies; null when the node was not inferred.
const graph::NodeReport* findReport(const api::Design& d, const QString& path);

// Every error the design names for node `path`, one per line; empty when it is fine.
QString nodeError(const api::Design& d, const QString& path);

// `path` is a node's path or "<repeat>/@in".
NodeSpec nodeSpec(const project::Project& p, const api::Design& d, const QString& path);

// The activation flowing out of `from` (a node of the graph at `parent`, or its "@in"): its shape
// text (empty when not inferred) and the array name the sharding view knows it by.
QString edgeShape(const api::Design& d, const QString& parent, const QString& from);
QString edgeArray(const project::Project& p, const QString& parent, const QString& from);

// "blocks" + "W1" -> "blocks/W1"; "" + "x" -> "x".
QString joinPath(const QString& parent, const QString& leaf);

}  // namespace shardlab::ui
