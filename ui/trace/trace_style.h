// How the Trace tab colours span categories and writes its numbers (durations, FLOPs, rates,
// bytes), shared by the timeline, the step breakdown and the comparison so they agree.
#pragma once

#include <QColor>
#include <QString>

#include "engine/api/engine.h"

namespace shardlab::ui::trace_style {

// The four span categories of a step, plus idle (the part of a step no span accounts for).
enum class Part { Compute, Collective, Optimizer, Data, Idle };
constexpr int kPartCount = 5;

QColor partColor(Part p);
QString partLabel(Part p);
// Category::Step has no part of its own (it is the whole step); it maps to Idle's colour.
Part partOf(profiler::Category c);
QColor categoryColor(profiler::Category c);

// 0.42 -> "420 ns", 1534 -> "1.53 ms", 2.5e6 -> "2.50 s" (microseconds in).
QString durationText(double us);
// 3.2e9 -> "3.20 GFLOP".
QString flopsText(double flops);
// 4.1e10 -> "41.0 GFLOP/s".
QString rateText(double flopsPerSecond);
// 4194304 -> "4.00 MiB".
QString bytesText(double bytes);

}  // namespace shardlab::ui::trace_style
