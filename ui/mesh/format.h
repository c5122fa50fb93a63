// How the tab writes numbers: shapes ("8 × 1024"), byte sizes ("4 MiB") and counts ("1 device",
// "8 devices").
#pragma once

#include <QString>

#include "engine/api/engine.h"

namespace shardlab::ui {

// "8 × 1024", and "(scalar)" for rank 0.
QString shapeText(const Shape& s);
// 4194304 -> "4.00 MiB", the engine's own format.
QString bytesText(double bytes);
// counted(1, "device", "devices") -> "1 device"; counted(8, ...) -> "8 devices".
QString counted(qlonglong n, const QString& one, const QString& many);

}  // namespace shardlab::ui
