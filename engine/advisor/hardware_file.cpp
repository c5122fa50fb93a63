#include "engine/advisor/hardware_file.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/advisor/calibrate.h"
#include "engine/backends/backend.h"
#include "engine/util/output_file.h"
#include "engine/util/error.h"
#include "engine/util/json_limits.h"

namespace shardlab::advisor {

namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "shardlab.hardware";

// Field readers whose errors name the file and the field's path.
struct Reader {
  std::string where;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(where + ": " + field + ": " + what);
  }
  double number(const nlohmann::json& j, const std::string& key, const std::string& path, bool required, double fallback = 0,
                bool positive = false) const {
    if (!j.contains(key)) {
      if (required) fail(path + key, "missing");
      return fallback;
    }
    const nlohmann::json& v = j.at(key);
    if (!v.is_number()) fail(path + key, "must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (positive && x == 0)) fail(path + key, positive ? "must be positive" : "must not be negative");
    return x;
  }
  std::string text(const nlohmann::json& j, const std::string& key, const std::string& path, bool required) const {
    if (!j.contains(key)) {
      if (required) fail(path + key, "missing");
      return "";
    }
    if (!j.at(key).is_string()) fail(path + key, "must be a string");
    return j.at(key).get<std::string>();
  }
  // A rate: one number for every size, or [[size, rate], ...] with ascending sizes.
  Curve curve(const nlohmann::json& v, const std::string& field) const {
    Curve c;
    if (v.is_number()) {
      if (v.get<double>() <= 0) fail(field, "must be positive");
      c.points.push_back({1.0, v.get<double>()});
      return c;
    }
    if (!v.is_array() || v.empty()) fail(field, "must be a number or a list of [size, FLOP/s] pairs");
    for (size_t i = 0; i < v.size(); ++i) {
      const nlohmann::json& p = v[i];
      const std::string at = field + "[" + std::to_string(i) + "]";
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) fail(at, "must be a [size, FLOP/s] pair");
      const double size = p[0].get<double>(), rate = p[1].get<double>();
      if (!(size > 0) || !(rate > 0)) fail(at, "size and rate must be positive");
      if (!c.points.empty() && size <= c.points.back().first) fail(at, "sizes must ascend");
      c.points.push_back({size, rate});
    }
    return c;
  }
};

const char* side_key(GemmSide s) { return s == GemmSide::Rows ? "rows" : s == GemmSide::Inner ? "inner" : "cols"; }

nlohmann::ordered_json curve_json(const Curve& c) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& [size, rate] : c.points) a.push_back({size, rate});
  return a;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("hardware profile " + path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Hardware hardware_from_json(const nlohmann::json& j, const std::string& where) {
  const Reader r{where};
  if (!j.is_object()) r.fail("(top level)", "must be a JSON object");
  if (r.text(j, "format", "", true) != kFormat) r.fail("format", std::string("must be \"") + kFormat + "\"");
  Hardware h;
  h.name = r.text(j, "name", "", true);
  h.kind = j.contains("kind") ? r.text(j, "kind", "", true) : "cpu";
  if (h.kind != "cpu" && h.kind != "gpu") r.fail("kind", "must be \"cpu\" or \"gpu\", not \"" + h.kind + "\"");
  if (j.contains("sources")) {
    if (!j.at("sources").is_array()) r.fail("sources", "must be a list of strings");
    for (const auto& s : j.at("sources")) {
      if (!s.is_string()) r.fail("sources", "must be a list of strings");
      h.sources.push_back(s.get<std::string>());
    }
  }
  h.measured = r.text(j, "measured", "", false);
  h.spread = r.number(j, "spread", "", false);
  h.shared_cores = int(r.number(j, "shared_cores", "", false));
  if (h.kind == "cpu" && h.shared_cores < 1) r.fail("shared_cores", "a CPU profile needs the cores its devices share (at least 1)");
  h.devices_per_node = int(r.number(j, "devices_per_node", "", false));
  h.memory_bytes = r.number(j, "memory_bytes", "", false);
  h.host_to_device_bytes_per_s = r.number(j, "host_to_device_bytes_per_s", "", false);
  if (j.contains("peak_flops")) {
    if (!j.at("peak_flops").is_object()) r.fail("peak_flops", "must map precisions to FLOP/s");
    for (const auto& [precision, v] : j.at("peak_flops").items()) h.peak_flops[precision] = r.number(j.at("peak_flops"), precision, "peak_flops.", true, 0, true);
  }

  if (!j.contains("rates") || !j.at("rates").is_array() || j.at("rates").empty()) r.fail("rates", "must be a non-empty list");
  for (size_t i = 0; i < j.at("rates").size(); ++i) {
    const nlohmann::json& e = j.at("rates")[i];
    const std::string path = "rates[" + std::to_string(i) + "].";
    if (!e.is_object()) r.fail(path.substr(0, path.size() - 1), "must be an object");
    DeviceRates d;
    d.devices = int(r.number(e, "devices", path, false, 1, true));
    if (!h.rates.empty() && d.devices <= h.rates.back().devices) r.fail(path + "devices", "device counts must ascend");
    if (!e.contains("gemm_flops")) r.fail(path + "gemm_flops", "missing");
    const nlohmann::json& g = e.at("gemm_flops");
    if (g.is_object()) {
      for (GemmSide s : {GemmSide::Rows, GemmSide::Inner, GemmSide::Cols}) {
        if (!g.contains(side_key(s))) r.fail(path + "gemm_flops." + side_key(s), "missing");
        d.gemm(s) = r.curve(g.at(side_key(s)), path + "gemm_flops." + side_key(s));
      }
    } else {
      d.gemm_rows = d.gemm_inner = d.gemm_cols = r.curve(g, path + "gemm_flops");
    }
    d.memory_bytes_per_s = r.number(e, "memory_bytes_per_s", path, true, 0, true);
    d.instruction_s = r.number(e, "instruction_s", path, false);
    d.run_s = r.number(e, "run_s", path, false);
    h.rates.push_back(d);
  }

  if (!j.contains("collectives") || !j.at("collectives").is_array()) r.fail("collectives", "must be a list");
  for (size_t i = 0; i < j.at("collectives").size(); ++i) {
    const nlohmann::json& e = j.at("collectives")[i];
    const std::string path = "collectives[" + std::to_string(i) + "].";
    if (!e.is_object()) r.fail(path.substr(0, path.size() - 1), "must be an object");
    CollectiveRate c;
    c.kind = r.text(e, "kind", path, true);
    if (c.kind != "all_reduce" && c.kind != "all_gather" && c.kind != "reduce_scatter" && c.kind != "all_to_all")
      r.fail(path + "kind", "must be all_reduce, all_gather, reduce_scatter or all_to_all, not \"" + c.kind + "\"");
    c.devices = int(r.number(e, "devices", path, false));
    c.group = int(r.number(e, "group", path, false));
    if (e.contains("network") && !e.at("network").is_boolean()) r.fail(path + "network", "must be true or false");
    c.network = e.value("network", false);
    c.latency_s = r.number(e, "latency_s", path, false);
    c.bus_bytes_per_s = r.number(e, "bus_bytes_per_s", path, false);
    if (e.contains("bytes_per_s") && e.at("bytes_per_s").is_array()) {
      c.by_size = r.curve(e.at("bytes_per_s"), path + "bytes_per_s");
      c.bytes_per_s = c.by_size.points.back().second;
    } else {
      c.bytes_per_s = r.number(e, "bytes_per_s", path, c.bus_bytes_per_s == 0, 0, c.bus_bytes_per_s == 0);
    }
    h.collectives.push_back(c);
  }
  return h;
}

nlohmann::ordered_json hardware_to_json(const Hardware& h) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["name"] = h.name;
  j["kind"] = h.kind;
  if (!h.sources.empty()) j["sources"] = h.sources;
  if (!h.measured.empty()) j["measured"] = h.measured;
  if (h.spread > 0) j["spread"] = h.spread;
  if (h.shared_cores > 0) j["shared_cores"] = h.shared_cores;
  if (h.devices_per_node > 0) j["devices_per_node"] = h.devices_per_node;
  if (h.memory_bytes > 0) j["memory_bytes"] = h.memory_bytes;
  if (h.host_to_device_bytes_per_s > 0) j["host_to_device_bytes_per_s"] = h.host_to_device_bytes_per_s;
  if (!h.peak_flops.empty()) j["peak_flops"] = h.peak_flops;
  j["rates"] = nlohmann::ordered_json::array();
  for (const DeviceRates& d : h.rates) {
    nlohmann::ordered_json e;
    e["devices"] = d.devices;
    e["gemm_flops"] = {{"rows", curve_json(d.gemm_rows)}, {"inner", curve_json(d.gemm_inner)}, {"cols", curve_json(d.gemm_cols)}};
    e["memory_bytes_per_s"] = d.memory_bytes_per_s;
    e["instruction_s"] = d.instruction_s;
    e["run_s"] = d.run_s;
    j["rates"].push_back(e);
  }
  j["collectives"] = nlohmann::ordered_json::array();
  for (const CollectiveRate& c : h.collectives) {
    nlohmann::ordered_json e{{"kind", c.kind}};
    if (c.devices > 0) e["devices"] = c.devices;
    if (c.group > 0) e["group"] = c.group;
    if (c.network) e["network"] = true;
    e["latency_s"] = c.latency_s;
    if (c.bus_bytes_per_s > 0) e["bus_bytes_per_s"] = c.bus_bytes_per_s;
    else if (!c.by_size.points.empty()) e["bytes_per_s"] = curve_json(c.by_size);
    else e["bytes_per_s"] = c.bytes_per_s;
    j["collectives"].push_back(e);
  }
  return j;
}

Hardware load_hardware_file(const std::string& path) {
  const std::string text = read_text(path);
  return hardware_from_json(util::parse_json_limited(text, "hardware profile " + path), "hardware profile " + path);
}

void save_hardware_file(const Hardware& h, const std::string& path) {
  const fs::path file(path);
  if (file.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec) throw Error("hardware profile " + path + ": cannot create its folder: " + ec.message());
  }
  util::write_output_file(file, hardware_to_json(h).dump(2) + "\n", "hardware profile");
}

std::string user_profile_dir() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return (fs::path(x) / "shardlab" / "hardware").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".config" / "shardlab" / "hardware").string();
}

std::string saved_calibration_path() { return (fs::path(user_profile_dir()) / "this-machine.json").string(); }

Hardware find_hardware(const std::string& name) {
  if (name.find('/') != std::string::npos || (name.size() > 5 && name.ends_with(".json"))) return load_hardware_file(name);
  const fs::path user = fs::path(user_profile_dir()) / (name + ".json");
  std::error_code ec;
  if (fs::is_regular_file(user, ec)) return load_hardware_file(user.string());
  std::string known;
  for (const auto& [id, text] : bundled_profiles()) {
    if (id == name) return hardware_from_json(util::parse_json_limited(text, "bundled hardware profile " + id), "bundled hardware profile " + id);
    known += (known.empty() ? "" : ", ") + id;
  }
  throw Error("hardware profile '" + name + "': no such file, no " + user.string() + ", and no bundled profile of that name (there are " +
              known + ")");
}

Hardware this_machine(backends::Backend& cpu, int devices, bool* calibrated_now) {
  const std::vector<backends::DeviceInfo> infos = cpu.devices();
  const std::string name = infos.empty() ? "this machine" : infos.front().name;
  if (calibrated_now) *calibrated_now = false;
  try {
    std::error_code ec;
    if (fs::is_regular_file(saved_calibration_path(), ec)) {
      Hardware saved = load_hardware_file(saved_calibration_path());
      if (saved.kind == "cpu" && saved.name == name && saved.shared_cores == cpu.threads() && saved.rates.back().devices >= std::min(devices, CalibrateOptions{}.max_devices))
        return saved;
    }
  } catch (const Error&) {
    // A saved profile that no longer reads is measured again and replaced.
  }
  Hardware h = calibrate(cpu);  // 1 to 8 devices; more are scaled from 8 (Hardware::rates_for)
  if (calibrated_now) *calibrated_now = true;
  try {
    save_hardware_file(h, saved_calibration_path());
  } catch (const Error&) {
    // A read-only home still gets its advice; the next run measures again.
  }
  return h;
}

}  // namespace shardlab::advisor
