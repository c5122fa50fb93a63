// The layout advisor (engine/advisor): its candidates' memory is their partitioned plans' (one model
// with the design check and a run), what does not fit never ranks above what does, a dimension that
// does not divide is a reason rather than a crash, and the cost model's turns on shared cores.
#include <QtTest>

#include <algorithm>

#include "engine/advisor/advisor.h"
#include "engine/advisor/calibrate.h"
#include "engine/advisor/calibration_check.h"
#include "engine/advisor/gpu_worth.h"
#include "engine/advisor/hardware_file.h"
#include "engine/advisor/step_cost.h"
#include "engine/backends/backend.h"
#include "engine/ir/program.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/presets.h"
#include "tests/engine/test_support.h"

using namespace shardlab;

namespace {

const std::string kProjects = SHARDLAB_SOURCE_DIR "/projects/";

// One device's rates on a machine of `cores` cores with `devices` of them running at once.
advisor::DeviceRates rates(int devices, double gemm, double bandwidth) {
  advisor::DeviceRates r;
  r.devices = devices;
  r.gemm_rows.points = {{1, gemm / 50}, {64, gemm / 2}, {512, gemm}};
  r.gemm_inner = r.gemm_cols = r.gemm_rows;
  r.memory_bytes_per_s = bandwidth;
  r.instruction_s = 1e-6;
  r.run_s = 30e-6;
  return r;
}

// A fixed machine, so the ranking does not depend on this one's timing: 2 cores of 100 GFLOP/s.
advisor::Hardware two_cores() {
  advisor::Hardware h;
  h.name = "test machine";
  h.shared_cores = 2;
  h.rates = {rates(1, 200e9, 20e9), rates(2, 100e9, 10e9)};
  for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})
    h.collectives.push_back({kind, 2, 2, false, 40e-6, 4e9});
  return h;
}

project::Project load(const std::string& name) { return project::load_project(kProjects + name + ".shardlab.json"); }

}  // namespace

class TestAdvisor : public QObject {
  Q_OBJECT
 private slots:
  void memoryPerDeviceIsEachCandidatesPartitionedPlan() {
    const project::Project p = load("deep-mlp-small");
    const auto ranked = advisor::advise(p, 8, two_cores(), 1e12);
    const graph::GraphReport report = project::analyze_project(p);
    int runnable = 0;
    for (const advisor::Candidate& c : ranked) {
      if (!c.runs()) continue;
      ++runnable;
      const sharding::ShardingReport r =
          sharding::analyze_sharding(p, report, sharding::parse_mesh(c.mesh), sharding::parse_rules(c.rules));
      QVERIFY2(r.plan, c.mesh.c_str());
      QCOMPARE(c.bytes_per_device, double(r.plan->memory.total_bytes()));
    }
    QVERIFY(runnable >= 5);  // data parallel, FSDP, Megatron and the 2-D rules on several meshes
  }
  void everyStrategyIsTried() {
    const auto ranked = advisor::advise(load("deep-mlp-small"), 8, two_cores(), 1e12);
    for (const char* s : {"data parallel", "FSDP", "Megatron"})
      QVERIFY2(std::any_of(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy.find(s) != std::string::npos; }), s);
    // The 2-D rules split 'hidden', which dot-relu-dot has (deep-mlp-small's widths are 'mlp').
    const auto two_d = advisor::advise(load("dot-relu-dot"), 8, two_cores(), 1e12);
    QVERIFY(std::any_of(two_d.begin(), two_d.end(), [&](const advisor::Candidate& c) { return c.strategy.find("2-D (hidden -> model)") != std::string::npos; }));
    QVERIFY(std::none_of(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy.find("2-D") != std::string::npos; }));
    // Both data=8 and two-axis meshes.
    QVERIFY(std::any_of(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) { return c.mesh == "data=4,model=2"; }));
  }
  // A model with a Repeat gets pipeline candidates, stages dividing its layers with data parallelism
  // beside them, each with the microbatches it runs (the plan's memory is at that count); a model
  // without one gets none.
  void aRepeatGetsPipelineCandidates() {
    const project::Project p = load("dot-relu-dot");
    const graph::GraphReport report = project::analyze_project(p);
    std::vector<std::string> meshes;
    for (const advisor::Candidate& c : advisor::advise(p, 8, two_cores(), 1e12)) {
      if (c.strategy.find("pipeline") == std::string::npos) {
        QCOMPARE(c.microbatches, int64_t(0));
        continue;
      }
      meshes.push_back(c.mesh);
      QVERIFY2(c.runs(), c.error.c_str());
      QVERIFY2(c.rules.find("layer=stage") != std::string::npos, c.rules.c_str());
      const int64_t stages = sharding::parse_mesh(c.mesh).axis_size("stage");
      QVERIFY2(c.microbatches >= stages && p.training.batch_size % c.microbatches == 0, c.mesh.c_str());
      project::Project q = p;
      q.training.accumulate = c.microbatches;
      const sharding::ShardingReport r =
          sharding::analyze_sharding(q, report, sharding::parse_mesh(c.mesh), sharding::parse_rules(c.rules));
      QVERIFY2(r.plan && r.plan->pipeline.on(), c.mesh.c_str());
      QCOMPARE(c.bytes_per_device, double(r.plan->memory.total_bytes()));
      QVERIFY(c.prediction.step_s > 0);
    }
    std::sort(meshes.begin(), meshes.end());
    QCOMPARE(meshes, (std::vector<std::string>{"stage=2,data=4", "stage=4,data=2"}));  // 4 layers: 2 or 4 stages
    for (const advisor::Candidate& c : advisor::advise(load("deep-mlp-small"), 8, two_cores(), 1e12))
      QVERIFY2(c.strategy.find("pipeline") == std::string::npos, c.mesh.c_str());
  }

  // Every candidate names every logical axis the model lays out, those of arrays made inside a
  // layer too (attention's weights over 'keys'): applying one leaves no "has no rule" warning.
  void candidatesLeaveNoNameWithoutARule() {
    const project::Project p = load("vit-fashion");
    const graph::GraphReport report = project::analyze_project(p);
    int checked = 0;
    for (const advisor::Candidate& c : advisor::advise(p, 8, two_cores(), 1e12)) {
      if (!c.runs()) continue;
      QVERIFY2(c.rules.find("keys=") != std::string::npos, c.rules.c_str());
      const sharding::ShardingReport r =
          sharding::analyze_sharding(p, report, sharding::parse_mesh(c.mesh), sharding::parse_rules(c.rules));
      for (const Diagnostic& d : r.diagnostics) QVERIFY2(d.code != "layout.no_rule", (c.strategy + ": " + d.message).c_str());
      ++checked;
    }
    QVERIFY(checked >= 5);
  }

  void whatFitsIsRankedFirstThenByPredictedStep() {
    const project::Project p = load("deep-mlp-small");
    const auto all = advisor::advise(p, 8, two_cores(), 1e12);
    std::vector<double> sizes;
    for (const advisor::Candidate& c : all)
      if (c.runs()) sizes.push_back(c.bytes_per_device);
    std::sort(sizes.begin(), sizes.end());
    // A capacity between the smallest and the largest plan: some fit, some do not.
    const double capacity = (sizes.front() + sizes.back()) / 2;
    const auto ranked = advisor::advise(p, 8, two_cores(), capacity);
    bool seen_unfit = false, seen_unrunnable = false;
    double last = 0;
    int fitting = 0, unfit = 0;
    for (const advisor::Candidate& c : ranked) {
      if (!c.runs()) {
        seen_unrunnable = true;
        continue;
      }
      QVERIFY2(!seen_unrunnable, "a runnable candidate ranks below one that cannot run");
      if (!c.fits) {
        seen_unfit = true;
        ++unfit;
        continue;
      }
      QVERIFY2(!seen_unfit, "a candidate that fits ranks below one that does not");
      QVERIFY(c.prediction.step_s >= last);
      last = c.prediction.step_s;
      ++fitting;
    }
    QVERIFY(fitting > 0);
    QVERIFY(unfit > 0);
  }
  void anIndivisibleDimensionIsAReasonNotACrash() {
    const auto ranked = advisor::advise(load("fashion-mlp"), 3, two_cores(), 1e12);
    const auto data3 = std::find_if(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) { return c.mesh == "data=3"; });
    QVERIFY(data3 != ranked.end());
    QVERIFY(!data3->runs());
    VERIFY_CONTAINS(QString::fromStdString(data3->error), "does not divide");
    VERIFY_CONTAINS(QString::fromStdString(data3->error), "2 or 4");
  }
  void oneDeviceIsOneCandidate() {
    const auto ranked = advisor::advise(load("fashion-mlp"), 1, two_cores(), 1e12);
    QCOMPARE(ranked.size(), size_t(1));
    QCOMPARE(ranked[0].strategy, std::string("one device"));
    QVERIFY(ranked[0].runs() && ranked[0].fits);
    QVERIFY(ranked[0].prediction.step_s > 0);
    QCOMPARE(ranked[0].prediction.communication_s, 0.0);
  }
  // Seed 002's project already uses seed 002's rules on 8 devices: one candidate with both names.
  void theProjectsOwnLayoutIsACandidate() {
    const auto ranked = advisor::advise(load("dot-relu-dot"), 8, two_cores(), 1e12);
    QVERIFY(std::any_of(ranked.begin(), ranked.end(),
                        [](const advisor::Candidate& c) { return c.strategy.find("the project's own") != std::string::npos; }));
  }
  // Devices beyond the shared cores take turns; with cores for every device they all run at once.
  void devicesBeyondTheCoresTakeTurns() {
    const project::Project p = load("deep-mlp-small");
    advisor::Hardware many = two_cores();
    many.shared_cores = 8;
    many.rates.push_back(rates(8, 100e9, 10e9));  // the same rate per device as two on two cores
    const auto on2 = advisor::advise(p, 8, two_cores(), 1e12);
    const auto on8 = advisor::advise(p, 8, many, 1e12);
    const auto dp = [](const std::vector<advisor::Candidate>& v) {
      return std::find_if(v.begin(), v.end(), [](const advisor::Candidate& c) { return c.strategy == "data parallel"; });
    };
    QVERIFY(dp(on2) != on2.end() && dp(on8) != on8.end());
    QVERIFY(dp(on2)->prediction.compute_s > 3.5 * dp(on8)->prediction.compute_s);
    QVERIFY(dp(on2)->prediction.communication_s > 0);
  }
  // A pipeline's bubble idles a GPU but not a core shared by virtual devices: there the stage
  // waiting lends its core to the others, and the step is the stages' mean work, not the busiest
  // stage stretched by (M+S-1)/M. The same plan on devices of their own (a GPU profile with the same
  // rates) pays the stretch.
  void aPipelinesBubbleLendsSharedCores() {
    const project::Project p = load("dot-relu-dot");
    advisor::Hardware shared = two_cores();
    // A CPU counts an output's bytes twice and a GPU once: with memory free, the two differ only in
    // how their devices share cores.
    for (advisor::DeviceRates& r : shared.rates) r.memory_bytes_per_s = 1e15;
    advisor::Hardware own = shared;
    own.kind = "gpu";
    own.shared_cores = 0;
    own.rates = {shared.rates_for(8)};  // each device as fast as a shared core's share
    const auto on_shared = advisor::advise(p, 8, shared, 1e12), on_own = advisor::advise(p, 8, own, 1e12);
    int pipelines = 0;
    for (const advisor::Candidate& s : on_shared) {
      if (s.strategy.find("pipeline") == std::string::npos) continue;
      const auto o = std::find_if(on_own.begin(), on_own.end(), [&](const advisor::Candidate& c) { return c.mesh == s.mesh && c.rules == s.rules; });
      QVERIFY2(o != on_own.end(), s.mesh.c_str());
      const int64_t stages = sharding::parse_mesh(s.mesh).axis_size("stage");
      const double stretch = double(s.microbatches + stages - 1) / double(s.microbatches);
      // dot-relu-dot's stages carry nearly equal work (the ends add the input and the loss), so the
      // mean is close to the busiest stage unstretched.
      QVERIFY2(std::abs(o->prediction.step_s / s.prediction.step_s - stretch) < 0.05 * stretch,
               (s.mesh + ": " + std::to_string(o->prediction.step_s / s.prediction.step_s) + " vs " + std::to_string(stretch)).c_str());
      ++pipelines;
    }
    QCOMPARE(pipelines, 2);
  }
  // A matmul runs at its smallest dimension's rate, slowed where another dimension is small too:
  // each other small dimension adds the time per FLOP its own curve loses against its large sizes.
  void aSecondSmallDimensionSlowsAMatmul() {
    advisor::Hardware h = two_cores();
    h.rates = {rates(1, 100e9, 1e15)};  // 1e15 B/s: every matmul here is bound by its FLOPs
    auto compute_s = [&](int64_t m, int64_t k, int64_t n) {
      ir::Program p;
      const int x = p.add_value("x", {m, k}, ir::ValueKind::Input), w = p.add_value("w", {k, n}, ir::ValueKind::Param);
      p.apply1(ir::Op::MatMul, {x, w});
      return advisor::predict(p, sharding::Mesh(), h).compute_s;
    };
    auto flops = [](int64_t m, int64_t k, int64_t n) { return 2.0 * double(m) * double(k) * double(n); };
    // 64 rows, the rest large: the 64-row rate, 50 GFLOP/s.
    QCOMPARE(compute_s(64, 2048, 2048) / flops(64, 2048, 2048), 1 / 50e9);
    // 64 rows and 64 columns: 1/50 + (1/50 - 1/100) ns per FLOP, 33.3 GFLOP/s.
    QCOMPARE(compute_s(64, 2048, 64) / flops(64, 2048, 64), 1 / 50e9 + (1 / 50e9 - 1 / 100e9));
    // A large dimension adds nothing, whichever side it is on.
    QCOMPARE(compute_s(2048, 2048, 64) / flops(2048, 2048, 64), 1 / 50e9);
  }
  // A CPU reads an output's cache lines in before it writes them (write-allocate), so an output
  // moves twice; a GPU's move once; an optimizer update writes in place on either.
  void aCpuOutputMovesTwice() {
    const int64_t n = int64_t(1) << 20;
    const double array = 4.0 * double(n);
    ir::Program p;
    const int x = p.add_value("x", {n}, ir::ValueKind::Input), g = p.add_value("g", {n}, ir::ValueKind::Input);
    const int w = p.add_value("w", {n}, ir::ValueKind::Param);
    const int m = p.add_value("m", {n}, ir::ValueKind::OptState), v = p.add_value("v", {n}, ir::ValueKind::OptState);
    p.apply1(ir::Op::Add, {x, g});
    p.apply(ir::Op::AdamUpdate, {w, g, m, v});
    QCOMPARE(advisor::instruction_bytes(p, p.instrs[0], true), 4 * array);
    QCOMPARE(advisor::instruction_bytes(p, p.instrs[0], false), 3 * array);
    QCOMPARE(advisor::instruction_bytes(p, p.instrs[1], true), 7 * array);
    QCOMPARE(advisor::instruction_bytes(p, p.instrs[1], false), 7 * array);
    // The prediction counts as its hardware's kind does: the Add alone, at 10 GB/s.
    ir::Program add;
    add.apply1(ir::Op::Add, {add.add_value("x", {n}, ir::ValueKind::Input), add.add_value("g", {n}, ir::ValueKind::Input)});
    advisor::Hardware h = two_cores();
    h.rates = {rates(1, 1e15, 10e9)};
    const double fixed = h.rates[0].run_s + h.rates[0].instruction_s;
    QCOMPARE(advisor::predict(add, sharding::Mesh(), h).memory_s - fixed, 4 * array / 10e9);
    h.kind = "gpu";
    QCOMPARE(advisor::predict(add, sharding::Mesh(), h).memory_s - fixed, 3 * array / 10e9);
  }
  // A gather along a dimension with blocks before it costs what the runtime does for it: on the CPU
  // a collective per block up to 8 blocks, beyond that (and on a GPU always) one more copy of the
  // whole array through a staging buffer.
  void aGatherAlongColumnsPaysForItsLayout() {
    auto gather = [](const advisor::Hardware& h, int64_t rows, int64_t dim) {
      ir::Program p;
      ir::Attrs a;
      a.mesh_axes = {"g"};
      a.group_size = 2;
      a.dim = dim;
      p.apply1(ir::Op::AllGather, {p.add_value("x", {rows, 1024}, ir::ValueKind::Input)}, a);
      return advisor::predict(p, sharding::Mesh({{"g", 2}}), h);
    };
    advisor::Hardware h = two_cores();
    const advisor::DeviceRates r = h.rates_for(2);
    const double latency = 40e-6;
    const auto rows_whole = gather(h, 512, 0), columns = gather(h, 512, 1);
    const double bytes = 512.0 * 2048 * 4;  // the gathered array
    QCOMPARE(rows_whole.communication_s, columns.communication_s);
    QCOMPARE(rows_whole.memory_s, r.run_s);
    QCOMPARE(columns.memory_s - r.run_s, 3 * bytes / r.memory_bytes_per_s);
    // Four rows: four gathers, three latencies more than one.
    QCOMPARE(gather(h, 4, 1).communication_s - gather(h, 4, 0).communication_s, 3 * latency);
    QCOMPARE(gather(h, 4, 1).memory_s, r.run_s);
    // A GPU stages any layout but the contiguous one, and writes without reading first.
    h.kind = "gpu";
    QCOMPARE(gather(h, 4, 1).memory_s - r.run_s, 2 * (4.0 * 2048 * 4) / r.memory_bytes_per_s);
  }
  // A profile is a file a user edits: what is written reads back the same, and a bad field is named.
  void aProfileFileRoundTripsAndNamesABadField() {
    const advisor::Hardware h = two_cores();
    const advisor::Hardware back = advisor::hardware_from_json(advisor::hardware_to_json(h), "test");
    QCOMPARE(back.name, h.name);
    QCOMPARE(back.rates.size(), h.rates.size());
    QCOMPARE(back.rates[1].gemm_inner.at(64), h.rates[1].gemm_inner.at(64));
    QCOMPARE(back.rates[1].memory_bytes_per_s, h.rates[1].memory_bytes_per_s);
    QCOMPARE(back.collectives.size(), h.collectives.size());
    QCOMPARE(back.collectives[0].latency_s, h.collectives[0].latency_s);

    nlohmann::ordered_json j = advisor::hardware_to_json(h);
    j["rates"][0].erase("memory_bytes_per_s");
    try {
      advisor::hardware_from_json(j, "my.json");
      QFAIL("a profile without a bandwidth was accepted");
    } catch (const Error& e) {
      VERIFY_CONTAINS(QString(e.what()), "my.json: rates[0].memory_bytes_per_s: missing");
    }
    j = advisor::hardware_to_json(h);
    j["collectives"][1]["kind"] = "gossip";
    try {
      advisor::hardware_from_json(j, "my.json");
      QFAIL("an unknown collective kind was accepted");
    } catch (const Error& e) {
      VERIFY_CONTAINS(QString(e.what()), "collectives[1].kind");
    }
  }
  // The written profiles ship with the program; an unknown name lists them.
  void theWrittenProfilesLoadByName() {
    for (const char* name : {"h100-sxm-node", "h100-infiniband"}) {
      const advisor::Hardware h = advisor::find_hardware(name);
      QCOMPARE(h.kind, std::string("gpu"));
      QVERIFY(!h.sources.empty());
      QCOMPARE(h.peak_flops.at("bfloat16"), 989.4e12);
      QVERIFY(h.memory_bytes > 70e9);
    }
    try {
      advisor::find_hardware("tpu-v9");
      QFAIL("an unknown profile was found");
    } catch (const Error& e) {
      VERIFY_CONTAINS(QString(e.what()), "h100-sxm-node");
    }
  }
  // nccl-tests' bus bandwidth becomes the array's rate per group size: an all-reduce over 8 moves
  // 2 * 7/8 of the array over each link.
  void busBandwidthFollowsNcclsFactors() {
    const advisor::Hardware h = advisor::find_hardware("h100-sxm-node");
    QCOMPARE(h.collective("all_reduce", 8, 8, false).bytes_per_s, 450e9 * 8 / 14);
    QCOMPARE(h.collective("all_gather", 8, 2, false).bytes_per_s, 450e9 * 2);
  }
  // On H100 nodes joined by InfiniBand, FSDP over 16 GPUs gathers across nodes; within one node it
  // does not, and the same plan's communication is cheaper.
  void collectivesAcrossNodesCostTheNetworksRate() {
    const project::Project p = load("deep-mlp-small");
    const advisor::Hardware ib = advisor::find_hardware("h100-infiniband");
    const auto ranked16 = advisor::advise(p, 16, ib, ib.memory_bytes);
    const auto fsdp16 = std::find_if(ranked16.begin(), ranked16.end(), [](const advisor::Candidate& c) { return c.strategy == "FSDP"; });
    QVERIFY(fsdp16 != ranked16.end() && fsdp16->runs());
    advisor::Hardware one_node = ib;
    one_node.devices_per_node = 16;  // as if all 16 were on one NVLink switch
    const auto on_switch = advisor::advise(p, 16, one_node, ib.memory_bytes);
    const auto fsdp_switch = std::find_if(on_switch.begin(), on_switch.end(), [](const advisor::Candidate& c) { return c.strategy == "FSDP"; });
    QVERIFY(fsdp16->prediction.communication_s > 4 * fsdp_switch->prediction.communication_s);
  }
  // Calibration measures through the real CPU backend: every rate is positive, the GEMM rate grows
  // with the GEMM's smallest dimension, and each collective has a rate for its group.
  void calibrationMeasuresThisMachine() {
    auto cpu = backends::make_backend("cpu", backends::BackendOptions{.threads = 2});
    advisor::CalibrateOptions options;
    options.max_devices = 2;
    double last = -1;
    options.progress = [&](const std::string&, double f) {
      QVERIFY(f >= last);
      last = f;
    };
    const advisor::Hardware h = advisor::calibrate(*cpu, options);
    QCOMPARE(last, 1.0);
    QCOMPARE(h.rates.size(), size_t(2));
    for (const advisor::DeviceRates& r : h.rates) {
      QVERIFY(r.memory_bytes_per_s > 1e8);
      // A run's fixed cost is its one-instruction run less one instruction: either part may read 0
      // on a loaded machine (the two probes are timed apart), never their sum.
      QVERIFY(r.run_s >= 0 && r.instruction_s >= 0);
      QVERIFY(r.run_s + r.instruction_s > 0);
      QVERIFY(r.gemm_rows.at(512) > r.gemm_rows.at(1));
    }
    for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
      const advisor::CollectiveRate c = h.collective(kind, 2, 2, false);
      QCOMPARE(c.group, 2);
      QVERIFY(c.bytes_per_s > 0);
    }
    // And saved, it reads back.
    QTemporaryDir dir;
    const std::string file = dir.filePath("machine.json").toStdString();
    advisor::save_hardware_file(h, file);
    QCOMPARE(advisor::find_hardware(file).rates[1].memory_bytes_per_s, h.rates[1].memory_bytes_per_s);
    // Its probes' round-to-round spread is recorded, the band its predictions carry.
    QVERIFY2(h.spread > 0 && h.spread < 10, qPrintable(QString::number(h.spread)));
    QCOMPARE(advisor::find_hardware(file).spread, h.spread);
  }
  // A saved profile slower than this machine runs now was measured under load: stale, whatever
  // the factor's noise the other way (a probe slower than the profile says little).
  void aProfileMeasuredUnderLoadIsCalledStale() {
    auto cpu = backends::make_backend("cpu", backends::BackendOptions{.threads = 2});
    advisor::Hardware saved = two_cores();
    saved.measured = "shardlab-cli calibrate on 2026-11-28";
    saved.peak_flops["float32"] = 60e9;
    const advisor::CalibrationCheck slow = advisor::check_calibration(*cpu, saved, 180e9);
    QVERIFY(slow.stale);
    QCOMPARE(slow.factor, 3.0);
    QVERIFY2(QString::fromStdString(slow.message).contains("runs GEMMs at 180 GFLOP/s now, where its calibration "
                                                           "(shardlab-cli calibrate on 2026-11-28) measured 60"),
             slow.message.c_str());
    QVERIFY(slow.message.find("about 3.0x too long") != std::string::npos);
    QVERIFY(!advisor::check_calibration(*cpu, saved, 80e9).stale);   // within noise
    QVERIFY(!advisor::check_calibration(*cpu, saved, 20e9).stale);   // slower now: the probe was unlucky, or the machine busy
    saved.peak_flops.clear();
    QCOMPARE(advisor::check_calibration(*cpu, saved, 180e9).now_flops, 0.0);  // nothing to compare with
  }

  // Seed 000's question: a GPU's predicted step against this machine's, and the input rate it needs;
  // a tiny model gains less (its steps are fixed costs more than arithmetic).
  void aGpuPaysMoreForADeepMlpThanForATinyOne() {
    const advisor::Hardware gpu = advisor::find_hardware("h100-sxm-node");
    const advisor::GpuVerdict deep = advisor::gpu_worth_it(load("deep-mlp-small"), two_cores(), gpu);
    QVERIFY(deep.fits_gpu);
    QVERIFY(deep.speedup > 20);
    QCOMPARE(deep.examples_per_s_needed, 512 / deep.gpu.step_s);
    QVERIFY(deep.bytes_per_s_needed > 0);
    VERIFY_CONTAINS(QString::fromStdString(deep.verdict), "Yes");
    const advisor::GpuVerdict tiny = advisor::gpu_worth_it(load("fashion-mlp"), two_cores(), gpu);
    QVERIFY(tiny.speedup < deep.speedup);
  }
  // On a transformer Megatron splits the heads and the MLP's width over model, and no candidate
  // leaves a mesh axis idle: the 2-D rules, which split 'hidden', are not offered to a model
  // without it (they would be data parallel on fewer devices under another name).
  void aTransformersMegatronSplitsHeadsAndMlp() {
    const auto ranked = advisor::advise(load("vit-fashion"), 8, two_cores(), 1e12);
    int megatron = 0;
    for (const advisor::Candidate& c : ranked) {
      QVERIFY2(c.strategy.find("2-D") == std::string::npos, c.strategy.c_str());
      if (c.strategy.find("the project's own") != std::string::npos) continue;
      const sharding::LogicalRules rules = sharding::parse_rules(c.rules);
      const sharding::Mesh mesh = sharding::parse_mesh(c.mesh);
      for (const sharding::MeshAxis& axis : mesh.axes()) {
        const bool used = axis.size < 2 || std::any_of(rules.begin(), rules.end(), [&](const sharding::LogicalRule& r) {
                            return std::find(r.mesh.begin(), r.mesh.end(), axis.name) != r.mesh.end();
                          });
        QVERIFY2(used, (c.strategy + " on " + c.mesh + " leaves " + axis.name + " idle").c_str());
      }
      if (c.strategy.rfind("Megatron", 0) != 0) continue;
      ++megatron;
      QVERIFY2(c.rules.find("heads=model") != std::string::npos && c.rules.find("mlp=model") != std::string::npos, c.rules.c_str());
    }
    QVERIFY(megatron >= 2);
  }
  // A convolutional network's Megatron splits its convolutions' output channels and its MLP over
  // model (a ViT's patch embedding names its input channels apart, so they are left whole), and
  // runs.
  void convolutionMegatronSplitsTheChannels() {
    const auto ranked = advisor::advise(load("cnn-fashion"), 8, two_cores(), 1e12);
    const auto megatron = std::find_if(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) {
      return c.strategy == "Megatron" && c.mesh == "data=4,model=2";
    });
    QVERIFY(megatron != ranked.end());
    VERIFY_CONTAINS(QString::fromStdString(megatron->rules), "channels=model");
    VERIFY_CONTAINS(QString::fromStdString(megatron->rules), "mlp=model");
    QVERIFY2(megatron->runs(), megatron->error.c_str());
    for (const advisor::Candidate& c : advisor::advise(load("vit-fashion"), 8, two_cores(), 1e12))
      QVERIFY2(c.rules.find("channels=model") == std::string::npos, c.rules.c_str());
  }

  // vit-fashion's 4 heads on 6 devices: model = 2 leaves data = 3, which its batch of 128 does not
  // divide, and model = 3 or 6 splits no head evenly. The meshes of the sizes that divide them are
  // tried on the devices they can use, and so is data parallelism on the most devices that divide
  // the batch: each runs, where every layout on all 6 cannot.
  void sizesThatDivideTheModelAreTriedOnFewerDevices() {
    const auto ranked = advisor::advise(load("vit-fashion"), 6, two_cores(), 1e12);
    auto find = [&](const std::string& strategy) {
      return std::find_if(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy == strategy; });
    };
    const auto megatron = find("Megatron (4 of 6 devices)");
    QVERIFY(megatron != ranked.end());
    QCOMPARE(megatron->mesh, std::string("data=1,model=4"));
    QVERIFY2(megatron->runs(), megatron->error.c_str());
    const auto data = find("data parallel (4 of 6 devices)");
    QVERIFY(data != ranked.end());
    QCOMPARE(data->mesh, std::string("data=4"));
    QVERIFY2(data->runs(), data->error.c_str());
    for (const advisor::Candidate& c : ranked)
      if (c.strategy.find(" of 6 devices)") == std::string::npos) QVERIFY2(!c.runs(), (c.strategy + " on " + c.mesh).c_str());
    // Where N divides the batch and the heads, nothing is offered on fewer devices.
    for (const advisor::Candidate& c : advisor::advise(load("vit-fashion"), 4, two_cores(), 1e12))
      QVERIFY2(c.strategy.find(" devices)") == std::string::npos, c.strategy.c_str());
  }

  // The search prunes before it partitions: what a mesh axis does not divide never reaches the
  // partitioner (none it partitions is refused), and each layout it lists runs, names every
  // logical axis of the model and splits something on every mesh axis.
  void theSearchPartitionsOnlyWhatDivides() {
    const project::Project p = load("vit-fashion");
    advisor::SearchSummary s;
    const auto ranked = advisor::advise(p, 8, two_cores(), 1e12, {}, &s);
    QVERIFY2(s.counts.indivisible > 0, advisor::describe(s).c_str());  // 4 heads over 8 devices, ...
    QVERIFY2(s.partitioned > 0, advisor::describe(s).c_str());
    QCOMPARE(s.failed, int64_t(0));
    QVERIFY(std::find(s.counts.axes.begin(), s.counts.axes.end(), "heads") != s.counts.axes.end());
    const std::vector<std::string> names = sharding::logical_names_of(project::analyze_project(p));
    int searched = 0;
    for (const advisor::Candidate& c : ranked) {
      if (c.strategy != "searched") continue;
      ++searched;
      QVERIFY2(c.runs(), c.error.c_str());
      QVERIFY(c.bound_s > 0);
      const sharding::LogicalRules rules = sharding::parse_rules(c.rules);
      for (const std::string& n : names)
        QVERIFY2(std::any_of(rules.begin(), rules.end(), [&](const sharding::LogicalRule& r) { return r.logical == n; }),
                 (c.rules + " lacks " + n).c_str());
      const sharding::Mesh mesh = sharding::parse_mesh(c.mesh);
      for (const sharding::MeshAxis& axis : mesh.axes())
        QVERIFY2(c.splits.find(axis.name) != std::string::npos, (c.mesh + ": " + c.splits).c_str());
    }
    QVERIFY(searched > 0);
  }

  // The bound is a bound: no layout it prunes predicts faster than the best the search keeps, and
  // each layout partitioned predicts no faster than its bound.
  void theSearchsBoundPrunesNothingBetter() {
    for (const char* name : {"deep-mlp-small", "dot-relu-dot", "fashion-mlp", "cnn-fashion"}) {
      const project::Project p = load(name);
      advisor::AdviseOptions all;
      all.prune_by_bound = false;
      all.max_partitions = 100000;
      all.shown = 100000;
      advisor::SearchSummary pruned_summary, all_summary;
      const auto pruned = advisor::advise(p, 8, two_cores(), 1e12, {}, &pruned_summary);
      const auto every = advisor::advise(p, 8, two_cores(), 1e12, all, &all_summary);
      QVERIFY2(pruned_summary.past_limit == 0, advisor::describe(pruned_summary).c_str());
      QVERIFY2(all_summary.partitioned == all_summary.survivors, advisor::describe(all_summary).c_str());
      QVERIFY2(all_summary.partitioned >= pruned_summary.partitioned, name);
      for (const advisor::Candidate& c : every)
        if (c.strategy == "searched")
          QVERIFY2(c.bound_s <= c.prediction.step_s * (1 + 1e-9),
                   (std::string(name) + " " + c.mesh + " " + c.rules + ": bound " + std::to_string(c.bound_s) + " s over predicted " +
                    std::to_string(c.prediction.step_s) + " s")
                       .c_str());
      QVERIFY(pruned.front().runs() && every.front().runs());
      QCOMPARE(pruned.front().prediction.step_s, every.front().prediction.step_s);
    }
  }

  // The same project gives the same list, in the same order, every time.
  void theSearchIsDeterministic() {
    const project::Project p = load("llama-tiny");
    advisor::SearchSummary a, b;
    const auto first = advisor::advise(p, 8, two_cores(), 1e12, {}, &a);
    const auto second = advisor::advise(p, 8, two_cores(), 1e12, {}, &b);
    QCOMPARE(first.size(), second.size());
    for (size_t i = 0; i < first.size(); ++i) {
      QCOMPARE(first[i].strategy, second[i].strategy);
      QCOMPARE(first[i].mesh, second[i].mesh);
      QCOMPARE(first[i].rules, second[i].rules);
    }
    QCOMPARE(a.survivors, b.survivors);
    QCOMPARE(a.partitioned, b.partitioned);
    QCOMPARE(a.counts.duplicates, b.counts.duplicates);
  }

  // A model whose weight sits in an axis no strategy splits (a 4096-class output layer: 'classes'):
  // the search splits it and ranks that first, faster than every named strategy, and explains it.
  void theSearchFindsWhatNoStrategySpells() {
    project::Project p = load("fashion-mlp");
    for (graph::Node& n : p.graph.nodes)
      if (n.name == "dense2") n.params["features"] = 4096;
    const graph::GraphReport report = project::analyze_project(p);
    QVERIFY2(report.ok(), report.ok() ? "" : report.errors.front().c_str());
    advisor::SearchSummary s;
    const auto ranked = advisor::advise(p, 8, two_cores(), 1e12, {}, &s);
    QCOMPARE(ranked.front().strategy, std::string("searched"));
    QVERIFY2(ranked.front().splits.find("classes") != std::string::npos, ranked.front().splits.c_str());
    const auto named = std::find_if(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) { return c.strategy != "searched"; });
    QVERIFY(named != ranked.end());
    QVERIFY2(ranked.front().prediction.step_s < named->prediction.step_s, advisor::explain(*named).c_str());
    const std::string why = advisor::explain(ranked.front());
    VERIFY_CONTAINS(QString::fromStdString(why), "classes");
    VERIFY_CONTAINS(QString::fromStdString(why), "per step in");
    VERIFY_CONTAINS(QString::fromStdString(why), "bound by");
    // Without the search only the named strategies are listed.
    advisor::AdviseOptions off;
    off.search = false;
    for (const advisor::Candidate& c : advisor::advise(p, 8, two_cores(), 1e12, off)) QVERIFY(c.strategy != "searched");
  }

  // Grouped-query attention: Megatron splits the key and value heads with the heads where the model
  // axis divides them (llama-tiny's 2), and leaves them whole where it does not.
  void megatronSplitsKeyValueHeadsWhereTheyDivide() {
    const auto ranked = advisor::advise(load("llama-tiny"), 8, two_cores(), 1e12);
    auto find = [&](const std::string& mesh) {
      return std::find_if(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy.rfind("Megatron", 0) == 0 && c.mesh == mesh; });
    };
    const auto two = find("data=4,model=2"), four = find("data=2,model=4");
    QVERIFY(two != ranked.end() && four != ranked.end());
    VERIFY_CONTAINS(QString::fromStdString(two->rules), "kv_heads=model");
    VERIFY_CONTAINS(QString::fromStdString(two->rules), "heads=model");
    QVERIFY2(two->runs(), two->error.c_str());
    VERIFY_CONTAINS(QString::fromStdString(four->rules), "kv_heads=none");
    QVERIFY2(four->runs(), four->error.c_str());
  }

  // A calibrated profile's spread (how much its probes varied round to round) is the band every
  // prediction on it carries, and a profile file keeps it; one without (written) carries none.
  void aPredictionCarriesTheProfilesSpread() {
    advisor::Hardware hw = two_cores();
    const project::Project p = load("fashion-mlp");
    QCOMPARE(advisor::advise(p, 8, hw, 1e12).front().prediction.band_s, 0.0);
    hw.spread = 0.12;
    for (const advisor::Candidate& c : advisor::advise(p, 8, hw, 1e12))
      if (c.runs()) QCOMPARE(c.prediction.band_s, c.prediction.step_s * 0.12);
    VERIFY_CONTAINS(QString::fromStdString(advisor::explain(advisor::advise(p, 8, hw, 1e12).front())), "the calibration's spread");
    QCOMPARE(advisor::hardware_from_json(nlohmann::json::parse(advisor::hardware_to_json(hw).dump()), "round trip").spread, 0.12);
  }

  // Every template shows on eight devices: 1-D, 2-D and 3-D meshes.
  void meshesOfOneTwoAndThreeAxesAreTried() {
    const auto ranked = advisor::advise(load("deep-mlp-small"), 8, two_cores(), 1e12);
    for (const char* s : {"FSDP + Megatron", "hybrid FSDP", "3-D (data, FSDP, Megatron)"})
      QVERIFY2(std::any_of(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy.find(s) != std::string::npos; }), s);
    QVERIFY(std::any_of(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) { return c.mesh == "data=2,fsdp=2,model=2"; }));
  }
};

QTEST_APPLESS_MAIN(TestAdvisor)
#include "test_advisor.moc"
