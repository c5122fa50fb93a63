#include "ui/canvas/canvas_style.h"

#include <QHash>

namespace shardlab::ui::style {

namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                          float(a.blueF() * (1 - t) + b.blueF() * t), float(a.alphaF() * (1 - t) + b.alphaF() * t));
}

bool isDark(const QPalette& p) { return p.color(QPalette::Base).lightnessF() < 0.5; }

}  // namespace

QColor accent(const QString& category) {
  static const QHash<QString, QColor> hues = {
      {"Data", QColor(46, 160, 67)},           {"Core", QColor(42, 130, 218)},     {"Activation", QColor(214, 125, 33)},
      {"Normalization", QColor(150, 90, 200)}, {"Regularization", QColor(120, 120, 120)},
      {"Structure", QColor(0, 150, 150)},      {"Blocks", QColor(200, 60, 130)},   {"Convolution", QColor(190, 150, 20)},
  };
  return hues.value(category, QColor(128, 128, 128));
}

QColor nodeFill(const QPalette& p) { return p.color(QPalette::Base); }
QColor headerFill(const QPalette& p, const QString& category) {
  return mix(p.color(QPalette::Base), accent(category), isDark(p) ? 0.35 : 0.22);
}
QColor frameFill(const QPalette& p) { return mix(p.color(QPalette::Base), p.color(QPalette::Window), 0.6); }
QColor text(const QPalette& p) { return p.color(QPalette::Text); }
QColor dimText(const QPalette& p) { return mix(p.color(QPalette::Text), p.color(QPalette::Base), 0.4); }
QColor border(const QPalette& p) { return mix(p.color(QPalette::Text), p.color(QPalette::Base), 0.65); }
QColor selection(const QPalette& p) { return p.color(QPalette::Highlight); }
QColor link(const QPalette& p) {
  // The palette's link blue is too dark on a dark base; lift it there.
  const QColor l = p.color(QPalette::Link);
  return isDark(p) ? mix(l, Qt::white, 0.35) : l;
}
QColor edge(const QPalette& p) { return mix(p.color(QPalette::Text), p.color(QPalette::Base), 0.35); }
QColor error() { return QColor(220, 50, 47); }

QFont smallFont(const QFont& base) {
  QFont f = base;
  if (f.pointSizeF() > 0) f.setPointSizeF(std::max(6.0, f.pointSizeF() - 1));
  return f;
}

QFont titleFont(const QFont& base) {
  QFont f = base;
  f.setBold(true);
  return f;
}

}  // namespace shardlab::ui::style
