// The layout advisor (engine/advisor): its candidates' memory is their partitioned plans' (one model
// with the design check and a run), what does not fit never ranks above what does, a dimension that
// does not divide is a reason rather than a crash, and the cost model's turns on shared cores.
#include <QtTest>

#include <algorithm>

#include "engine/advisor/advisor.h"
#include "engine/sharding/layout.h"
#include "tests/engine/test_support.h"

using namespace shardlab;

namespace {

const std::string kProjects = SHARDLAB_SOURCE_DIR "/projects/";

// A fixed machine, so the ranking does not depend on this one's timing.
advisor::Hardware two_cores() {
  advisor::Hardware h;
  h.name = "test machine";
  h.shared_cores = 2;
  h.gemm_flops = 200e9;
  h.memory_bytes_per_s = 20e9;
  h.collective_latency_s = 20e-6;
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
      QCOMPARE(c.bytes_per_device, double(r.plan->memory.total_elems()) * 4);
    }
    QVERIFY(runnable >= 5);  // data parallel, FSDP, Megatron and seed 002's rules on several meshes
  }
  void everyStrategyIsTried() {
    const auto ranked = advisor::advise(load("deep-mlp-small"), 8, two_cores(), 1e12);
    for (const char* s : {"data parallel", "FSDP", "Megatron", "2-D (seed 002)"})
      QVERIFY2(std::any_of(ranked.begin(), ranked.end(), [&](const advisor::Candidate& c) { return c.strategy.find(s) != std::string::npos; }), s);
    // Both data=8 and two-axis meshes.
    QVERIFY(std::any_of(ranked.begin(), ranked.end(), [](const advisor::Candidate& c) { return c.mesh == "data=4,model=2"; }));
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
    many.gemm_flops *= 4;  // the same rate per core
    many.memory_bytes_per_s *= 4;
    const auto on2 = advisor::advise(p, 8, two_cores(), 1e12);
    const auto on8 = advisor::advise(p, 8, many, 1e12);
    const auto dp = [](const std::vector<advisor::Candidate>& v) {
      return std::find_if(v.begin(), v.end(), [](const advisor::Candidate& c) { return c.strategy == "data parallel"; });
    };
    QVERIFY(dp(on2) != on2.end() && dp(on8) != on8.end());
    QVERIFY(dp(on2)->prediction.step_s > 3.5 * dp(on8)->prediction.step_s);
    QVERIFY(dp(on2)->prediction.communication_s > 0);
  }
};

QTEST_APPLESS_MAIN(TestAdvisor)
#include "test_advisor.moc"
