#include "ui/mesh/format.h"

#include <QLocale>
#include <QObject>
#include <QStringList>

namespace shardlab::ui {

QString shapeText(const Shape& s) {
  if (s.empty()) return QObject::tr("(scalar)");
  QStringList dims;
  for (int64_t d : s) dims << QString::number(d);
  return dims.join(QStringLiteral(" × "));
}

QString bytesText(double bytes) { return QString::fromStdString(runtime::format_bytes(bytes)); }

QString counted(qlonglong n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

}  // namespace shardlab::ui
