#include "ui/trace/trace_legend.h"

#include <QPainter>

#include "ui/trace/trace_style.h"

namespace shardlab::ui {

namespace {

using trace_style::Part;
constexpr Part kShown[] = {Part::Compute, Part::Collective, Part::Optimizer, Part::Data};
constexpr int kSwatch = 11, kGap = 6, kSpacing = 14;

}  // namespace

TraceLegend::TraceLegend(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  setToolTip(tr("Span colours by category; dashed lines mark where each step begins"));
}

QSize TraceLegend::sizeHint() const {
  const QFontMetrics fm(font());
  int w = 0;
  for (Part p : kShown) w += kSwatch + kGap + fm.horizontalAdvance(trace_style::partLabel(p)) + kSpacing;
  w += kSwatch + kGap + fm.horizontalAdvance(tr("step start"));
  return {w + 4, std::max(fm.height(), kSwatch) + 6};
}

void TraceLegend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm(font());
  const int cy = height() / 2;
  int x = 2;
  p.setPen(palette().color(QPalette::WindowText));
  for (Part part : kShown) {
    p.fillRect(QRect(x, cy - kSwatch / 2, kSwatch, kSwatch), trace_style::partColor(part));
    x += kSwatch + kGap;
    const QString label = trace_style::partLabel(part);
    p.drawText(QRect(x, 0, fm.horizontalAdvance(label) + 2, height()), Qt::AlignLeft | Qt::AlignVCenter, label);
    x += fm.horizontalAdvance(label) + kSpacing;
  }
  p.setPen(QPen(palette().color(QPalette::WindowText), 1, Qt::DashLine));
  p.drawLine(x + kSwatch / 2, cy - kSwatch / 2, x + kSwatch / 2, cy + kSwatch / 2);
  x += kSwatch + kGap;
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRect(x, 0, width() - x, height()), Qt::AlignLeft | Qt::AlignVCenter, tr("step start"));
}

}  // namespace shardlab::ui
