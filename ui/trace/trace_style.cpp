#include "ui/trace/trace_style.h"

#include <QObject>
#include <cmath>

namespace shardlab::ui::trace_style {

namespace {

// Three significant digits with an SI prefix: 1.23 k, 45.6 M, 789 G.
QString scaled(double v, const QString& unit) {
  static const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double a = std::abs(v);
  while (a >= 999.5 && i < 6) {
    a /= 1000.0;
    v /= 1000.0;
    ++i;
  }
  const int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  return QStringLiteral("%1 %2").arg(v, 0, 'f', i == 0 && a == std::floor(a) ? 0 : decimals).arg(QLatin1String(kPrefix[i]) + unit);
}

}  // namespace

QColor partColor(Part p) {
  // Distinguishable for the common colour-vision deficiencies (Okabe-Ito hues), readable on light and dark.
  switch (p) {
    case Part::Compute: return QColor(0x00, 0x72, 0xb2);
    case Part::Collective: return QColor(0xe6, 0x9f, 0x00);
    case Part::Optimizer: return QColor(0x00, 0x9e, 0x73);
    case Part::Data: return QColor(0xcc, 0x79, 0xa7);
    case Part::Idle: return QColor(0xb0, 0xb0, 0xb0);
  }
  return Qt::gray;
}

QString partLabel(Part p) {
  switch (p) {
    case Part::Compute: return QObject::tr("compute");
    case Part::Collective: return QObject::tr("collective");
    case Part::Optimizer: return QObject::tr("optimizer");
    case Part::Data: return QObject::tr("data");
    case Part::Idle: return QObject::tr("idle");
  }
  return {};
}

Part partOf(profiler::Category c) {
  switch (c) {
    case profiler::Category::Compute: return Part::Compute;
    case profiler::Category::Collective: return Part::Collective;
    case profiler::Category::Optimizer: return Part::Optimizer;
    case profiler::Category::Data: return Part::Data;
    case profiler::Category::Step: return Part::Idle;
  }
  return Part::Idle;
}

QColor categoryColor(profiler::Category c) { return partColor(partOf(c)); }

QString durationText(double us) {
  const double a = std::abs(us);
  const auto fmt = [](double v, const QString& unit) {
    const double av = std::abs(v);
    return QStringLiteral("%1 %2").arg(v, 0, 'f', av >= 99.95 ? 0 : av >= 9.995 ? 1 : 2).arg(unit);
  };
  if (a < 1.0) return fmt(us * 1e3, QStringLiteral("ns"));
  if (a < 1e3) return fmt(us, QStringLiteral("µs"));
  if (a < 1e6) return fmt(us / 1e3, QStringLiteral("ms"));
  return fmt(us / 1e6, QStringLiteral("s"));
}

QString flopsText(double flops) { return scaled(flops, QStringLiteral("FLOP")); }

QString rateText(double flopsPerSecond) { return scaled(flopsPerSecond, QStringLiteral("FLOP/s")); }

QString bytesText(double bytes) { return QString::fromStdString(runtime::format_bytes(bytes)); }

}  // namespace shardlab::ui::trace_style
