#include "ui/mesh/axis_names.h"

#include <QObject>
#include <QStringList>
#include <algorithm>

namespace shardlab::ui {

QString axisNameProblem(const QString& name, const QString& what, bool meshAxis) {
  if (name.isEmpty()) return QObject::tr("%1: the name is empty").arg(what);
  for (const QChar c : name)
    if (c.isSpace() || c == ',' || c == '=' || c == '+')
      return QObject::tr(
                 "%1 '%2': a name may not contain spaces, ',', '=' or '+' (rules write several axes as data+model)")
          .arg(what, name);
  if (meshAxis && name.compare("none", Qt::CaseInsensitive) == 0)
    return QObject::tr("%1 '%2': 'none' means replicated, so it cannot name a mesh axis").arg(what, name);
  return {};
}

ParsedMeshAxes parseMeshAxes(const QString& text) {
  ParsedMeshAxes out;
  const QString t = text.trimmed();
  if (t.isEmpty() || t.compare("none", Qt::CaseInsensitive) == 0) return out;
  for (const QString& piece : t.split('+')) {
    const QString a = piece.trimmed();
    if (a.isEmpty()) {
      out.problem = QObject::tr("mesh axes '%1': an empty name between '+' signs (write e.g. data+model)").arg(t);
      return out;
    }
    if (const QString p = axisNameProblem(a, QObject::tr("mesh axis"), true); !p.isEmpty()) {
      out.problem = p;
      return out;
    }
    const std::string s = a.toStdString();
    if (std::find(out.axes.begin(), out.axes.end(), s) != out.axes.end()) {
      out.problem = QObject::tr("mesh axes '%1': axis '%2' is listed twice").arg(t, a);
      return out;
    }
    out.axes.push_back(s);
  }
  return out;
}

QString meshAxesText(const std::vector<std::string>& axes) {
  if (axes.empty()) return QStringLiteral("None");
  QStringList l;
  for (const std::string& a : axes) l << QString::fromStdString(a);
  return l.join('+');
}

}  // namespace shardlab::ui
