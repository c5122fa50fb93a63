#include "ui/sharding/sharding_format.h"

#include <QLocale>
#include <QObject>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <set>

namespace shardlab::ui::shardfmt {

QString shapeText(const Shape& s) { return QString::fromStdString(shape_str(s)); }

QString logicalText(const std::vector<std::string>& names) {
  QStringList parts;
  for (const std::string& n : names) parts << (n.empty() ? QStringLiteral("-") : QString::fromStdString(n));
  return "(" + parts.join(", ") + ")";
}

QString axesText(const std::vector<std::string>& axes) {
  QStringList parts;
  for (const std::string& a : axes) parts << QString::fromStdString(a);
  return parts.join('+');
}

QString bytesText(double bytes) { return QString::fromStdString(runtime::format_bytes(bytes)); }

QString exactBytesText(double bytes) {
  return QStringLiteral("%1 (%2 bytes)").arg(bytesText(bytes), QLocale(QLocale::English).toString(qlonglong(bytes)));
}

QString deviceLabel(const std::vector<int64_t>& devices, const QString& platform) {
  QStringList ids;
  for (int64_t d : devices) ids << QString::number(d);
  return platform + " " + ids.join(',');
}

QString rangeText(const sharding::Block& b) {
  QStringList parts;
  for (size_t i = 0; i < b.start.size(); ++i)
    parts << QStringLiteral("%1:%2").arg(b.start[i]).arg(b.start[i] + b.shape[i]);
  return parts.isEmpty() ? QStringLiteral("(scalar)") : parts.join(", ");
}

QString blockIndexText(const sharding::Block& b) {
  QStringList parts;
  for (int64_t i : b.index) parts << QString::number(i);
  return "(" + parts.join(", ") + ")";
}

QString deviceCoordsText(const sharding::Mesh& mesh, int64_t device) {
  const std::vector<int64_t> c = mesh.coords(device);
  QStringList parts;
  for (size_t i = 0; i < mesh.axes().size() && i < c.size(); ++i)
    parts << QStringLiteral("%1 %2").arg(QString::fromStdString(mesh.axes()[i].name)).arg(c[i]);
  return parts.join(", ");
}

bool processesDivide(int64_t deviceCount, int processes) {
  return processes >= 1 && deviceCount > 0 && deviceCount % processes == 0;
}

int64_t processOf(int64_t device, int64_t deviceCount, int processes) {
  if (processes <= 1 || !processesDivide(deviceCount, processes) || device < 0 || device >= deviceCount) return -1;
  return device / (deviceCount / processes);
}

QString processesText(const std::vector<int64_t>& devices, int64_t deviceCount, int processes) {
  std::set<int64_t> procs;
  for (int64_t d : devices) {
    const int64_t p = processOf(d, deviceCount, processes);
    if (p < 0) return {};
    procs.insert(p);
  }
  if (procs.empty()) return {};
  QStringList ids;
  for (int64_t p : procs) ids << QString::number(p);
  return (procs.size() == 1 ? QStringLiteral(" (process ") : QStringLiteral(" (processes ")) + ids.join(',') + ")";
}

QString deviceName(const sharding::Mesh& mesh, int64_t device, int processes) {
  const QString coords = deviceCoordsText(mesh, device);
  QString s = coords.isEmpty() ? QObject::tr("Device %1").arg(device) : QObject::tr("Device %1 (%2)").arg(device).arg(coords);
  const int64_t p = processOf(device, mesh.device_count(), processes);
  if (p >= 0) s += QObject::tr(" — process %1").arg(p);
  return s;
}

QString kindGroupName(sharding::ArrayKind k) {
  switch (k) {
    case sharding::ArrayKind::Parameter:
      return QObject::tr("Parameters");
    case sharding::ArrayKind::OptimizerState:
      return QObject::tr("Optimizer state");
    case sharding::ArrayKind::Gradient:
      return QObject::tr("Gradients");
    case sharding::ArrayKind::Activation:
      return QObject::tr("Activations");
    case sharding::ArrayKind::Input:
      return QObject::tr("Inputs");
  }
  return QObject::tr("Other");
}

QString dimText(const sharding::ArraySharding& a, size_t dim) {
  const std::string logical = dim < a.logical.size() ? a.logical[dim] : std::string();
  const QString size = dim < a.shape.size() ? QString::number(a.shape[dim]) : QStringLiteral("?");
  return logical.empty() ? QStringLiteral("dim %1 (%2)").arg(dim).arg(size)
                         : QStringLiteral("dim %1 (%2, %3)").arg(dim).arg(QString::fromStdString(logical), size);
}

namespace {

void collectCopies(const std::vector<graph::NodeReport>& nodes, int64_t copies, std::map<std::string, int64_t>& out) {
  for (const graph::NodeReport& n : nodes) {
    if (n.type != "Input") out[n.name] = copies;
    // A Repeat's stacked parameters carry its layer count; its body runs that many times.
    const int64_t layers = n.params.empty() ? 1 : std::max<int64_t>(n.params.front().layers, 1);
    collectCopies(n.body, copies * layers, out);
  }
}

double channel(double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }

double luminance(const QColor& c) {
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

}  // namespace

std::map<std::string, int64_t> activationCopies(const graph::GraphReport& report) {
  std::map<std::string, int64_t> out;
  collectCopies(report.nodes, 1, out);
  return out;
}

QColor deviceSetColor(const std::vector<int64_t>& devices, bool dark) {
  if (devices.empty()) return dark ? QColor(70, 70, 70) : QColor(220, 220, 220);
  // Golden-ratio steps from the lowest device spread neighbouring sets far apart on the colour
  // wheel; the set's size shifts the hue a little, so e.g. {0,4} and {0,1,2,3} differ too.
  const double lowest = double(*std::min_element(devices.begin(), devices.end()));
  const double hue = std::fmod(0.58 + lowest * 0.6180339887 + std::log2(double(devices.size())) * 0.045, 1.0);
  return dark ? QColor::fromHslF(float(hue), 0.45f, 0.34f) : QColor::fromHslF(float(hue), 0.70f, 0.80f);
}

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor readableTextOn(const QColor& fill) {
  return contrastRatio(fill, Qt::black) >= contrastRatio(fill, Qt::white) ? QColor(Qt::black) : QColor(Qt::white);
}

}  // namespace shardlab::ui::shardfmt
