#include "engine/sharding/visualize.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/util/error.h"

namespace shardlab::sharding {

namespace {

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string center(const std::string& s, size_t width) {
  const size_t pad = width > s.size() ? width - s.size() : 0;
  return std::string(pad / 2, ' ') + s + std::string(pad - pad / 2, ' ');
}

std::string axes_label(const PartitionSpec& spec, size_t dim, int64_t size) {
  std::string axes;
  for (const std::string& a : spec.axes_of(dim)) axes += (axes.empty() ? "" : "+") + a;
  return "dim " + std::to_string(dim) + " (" + std::to_string(size) + ")" + (axes.empty() ? ": replicated" : ": " + axes);
}

}  // namespace

std::string render_sharding(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, int rows, int cols,
                            const std::string& platform, int processes) {
  check_process_count(mesh, processes);
  const int64_t per_process = mesh.device_count() / processes;
  validate(spec, shape, mesh, "shown array");
  if (shape.empty()) throw Error("a scalar has no blocks to draw");
  const bool one_d = shape.size() == 1;
  const size_t rd = one_d ? 0 : size_t(rows), cd = one_d ? 0 : size_t(cols);
  if (!one_d && (rd >= shape.size() || cd >= shape.size() || rd == cd))
    throw Error("--dims " + std::to_string(rows) + "," + std::to_string(cols) + ": pick two different dimensions of an array of rank " +
                std::to_string(shape.size()));
  const int64_t nr = one_d ? 1 : shards_along(spec, rd, mesh), nc = shards_along(spec, cd, mesh);
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> cells;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    Block b = device_block(spec, shape, mesh, d);
    cells[{one_d ? 0 : b.index[rd], b.index[cd]}].insert(d);
  }
  std::vector<std::vector<std::string>> label(static_cast<size_t>(nr), std::vector<std::string>(static_cast<size_t>(nc)));
  size_t width = 0;
  for (auto& [rc, devs] : cells) {
    std::string s = platform + " ";
    bool first = true;
    for (int64_t d : devs) {
      if (!first) s += ',';
      s += std::to_string(d);
      first = false;
    }
    if (processes > 1) {
      std::set<int64_t> procs;
      for (int64_t d : devs) procs.insert(d / per_process);
      s += procs.size() == 1 ? " (process " : " (processes ";
      first = true;
      for (int64_t p : procs) {
        if (!first) s += ',';
        s += std::to_string(p);
        first = false;
      }
      s += ')';
    }
    label[size_t(rc.first)][size_t(rc.second)] = s;
    width = std::max(width, s.size());
  }
  width += 4;
  std::string out;
  out += "columns: " + axes_label(spec, cd, shape[cd]) + "\n";
  if (!one_d) out += "rows:    " + axes_label(spec, rd, shape[rd]) + "\n";
  for (size_t i = 0; i < shape.size(); ++i)
    if (i != rd && i != cd && !spec.axes_of(i).empty())
      out += "also split: " + axes_label(spec, i, shape[i]) + " (cells list the devices of every block along it)\n";
  const std::string bar = repeat("─", width);
  auto line = [&](const char* l, const char* m, const char* r) {
    std::string s = l;
    for (int64_t c = 0; c < nc; ++c) s += bar + (c + 1 < nc ? m : r);
    return s + "\n";
  };
  out += line("┌", "┬", "┐");
  for (int64_t r = 0; r < nr; ++r) {
    std::string row = "│";
    for (int64_t c = 0; c < nc; ++c) row += center(label[size_t(r)][size_t(c)], width) + "│";
    out += row + "\n";
    out += r + 1 < nr ? line("├", "┼", "┤") : line("└", "┴", "┘");
  }
  return out;
}

}  // namespace shardlab::sharding
