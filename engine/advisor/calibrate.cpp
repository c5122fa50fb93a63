#include "engine/advisor/calibrate.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <vector>

#include "engine/advisor/step_cost.h"
#include "engine/backends/backend.h"
#include "engine/plan/memory_plan.h"
#include "engine/sharding/mesh.h"

namespace shardlab::advisor {

namespace {

using ir::Op;

constexpr int64_t kGemmLarge = 1024;                      // the two large dimensions of a GEMM probe
constexpr double kGemmSizes[] = {1, 8, 64, 512};          // its smallest dimension
// Below 64, a probe's GEMM streams its large operand (4 MiB) more than it computes. A step's large
// operands come from memory, and one probe's, run again and again, would stay in the last-level
// cache on few devices: such a probe runs enough products, each on operands of its own, for the
// devices to touch this many bytes (twice a 32 MiB last-level cache) between two uses of one.
constexpr int64_t kGemmStreamBytes = int64_t(64) << 20;
constexpr int64_t kStreamElems = int64_t(1) << 21;        // 8 MiB per array per device: beyond the caches
// Elements of a collective probe's whole array: 8 KiB (its latency), 1 MiB (in the caches) and
// 16 MiB (beyond them, like a layer's weights).
constexpr int64_t kCollectiveSizes[] = {2048, int64_t(1) << 18, int64_t(1) << 22};
constexpr int kChain = 128;                               // tiny instructions in the fixed-cost probe
constexpr int kCollectiveChain = 16;                      // smallest collectives in the latency probe
constexpr int64_t kBetweenElems = int64_t(1) << 14;       // 64 KiB a device works on between two of them

sharding::Mesh mesh_of(int devices, int group) {
  if (devices == 1) return sharding::Mesh();
  if (group <= 1 || group == devices) return sharding::Mesh({{"g", devices}});
  return sharding::Mesh({{"rest", devices / group}, {"g", group}});
}

// Loads `p` on every device of `mesh` with its inputs and state set to 0.5 (a probe must not run
// on whatever the arena held: denormals or NaNs change the speed).
// With `keep_all`, every instruction's output keeps memory of its own (none is written where another
// was).
std::unique_ptr<backends::Executable> load(backends::Backend& b, const ir::Program& p, const sharding::Mesh& mesh,
                                           bool keep_all = false) {
  std::vector<int> keep;
  for (const ir::Instr& ins : p.instrs)
    if (keep_all || &ins == &p.instrs.back())
      for (int v : ins.out) keep.push_back(v);
  backends::LoadOptions options;
  options.what = "the calibration probe";
  auto exe = b.load(p, plan::plan_memory(p, keep), mesh, options);
  for (int v = 0; v < int(p.values.size()); ++v) {
    if (p.values[size_t(v)].kind == ir::ValueKind::Temp) continue;
    const std::vector<float> host(size_t(numel(p.shape(v))), 0.5f);
    for (int d = 0; d < exe->num_devices(); ++d) exe->write(d, v, host.data());
  }
  return exe;
}

// Rounds in which a device count's probes run in turns; each probe's time is the median of its
// rounds'. On a shared virtual machine one probe's runs can all fall in a slow spell of a second or
// two: a single round put 8 devices' 512-row GEMM at 90 GFLOP/s where its neighbours ran 120-165,
// and the advisor then over-predicted deep-mlp's layouts by 20-40%.
constexpr int kRounds = 3;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Median seconds of one run, after a warm-up: at least 3 runs and 10 ms of them.
double time_runs(backends::Executable& exe) {
  backends::RunContext ctx;
  ctx.learning_rate = 1e-3;
  exe.run(ctx);
  std::vector<double> times;
  double total = 0;
  while ((times.size() < 3 || total < 0.01) && times.size() < 64) {
    const auto t0 = std::chrono::steady_clock::now();
    exe.run(ctx);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    total += times.back();
  }
  return median(std::move(times));
}

double time_program(backends::Backend& b, const ir::Program& p, const sharding::Mesh& mesh, bool keep_all = false) {
  auto exe = load(b, p, mesh, keep_all);
  return time_runs(*exe);
}

// Median seconds `with` takes beyond `without`, the two run in turns (at least 9 pairs and 100 ms),
// so that a slow spell of the machine falls on both.
double time_difference(backends::Backend& b, const ir::Program& with, const ir::Program& without, const sharding::Mesh& mesh) {
  auto a = load(b, with, mesh), z = load(b, without, mesh);
  backends::RunContext ctx;
  ctx.learning_rate = 1e-3;
  a->run(ctx);
  z->run(ctx);
  std::vector<double> diffs;
  double total = 0;
  auto seconds = [&](backends::Executable& exe) {
    const auto t0 = std::chrono::steady_clock::now();
    exe.run(ctx);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  while ((diffs.size() < 9 || total < 0.1) && diffs.size() < 64) {
    const double ta = seconds(*a), tz = seconds(*z);
    diffs.push_back(ta - tz);
    total += ta + tz;
  }
  return median(std::move(diffs));
}

// A probe timed in rounds: its program, loaded afresh each round.
struct Probe {
  std::string what;  // for the progress line
  ir::Program program;
  bool keep_all = false;
};

// Each probe's median seconds over kRounds rounds; in each round every probe runs once, in turns.
// Each probe's relative spread over its rounds, (slowest - fastest) / median, goes to `spreads`.
std::vector<double> time_in_rounds(backends::Backend& b, const std::vector<Probe>& probes, const sharding::Mesh& mesh,
                                   const std::function<void(const std::string&)>& step, std::vector<double>& spreads) {
  std::vector<std::vector<double>> times(probes.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t i = 0; i < probes.size(); ++i) {
      step(probes[i].what);
      times[i].push_back(time_program(b, probes[i].program, mesh, probes[i].keep_all));
    }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
    const double fastest = *lo, slowest = *hi, mid = median(t);
    if (mid > 0) spreads.push_back((slowest - fastest) / mid);
    medians.push_back(mid);
  }
  return medians;
}

// `copies` independent products of one shape, each on operands of its own.
ir::Program gemm_probe(GemmSide side, int64_t small, int copies) {
  const int64_t L = kGemmLarge;
  ir::Program p;
  for (int c = 0; c < copies; ++c) {
    const std::string k = std::to_string(c);
    ir::Attrs attrs;
    int a = 0, w = 0;
    switch (side) {
      case GemmSide::Rows:  // a small batch through a layer: (s x L) @ (L x L)
        a = p.add_value("x" + k, {small, L}, ir::ValueKind::Input);
        w = p.add_value("w" + k, {L, L}, ir::ValueKind::Param);
        break;
      case GemmSide::Inner:  // a weight gradient over a small batch: (s x L)^T @ (s x L)
        a = p.add_value("x" + k, {small, L}, ir::ValueKind::Input);
        w = p.add_value("dy" + k, {small, L}, ir::ValueKind::Input);
        attrs.trans_a = true;
        break;
      case GemmSide::Cols:  // a narrow layer: (L x L) @ (L x s)
        a = p.add_value("x" + k, {L, L}, ir::ValueKind::Input);
        w = p.add_value("w" + k, {L, small}, ir::ValueKind::Param);
        break;
    }
    p.apply1(Op::MatMul, {a, w}, attrs);
  }
  return p;
}

// How many products a GEMM probe of smallest dimension `small` runs on `devices` devices.
int gemm_copies(double small, int devices) {
  if (small >= 64) return 1;
  const int64_t large = kGemmLarge * kGemmLarge * int64_t(sizeof(float));
  return int(std::max<int64_t>(1, kGemmStreamBytes / (large * devices)));
}

// The streaming primitives a step is made of besides its GEMMs: an elementwise op, a ReLU gradient
// and an Adam update, on arrays beyond the caches.
ir::Program stream_probe() {
  ir::Program p;
  const Shape s{kStreamElems};
  const int x = p.add_value("x", s, ir::ValueKind::Input), g = p.add_value("g", s, ir::ValueKind::Input);
  const int w = p.add_value("w", s, ir::ValueKind::Param);
  const int m = p.add_value("m", s, ir::ValueKind::OptState), v = p.add_value("v", s, ir::ValueKind::OptState);
  const int y = p.apply1(Op::Add, {x, g});
  const int z = p.apply1(Op::ReluGrad, {x, y});
  p.apply(Op::AdamUpdate, {w, z, m, v});
  p.apply1(Op::Relu, {x});  // keeps the last instruction's output for the plan
  return p;
}

ir::Program chain_probe(int length) {
  ir::Program p;
  int x = p.add_value("x", {16}, ir::ValueKind::Input);
  for (int i = 0; i < length; ++i) x = p.apply1(Op::Relu, {x});
  return p;
}

// `count` collectives of one kind, each on its own input; with `between`, each followed by an
// elementwise op over `between` elements of the device's own, as a step's layers run between its
// collectives (with `collectives` false, those ops alone).
ir::Program collective_probe(const std::string& kind, int group, int64_t elems, int count = 1, int64_t between = 0,
                             bool collectives = true) {
  ir::Program p;
  ir::Attrs a;
  a.mesh_axes = {"g"};
  a.group_size = group;
  int work = between > 0 ? p.add_value("work", {between}, ir::ValueKind::Input) : -1;
  for (int i = 0; i < count; ++i) {
    if (work >= 0) work = p.apply1(Op::Relu, {work});
    if (!collectives) continue;
    const std::string x = std::to_string(i).insert(0, 1, 'x');
    if (kind == "all_reduce") {
      p.apply1(Op::AllReduce, {p.add_value(x, {elems}, ir::ValueKind::Input)}, a);
    } else if (kind == "all_gather") {
      p.apply1(Op::AllGather, {p.add_value(x, {elems / group}, ir::ValueKind::Input)}, a);
    } else if (kind == "reduce_scatter") {
      p.apply1(Op::ReduceScatter, {p.add_value(x, {elems}, ir::ValueKind::Input)}, a);
    } else {  // all_to_all: rows split before, columns after
      ir::Attrs b = a;
      b.split_dim = 0;
      b.dim = 1;
      p.apply1(Op::AllToAll, {p.add_value(x, {elems / 256, 256}, ir::ValueKind::Input)}, b);
    }
  }
  return p;
}

double program_bytes(const ir::Program& p, bool write_allocate) {
  double b = 0;
  for (const ir::Instr& ins : p.instrs) b += instruction_bytes(p, ins, write_allocate);
  return b;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::localtime(&now));
  return buf;
}

}  // namespace

Hardware calibrate(backends::Backend& backend, const CalibrateOptions& options) {
  std::vector<int> counts;
  for (int n = 1; n <= std::max(1, options.max_devices); n *= 2) counts.push_back(n);
  // Steps, for the progress fraction: per count and round, 3 GEMM sides x sizes, the stream, two
  // chains; per count above 1 and group size, 4 collectives at each size in each round, and a chain.
  double total = 0, done = 0;
  for (int n : counts) {
    total += kRounds * (3 * std::size(kGemmSizes) + 3);
    for (int g = 2; g <= n; g *= 2) total += 4 * (kRounds * std::size(kCollectiveSizes) + 1);
  }
  auto step = [&](const std::string& what) {
    if (options.progress) options.progress(what, done / total);
    done += 1;
  };

  Hardware hw;
  const std::vector<backends::DeviceInfo> devices = backend.devices();
  hw.name = devices.empty() ? "this machine" : devices.front().name;
  hw.kind = backend.kind() == backends::DeviceKind::Cpu ? "cpu" : "gpu";
  hw.shared_cores = hw.kind == "cpu" ? backend.threads() : 0;
  if (hw.kind == "gpu" && !devices.empty()) hw.memory_bytes = double(devices.front().memory_bytes);
  hw.measured = "shardlab-cli calibrate on " + today() + ", " +
                (hw.kind == "cpu" ? std::to_string(hw.shared_cores) + " cores shared by 1-" + std::to_string(counts.back()) + " devices"
                                  : std::string("GPU"));

  const GemmSide sides[] = {GemmSide::Rows, GemmSide::Inner, GemmSide::Cols};
  std::vector<double> spreads;
  for (int n : counts) {
    const sharding::Mesh mesh = mesh_of(n, 1);
    const std::string on = " on " + std::to_string(n) + (n == 1 ? " device" : " devices");
    // Probes 0 and 1: the fixed costs; then the GEMMs, side by side and size by size; last the stream.
    std::vector<Probe> probes;
    probes.push_back({"fixed costs" + on, chain_probe(1)});
    probes.push_back({"fixed costs" + on, chain_probe(kChain + 1)});
    for (GemmSide side : sides)
      for (double s : kGemmSizes) probes.push_back({"GEMM" + on, gemm_probe(side, int64_t(s), gemm_copies(s, n)), true});
    probes.push_back({"memory bandwidth" + on, stream_probe()});
    const std::vector<double> t = time_in_rounds(backend, probes, mesh, step, spreads);

    DeviceRates r;
    r.devices = n;
    r.instruction_s = std::max(0.0, (t[1] - t[0]) / kChain);
    r.run_s = std::max(0.0, t[0] - r.instruction_s);
    size_t at = 2;
    for (GemmSide side : sides) {
      Curve& curve = side == GemmSide::Rows ? r.gemm_rows : side == GemmSide::Inner ? r.gemm_inner : r.gemm_cols;
      for (double s : kGemmSizes) {
        const int copies = gemm_copies(s, n);
        const double flops = 2.0 * s * double(kGemmLarge) * double(kGemmLarge) * copies;
        curve.points.push_back({s, flops / std::max(1e-9, t[at++] - r.run_s - copies * r.instruction_s)});
      }
    }
    const ir::Program& stream = probes[at].program;
    const double t_stream = std::max(1e-9, t[at] - r.run_s - double(stream.instrs.size()) * r.instruction_s);
    r.memory_bytes_per_s = program_bytes(stream, hw.kind == "cpu") / t_stream;
    hw.rates.push_back(r);

    for (int g = 2; g <= n; g *= 2)
      for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
        const std::string what = std::string(kind) + " over " + std::to_string(g) + on;
        const sharding::Mesh cmesh = mesh_of(n, g);
        std::vector<Probe> sized;
        for (int64_t elems : kCollectiveSizes) sized.push_back({what, collective_probe(kind, g, elems)});
        std::vector<double> ct = time_in_rounds(backend, sized, cmesh, step, spreads);
        for (double& x : ct) x = std::max(1e-9, x - r.run_s);
        // The latency as a step pays it: a chain of the smallest, each after a little work of the
        // device's own, less the same work without them. Where devices outnumber cores, each
        // collective makes every device give up and win back a core, and refill its caches after
        // the others ran; a lone probe, or a chain of bare collectives, sees a third of that. (One
        // probe's time less the run's fixed cost also swings by several times between runs.)
        step(what);
        const double extra = time_difference(backend, collective_probe(kind, g, kCollectiveSizes[0], kCollectiveChain, kBetweenElems),
                                             collective_probe(kind, g, kCollectiveSizes[0], kCollectiveChain, kBetweenElems, false), cmesh);
        CollectiveRate c;
        c.kind = kind;
        c.devices = n;
        c.group = g;
        c.latency_s = std::max(1e-7, extra / double(kCollectiveChain));
        // Each larger array gives the rate at its size: its time beyond the smallest one's.
        for (size_t i = 1; i < ct.size(); ++i) {
          const double bytes = double(kCollectiveSizes[i]) * 4;
          c.by_size.points.push_back({bytes, bytes / std::max(1e-9, ct[i] - ct[0])});
        }
        c.bytes_per_s = c.by_size.points.back().second;
        hw.collectives.push_back(c);
      }
  }
  hw.peak_flops["float32"] = hw.gemm_flops(1);
  if (!spreads.empty()) hw.spread = median(spreads);
  hw.host_to_device_bytes_per_s = hw.kind == "cpu" ? hw.rates.front().memory_bytes_per_s : 0;
  if (options.progress) options.progress("done", 1.0);
  return hw;
}

}  // namespace shardlab::advisor
