// A device mesh: named axes with sizes, devices numbered in row-major order over it (the layout of
// jax's create_device_mesh for one host), e.g. ('data', 'model') = (2, 4) puts devices 0-3 in row 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardlab::sharding {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

class Mesh {
 public:
  Mesh() = default;  // one device, no axes
  explicit Mesh(std::vector<MeshAxis> axes);  // throws Error on empty/duplicate names or sizes < 1

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int64_t device_count() const;
  int axis_index(const std::string& name) const;  // -1 if absent
  int64_t axis_size(const std::string& name) const;
  // Coordinates of a device along every axis, and back.
  std::vector<int64_t> coords(int64_t device) const;
  int64_t device_at(const std::vector<int64_t>& coords) const;
  // The devices that differ from `device` only along `axes` (its group for a collective over
  // those axes), in rank order: mixed radix over `axes`, first axis major.
  std::vector<int> group(int64_t device, const std::vector<std::string>& axes) const;
  // "data=2,model=4"
  std::string str() const;

 private:
  std::vector<MeshAxis> axes_;
};

// "data=2,model=4"; errors name the text and what is wrong.
Mesh parse_mesh(const std::string& text);
// The project's "mesh": {"axes": {"data": 2, "model": 4}}; null or absent gives one device.
Mesh mesh_from_json(const nlohmann::ordered_json& j, const std::string& where);
nlohmann::ordered_json mesh_to_json(const Mesh& m);
// The device count must match the mesh: a clear error naming both when it does not.
void check_device_count(const Mesh& m, int64_t devices);
// A run over `processes` processes holds the same number of whole devices in each: an Error naming
// the mesh and both counts when they do not divide (backends/processes.h has the device order).
void check_process_count(const Mesh& m, int64_t processes);

}  // namespace shardlab::sharding
