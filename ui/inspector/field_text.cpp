#include "ui/inspector/field_text.h"

#include <QLocale>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <limits>

namespace shardlab::ui::fieldtext {

namespace {

using graph::FieldInfo;
using graph::Json;
using Kind = FieldInfo::Kind;

QString key(const FieldInfo& f) { return QString::fromStdString(f.key); }

// What a field expects, for the message of an empty required field.
QString expectation(const FieldInfo& f) {
  switch (f.kind) {
    case Kind::Int: return "a whole number";
    case Kind::Number: return "a number";
    case Kind::String: return "a name";
    case Kind::IntList: return "positive integers separated by commas, e.g. 28, 28";
    case Kind::NameList: return "names separated by commas, e.g. batch, embed";
    case Kind::Bool: return "on or off";
    case Kind::Init: return "an initializer";
  }
  return {};
}

QString numberText(double v) { return QString::number(v, 'g', 12); }

Parsed fail(const FieldInfo& f, const QString& why) { return {Json(), key(f) + ": " + why}; }

Parsed parseInt(const FieldInfo& f, const QString& t) {
  bool ok = false;
  const qlonglong v = t.toLongLong(&ok);
  if (!ok) return fail(f, QString("'%1' is not a whole number").arg(t));
  if (f.hi > f.lo) {
    if (double(v) < f.lo || double(v) > f.hi)
      return fail(f, QString("%1 is out of range (expected %2 to %3)").arg(v).arg(numberText(f.lo), numberText(f.hi)));
  } else if (v < 1) {
    // Every integer field the layers read (features, count) is a positive size.
    return fail(f, QString("%1 is not allowed (expected a positive integer)").arg(v));
  }
  if (v > std::numeric_limits<int32_t>::max())
    return fail(f, QString("%1 is too large (at most %2)").arg(v).arg(std::numeric_limits<int32_t>::max()));
  return {Json(int64_t(v)), {}};
}

Parsed parseNumber(const FieldInfo& f, const QString& t) {
  bool ok = false;
  const double v = t.toDouble(&ok);
  if (!ok || !std::isfinite(v)) return fail(f, QString("'%1' is not a number").arg(t));
  if (f.hi > f.lo && (v < f.lo || v > f.hi))
    return fail(f, QString("%1 is out of range (expected %2 to %3)").arg(t, numberText(f.lo), numberText(f.hi)));
  return {Json(v), {}};
}

Parsed parseIntList(const FieldInfo& f, QString t) {
  if (t.startsWith('[') && t.endsWith(']')) t = t.mid(1, t.size() - 2).trimmed();
  Json list = Json::array();
  for (const QString& part : t.split(',')) {
    const QString item = part.trimmed();
    if (item.isEmpty()) return fail(f, "an entry is empty (expected " + expectation(f) + ")");
    bool ok = false;
    const qlonglong v = item.toLongLong(&ok);
    if (!ok || v < 1)
      return fail(f, QString("'%1' is not a positive integer (separate numbers with commas)").arg(item));
    if (v > std::numeric_limits<int32_t>::max()) return fail(f, QString("%1 is too large").arg(v));
    list.push_back(int64_t(v));
  }
  return {list, {}};
}

}  // namespace

QString format(const FieldInfo& f, const Json& v) {
  if (v.is_null()) return {};
  switch (f.kind) {
    case Kind::Int:
      if (v.is_number_integer()) return QString::number(v.get<int64_t>());
      break;
    case Kind::Number:
      if (v.is_number()) return numberText(v.get<double>());
      break;
    case Kind::String:
      if (v.is_string()) return QString::fromStdString(v.get<std::string>());
      break;
    case Kind::IntList:
      if (v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_number_integer(); })) {
        QStringList parts;
        for (const Json& e : v) parts << QString::number(e.get<int64_t>());
        return parts.join(", ");
      }
      break;
    case Kind::NameList:
      if (v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); })) return joinNames(namesOf(v));
      break;
    case Kind::Init:
      if (v.is_string()) return QString::fromStdString(v.get<std::string>());
      break;
    case Kind::Bool:
      if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
      break;
  }
  return QString::fromStdString(v.dump());
}

Parsed parse(const FieldInfo& f, const QString& text) {
  const QString t = text.trimmed();
  if (t.isEmpty()) {
    if (f.required) return fail(f, "required (expected " + expectation(f) + ")");
    return {Json(), {}};
  }
  Parsed p;
  switch (f.kind) {
    case Kind::Int: p = parseInt(f, t); break;
    case Kind::Number: p = parseNumber(f, t); break;
    case Kind::String: p = {Json(t.toStdString()), {}}; break;
    case Kind::IntList: p = parseIntList(f, t); break;
    case Kind::NameList: {
      std::vector<std::string> names;
      QString error;
      if (!parseNames(t, key(f), &names, &error)) return {Json(), error};
      p = {Json(names), {}};
      break;
    }
    case Kind::Bool:
    case Kind::Init: return fail(f, "is not edited as text");
  }
  if (p.ok()) p.value = normalize(f, p.value);
  return p;
}

Json normalize(const FieldInfo& f, const Json& value) {
  if (!f.required && value == f.value) return Json();
  return value;
}

bool parseNames(const QString& text, const QString& what, std::vector<std::string>* out, QString* error) {
  out->clear();
  const QString t = text.trimmed();
  if (t.isEmpty()) return true;
  for (const QString& part : t.split(',')) {
    const QString name = part.trimmed();
    if (name.isEmpty()) {
      *error = what + ": a name is empty (separate names with commas, e.g. embed, mlp)";
      return false;
    }
    if (name.contains(QRegularExpression("\\s"))) {
      *error = what + QString(": '%1' has a space (separate names with commas)").arg(name);
      return false;
    }
    out->push_back(name.toStdString());
  }
  return true;
}

QString joinNames(const std::vector<std::string>& names) {
  QStringList parts;
  for (const std::string& n : names) parts << QString::fromStdString(n);
  return parts.join(", ");
}

std::vector<std::string> namesOf(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const Json& e : j) {
    if (!e.is_string()) return {};
    out.push_back(e.get<std::string>());
  }
  return out;
}

const QStringList& initializerNames() {
  static const QStringList names{"lecun_normal", "xavier_normal", "xavier_uniform", "normal", "embed_normal", "zeros", "ones"};
  return names;
}

QString formatCount(double n) { return QLocale(QLocale::English).toString(qlonglong(std::llround(n))); }

QString formatFlops(double flops) {
  static const char* units[] = {"", " k", " M", " G", " T", " P"};
  int u = 0;
  while (std::abs(flops) >= 1000 && u < 5) flops /= 1000, ++u;
  return QString::number(flops, 'g', u == 0 ? 6 : 3) + units[u];
}

}  // namespace shardlab::ui::fieldtext
