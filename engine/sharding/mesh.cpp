#include "engine/sharding/mesh.h"

#include <set>

#include "engine/util/checked.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::sharding {

namespace {
// Devices are numbered with `int` (collective groups, threads): a mesh is at most this large, which
// also keeps every product of axis sizes far from overflowing.
constexpr int64_t kMaxDevices = int64_t(1) << 20;
}  // namespace

Mesh::Mesh(std::vector<MeshAxis> axes) : axes_(std::move(axes)) {
  std::set<std::string> seen;
  for (const MeshAxis& a : axes_) {
    if (a.name.empty()) throw Error("mesh: an axis has no name");
    if (!seen.insert(a.name).second) throw Error("mesh: axis '" + a.name + "' appears twice");
    if (a.size < 1) throw Error("mesh: axis '" + a.name + "' has size " + std::to_string(a.size) + " (sizes are >= 1)");
  }
  // The device count is the product of the sizes: check it once here, so device_count() and every
  // coordinate computation below stay in range.
  int64_t n = 1;
  for (const MeshAxis& a : axes_) {
    const auto next = util::mul(n, a.size);
    if (!next || *next > kMaxDevices)
      throw Error("mesh " + str() + ": the device count (the product of the axis sizes, up to axis '" + a.name +
                  "') is more than " + std::to_string(kMaxDevices) + " devices");
    n = *next;
  }
}

int64_t Mesh::device_count() const {
  int64_t n = 1;
  for (const MeshAxis& a : axes_) n *= a.size;  // bounded by the constructor
  return n;
}

int Mesh::axis_index(const std::string& name) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == name) return int(i);
  return -1;
}

int64_t Mesh::axis_size(const std::string& name) const {
  int i = axis_index(name);
  if (i < 0) throw Error("mesh " + str() + " has no axis '" + name + "'");
  return axes_[size_t(i)].size;
}

std::vector<int64_t> Mesh::coords(int64_t device) const {
  std::vector<int64_t> c(axes_.size());
  for (size_t i = axes_.size(); i-- > 0;) {
    c[i] = device % axes_[i].size;
    device /= axes_[i].size;
  }
  return c;
}

int64_t Mesh::device_at(const std::vector<int64_t>& c) const {
  int64_t d = 0;
  for (size_t i = 0; i < axes_.size(); ++i) d = d * axes_[i].size + c[i];
  return d;
}

std::vector<int> Mesh::group(int64_t device, const std::vector<std::string>& axes) const {
  std::vector<int64_t> c = coords(device);
  std::vector<int> idx;
  int64_t n = 1;
  for (const std::string& a : axes) {
    idx.push_back(axis_index(a));
    if (idx.back() < 0) throw Error("mesh " + str() + " has no axis '" + a + "'");
    n *= axes_[size_t(idx.back())].size;
  }
  std::vector<int> out;
  for (int64_t r = 0; r < n; ++r) {
    int64_t rest = r;
    for (size_t k = idx.size(); k-- > 0;) {
      const int64_t s = axes_[size_t(idx[k])].size;
      c[size_t(idx[k])] = rest % s;
      rest /= s;
    }
    out.push_back(int(device_at(c)));
  }
  return out;
}

std::string Mesh::str() const {
  if (axes_.empty()) return "(one device)";
  std::string s;
  for (const MeshAxis& a : axes_) s += (s.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
  return s;
}

Mesh parse_mesh(const std::string& text) {
  std::vector<MeshAxis> axes;
  for (const std::string& item : util::split(text, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw Error("mesh '" + text + "': '" + item + "' is not name=size (e.g. data=2,model=4)");
    MeshAxis a{item.substr(0, eq), 0};
    try {
      size_t used = 0;
      a.size = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing");
    } catch (const std::out_of_range&) {
      throw Error("mesh '" + text + "': size of '" + a.name + "' is too large (at most " + std::to_string(kMaxDevices) +
                  " devices in all)");
    } catch (const std::exception&) {
      throw Error("mesh '" + text + "': size of '" + a.name + "' is not a whole number");
    }
    axes.push_back(a);
  }
  return Mesh(axes);
}

Mesh mesh_from_json(const nlohmann::ordered_json& j, const std::string& where) {
  if (j.is_null()) return Mesh();
  if (!j.is_object() || !j.contains("axes") || !j["axes"].is_object())
    throw Error(where + ": expected {\"axes\": {\"data\": 2, \"model\": 4}}");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "axes") throw Error(where + "." + it.key() + ": unknown field (expected axes)");
  std::vector<MeshAxis> axes;
  for (auto it = j["axes"].begin(); it != j["axes"].end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 1)
      throw Error(where + ".axes." + it.key() + ": bad size " + it.value().dump() + " (expected an integer >= 1)");
    axes.push_back({it.key(), it.value().get<int64_t>()});
  }
  try {
    return Mesh(axes);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

nlohmann::ordered_json mesh_to_json(const Mesh& m) {
  nlohmann::ordered_json axes = nlohmann::ordered_json::object();
  for (const MeshAxis& a : m.axes()) axes[a.name] = a.size;
  return {{"axes", axes}};
}

void check_device_count(const Mesh& m, int64_t devices) {
  if (m.device_count() != devices)
    throw Error("mesh " + m.str() + " has " + std::to_string(m.device_count()) + " devices but " +
                std::to_string(devices) + " are available (the product of the axis sizes must equal the device count)");
}

void check_process_count(const Mesh& m, int64_t processes) {
  if (processes < 1 || m.device_count() % processes != 0)
    throw Error("the mesh " + m.str() + " has " + std::to_string(m.device_count()) + " devices, which do not divide among " +
                std::to_string(processes) + " processes");
}

}  // namespace shardlab::sharding
