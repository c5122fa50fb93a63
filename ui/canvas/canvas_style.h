// The canvas's colours and sizes. Colours derive from the widget palette, so nodes, text and edges
// read well under both the light and the dark theme; only the error red and the per-category
// accents are fixed hues, blended into the palette's base colour.
#pragma once

#include <QColor>
#include <QFont>
#include <QPalette>
#include <QString>

namespace shardlab::ui::style {

inline constexpr double kPad = 8;           // inside a node's edges
inline constexpr double kCorner = 6;        // node corner radius
inline constexpr double kPortRadius = 5;    // drawn
inline constexpr double kPortHitRadius = 9; // grabbed
inline constexpr double kMinNodeWidth = 170;
inline constexpr double kMaxNodeWidth = 380;

QColor nodeFill(const QPalette& p);
QColor headerFill(const QPalette& p, const QString& category);
QColor frameFill(const QPalette& p);  // an expanded Repeat's block area
QColor text(const QPalette& p);
QColor dimText(const QPalette& p);
QColor border(const QPalette& p);
QColor selection(const QPalette& p);
QColor link(const QPalette& p);  // clickable parameter lines
QColor edge(const QPalette& p);
QColor error();
QColor accent(const QString& category);

// Notes, parameters, port names and edge labels use a slightly smaller font than titles.
QFont smallFont(const QFont& base);
QFont titleFont(const QFont& base);

}  // namespace shardlab::ui::style
