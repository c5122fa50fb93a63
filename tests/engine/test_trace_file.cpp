// Reading traces back: a trace written by Trace::to_chrome_json parses into the same spans and
// memory samples, per-step summaries derived from the spans match what the executor recorded, the
// re-serialised trace is byte-identical, the arrays a span touched come back shared, a file from
// before spans named their arrays still opens, and malformed files are refused with their name.
#include <QTemporaryDir>
#include <QtTest>
#include <sys/stat.h>
#include <fstream>
#include <map>

#include "engine/profiler/trace_file.h"
#include "engine/runtime/trainer.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using profiler::Category;
using profiler::Span;
using testing::error_of;

namespace {

const char* kMlp = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [32], "axes": ["embed"]}},
      {"name": "l0", "type": "Dense", "params": {"features": 64}}, {"name": "r0", "type": "ReLU"},
      {"name": "out", "type": "Dense", "params": {"features": 4}, "param_axes": {"kernel": ["embed", "classes"], "bias": ["classes"]}}],
    "edges": [{"from": "x.out", "to": "l0.in"}, {"from": "l0.out", "to": "r0.in"}, {"from": "r0.out", "to": "out.in"}]},
  "loss": {"type": "mean_squared_error", "output": "out"},
  "optimizer": {"type": "adam"},
  "data": {"type": "synthetic", "kind": "normal", "feature_shape": [32], "target_shape": [4], "examples": 256},
  "training": {"batch_size": 32, "steps": 4, "eval": false}
})";

// Per (step, device) what the synthetic trace below puts in each category.
struct Expected {
  double compute = 0, collective = 0, optimizer = 0, data = 0, step = 0, flops = 0;
};

// Two devices, three steps: the host's data wait on device 0's data track, then on each device a
// matmul, an all-reduce of its gradient and an Adam update inside a step span; memory after each.
std::shared_ptr<profiler::Trace> synthetic_trace(std::map<std::pair<int64_t, int>, Expected>* expected) {
  auto trace = std::make_shared<profiler::Trace>(profiler::Trace::Mode::Detailed, 10);
  double t = 3.125;
  for (int64_t step = 0; step < 3; ++step) {
    const double wait = 7.5 + double(step);
    trace->add(Span{0, Category::Data, "data", "", "batch", t, wait, 0, 4096, step});
    t += wait + 0.25;
    for (int d = 0; d < 2; ++d) {
      Expected& e = (*expected)[{step, d}];
      e.data = wait;
      double u = t;
      const double mm = 100.5 + 10 * d + step, ar = 20.25 + d, opt = 5.75;
      trace->add(Span{d, Category::Compute, "matmul", "dense1", "dense1/out", u, mm, 2e6, 0, step});
      trace->add(profiler::MemorySample{d, u + mm, 1024.0 * (d + 1)});
      u += mm;
      trace->add(Span{d, Category::Collective, "all_reduce", "dense1", "dense1/kernel", u, ar, 0, 8192, step});
      u += ar;
      trace->add(Span{d, Category::Optimizer, "adam", "dense1", "dense1/kernel", u, opt, 3e3, 0, step});
      trace->add(profiler::MemorySample{d, u + opt, 512.0});
      u += opt + 0.5;  // the step's own bookkeeping after the last primitive
      e.compute = mm;
      e.collective = ar;
      e.optimizer = opt;
      e.flops = 2e6 + 3e3;
      e.step = u - t;
      trace->add(Span{d, Category::Step, "step " + std::to_string(step + 1), "", "", t, u - t, e.flops, 0, step});
    }
    t += 200;
  }
  return trace;
}

void write(const QString& path, const std::string& text) {
  std::ofstream(path.toStdString(), std::ios::binary) << text;
}

}  // namespace

class TestTraceFile : public QObject {
  Q_OBJECT
 private slots:
  void readsBackTheSameSpansAndMemory() {
    std::map<std::pair<int64_t, int>, Expected> expected;
    auto trace = synthetic_trace(&expected);
    QTemporaryDir dir;
    const std::string path = dir.filePath("run.trace.json").toStdString();
    trace->write_chrome_json(path);
    const profiler::TraceContents c = profiler::read_chrome_trace(path);

    const auto spans = trace->spans();
    QCOMPARE(c.spans.size(), spans.size());
    for (size_t i = 0; i < spans.size(); ++i) {
      const Span &a = spans[i], &b = c.spans[i];
      QCOMPARE(b.name, a.name);
      QCOMPARE(b.node, a.node);
      QCOMPARE(b.array, a.array);
      QCOMPARE(b.device, a.device);
      QCOMPARE(int(b.category), int(a.category));
      QCOMPARE(b.start_us, a.start_us);
      QCOMPARE(b.dur_us, a.dur_us);
      QCOMPARE(b.flops, a.flops);
      QCOMPARE(b.bytes, a.bytes);
      QCOMPARE(b.step, a.step);
    }
    QCOMPARE(c.memory.size(), size_t(3 * 2 * 2));
    QCOMPARE(c.memory[0].device, 0);
    QCOMPARE(c.memory[2].device, 1);
    QCOMPARE(c.memory[2].bytes, 2048.0);
    QCOMPARE(c.process_name, std::string("shardlab"));
    int devices = 0;
    for (const Span& s : c.spans) devices = std::max(devices, s.device + 1);
    QCOMPARE(devices, 2);
  }

  // A CUDA run's trace names its devices GPUs, in its tracks and memory counters, and reads back
  // as one; a CPU run's says CPU.
  void aGpuRunsTraceNamesItsDevicesGpus() {
    std::map<std::pair<int64_t, int>, Expected> expected;
    auto trace = synthetic_trace(&expected);
    QCOMPARE(profiler::parse_chrome_trace(trace->to_chrome_json(), "cpu.json").device_label, std::string("CPU"));
    trace->set_device_label("GPU");
    const std::string json = trace->to_chrome_json();
    QVERIFY(json.find("\"GPU 1 compute\"") != std::string::npos);
    QVERIFY(json.find("\"memory GPU 1\"") != std::string::npos);
    QVERIFY(json.find("CPU") == std::string::npos);
    const profiler::TraceContents c = profiler::parse_chrome_trace(json, "gpu.json");
    QCOMPARE(c.device_label, std::string("GPU"));
    QCOMPARE(c.memory.size(), size_t(3 * 2 * 2));
    QCOMPARE(c.memory[2].device, 1);
    QCOMPARE(c.spans.size(), trace->spans().size());
  }

  void summariesDerivedFromSpansMatchTheStepTotals() {
    std::map<std::pair<int64_t, int>, Expected> expected;
    auto trace = synthetic_trace(&expected);
    const auto c = profiler::parse_chrome_trace(trace->to_chrome_json(), "synthetic.json");
    QCOMPARE(c.summaries.size(), size_t(6));
    for (const auto& s : c.summaries) {
      const Expected& e = expected.at({s.step, s.device});
      QCOMPARE(s.compute_us, e.compute);
      QCOMPARE(s.collective_us, e.collective);
      QCOMPARE(s.optimizer_us, e.optimizer);
      QCOMPARE(s.data_us, e.data);  // device 1 waits for the host's batch as device 0 does
      QCOMPARE(s.flops, e.flops);
      QCOMPARE(s.wall_us, e.step + e.data);
      QVERIFY(std::abs(s.idle_us() - 0.5) < 1e-9);
    }
  }

  void derivedSummariesAgreeWithTheExecutors() {
    // A real data-parallel run: what the executor summed per step is what the file's spans give.
    runtime::TrainOptions o;
    o.trace_detailed = true;
    o.mesh = "data=2";
    o.rules = "batch=data";
    o.threads = 2;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    const auto recorded = t.trace().summaries();
    const auto c = profiler::parse_chrome_trace(t.trace().to_chrome_json(), "run.json");
    QCOMPARE(c.summaries.size(), recorded.size());
    std::map<std::pair<int64_t, int>, profiler::StepSummary> by_key;
    for (const auto& s : recorded) by_key[{s.step, s.device}] = s;
    bool collective = false;
    for (const auto& s : c.summaries) {
      QVERIFY(by_key.count({s.step, s.device}));
      const auto& r = by_key[{s.step, s.device}];
      const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
      QVERIFY2(close(s.compute_us, r.compute_us), qPrintable(QString("%1 vs %2").arg(s.compute_us).arg(r.compute_us)));
      QVERIFY(close(s.collective_us, r.collective_us));
      QVERIFY(close(s.optimizer_us, r.optimizer_us));
      QVERIFY(close(s.data_us, r.data_us));
      QVERIFY2(close(s.wall_us, r.wall_us), qPrintable(QString("%1 vs %2").arg(s.wall_us).arg(r.wall_us)));
      QVERIFY(close(s.flops, r.flops));
      collective = collective || s.collective_us > 0;
    }
    QVERIFY(collective);
  }

  void summariesWithoutStepSpansUseTheSpansExtent() {
    std::vector<Span> spans = {{1, Category::Compute, "matmul", "a", "a/out", 10, 5, 100, 0, 4},
                               {1, Category::Compute, "relu", "b", "b/out", 20, 2, 0, 0, 4},
                               {0, Category::Data, "data", "", "batch", 0, 8, 0, 64, 4},
                               {0, Category::Data, "data", "", "batch", 40, 3, 0, 64, 5}};
    const auto s = profiler::summarize_spans(spans);
    QCOMPARE(s.size(), size_t(1));  // step 5 has only the loader's wait: no device ran it traced
    QCOMPARE(s[0].device, 1);
    QCOMPARE(s[0].step, int64_t(4));
    QCOMPARE(s[0].compute_us, 7.0);
    QCOMPARE(s[0].data_us, 8.0);
    QCOMPARE(s[0].wall_us, 12.0 + 8.0);  // 10..22, plus the host's wait
    QCOMPARE(s[0].flops, 100.0);
  }

  // The arrays a span read and wrote survive the file, and spans that named the same ones share them.
  void spanArraysReadBackShared() {
    auto trace = std::make_shared<profiler::Trace>(profiler::Trace::Mode::Detailed, 10);
    auto arrays = std::make_shared<const profiler::SpanArrays>(
        profiler::SpanArrays{{"blocks/W1/kernel", "x"}, {"blocks/W1"}});
    for (int d = 0; d < 2; ++d)
      trace->add(Span{d, Category::Compute, "matmul", "blocks/W1", "blocks/W1", 10.0 * d, 5, 1e3, 0, 0, arrays});
    trace->add(Span{0, Category::Compute, "relu", "blocks/relu", "", 30, 1, 1e2, 0, 0});
    const auto c = profiler::parse_chrome_trace(trace->to_chrome_json(), "arrays.json");
    QCOMPARE(c.spans.size(), size_t(3));
    QVERIFY(c.spans[0].arrays);
    QCOMPARE(c.spans[0].arrays->reads, arrays->reads);
    QCOMPARE(c.spans[0].arrays->writes, arrays->writes);
    QCOMPARE(c.spans[1].arrays.get(), c.spans[0].arrays.get());  // one copy for both devices
    QVERIFY(!c.spans[2].arrays);
    const QString bad = error_of([] {
      profiler::parse_chrome_trace(R"({"traceEvents": [{"name": "m", "cat": "compute", "ph": "X", "ts": 1, "dur": 2, "tid": 1,
                                        "args": {"reads": "x"}}]})", "bad.json");
    });
    VERIFY_CONTAINS(bad, "bad.json: traceEvents[0] (\"m\"): args.reads is not a list");
  }

  // A trace written before spans named their arrays (args: step, node, array only) still opens;
  // its spans name no arrays, and keep the value name they recorded.
  void filesWithoutSpanArraysStillOpen() {
    const auto c = profiler::parse_chrome_trace(
        R"({"traceEvents": [{"name": "all_reduce", "cat": "collective", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 3,
                             "args": {"step": 4, "node": "blocks/W2", "array": "blocks/W2/all_reduce", "bytes": 64}}]})",
        "old.json");
    QCOMPARE(c.spans.size(), size_t(1));
    QCOMPARE(c.spans[0].array, std::string("blocks/W2/all_reduce"));
    QCOMPARE(c.spans[0].node, std::string("blocks/W2"));
    QVERIFY(!c.spans[0].arrays);
    QCOMPARE(c.summaries.size(), size_t(1));
  }

  void reserialisedTraceIsIdentical() {
    std::map<std::pair<int64_t, int>, Expected> expected;
    auto trace = synthetic_trace(&expected);
    const std::string json = trace->to_chrome_json("worker-3");
    const auto c = profiler::parse_chrome_trace(json, "a.json");
    QCOMPARE(c.process_name, std::string("worker-3"));
    auto again = profiler::make_trace(c);
    QVERIFY(again->detailed());
    QCOMPARE(again->to_chrome_json("worker-3"), json);
    QCOMPARE(again->summaries().size(), c.summaries.size());
  }

  // Limits: nesting checked before parsing, names quoted cut short, steps and devices in range, no FIFO.
  void absurdFilesAreRefusedNamingTheFile() {
    QTemporaryDir dir;
    const QString deep = dir.filePath("deep.json"), name = dir.filePath("name.json"), step = dir.filePath("step.json"),
                  cut = dir.filePath("cut.json"), fifo = dir.filePath("fifo.json");
    write(deep, R"({"traceEvents": )" + std::string(100000, '[') + std::string(100000, ']') + "}");
    write(name, R"({"traceEvents": [{"name": ")" + std::string(100000, 'n') + R"(", "cat": "compute", "ph": "X", "ts": 1, "pid": 0, "tid": 1}]})");
    write(step, R"({"traceEvents": [{"name": "m", "cat": "compute", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 1, "args": {"step": 1e300}}]})");
    write(cut, R"({"traceEvents": [{"name": "m", "cat": "comp)");
    const QString tid = dir.filePath("tid.json"), counter = dir.filePath("counter.json");
    write(tid, R"({"traceEvents": [{"name": "m", "cat": "compute", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 4294967296}]})");
    write(counter, R"({"traceEvents": [{"name": "memory CPU 2000000000", "ph": "C", "ts": 1, "pid": 0, "args": {"live bytes": 1}}]})");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QString e = error_of([&] { profiler::read_chrome_trace(deep.toStdString()); });
    VERIFY_CONTAINS(e, deep + ": JSON nested deeper than 64 levels");
    e = error_of([&] { profiler::read_chrome_trace(name.toStdString()); });
    VERIFY_CONTAINS(e, name + ": traceEvents[0] (\"nnnn");
    VERIFY_CONTAINS(e, "... (100000 bytes)\"): an X (complete) event without \"dur\"");
    QVERIFY2(e.size() < 1000, "the message quotes too much of the file");
    e = error_of([&] { profiler::read_chrome_trace(step.toStdString()); });
    VERIFY_CONTAINS(e, step + ": traceEvents[0] (\"m\"): args.step is not a step number");
    e = error_of([&] { profiler::read_chrome_trace(tid.toStdString()); });
    VERIFY_CONTAINS(e, tid + ": traceEvents[0] (\"m\"): \"tid\" 4294967296 is not a device track");
    e = error_of([&] { profiler::read_chrome_trace(counter.toStdString()); });
    VERIFY_CONTAINS(e, counter + ": traceEvents[0] (\"memory CPU 2000000000\"): counter \"memory CPU 2000000000\" names no device");
    e = error_of([&] { profiler::read_chrome_trace(cut.toStdString()); });
    VERIFY_CONTAINS(e, cut + ": not JSON");
    e = error_of([&] { profiler::read_chrome_trace(fifo.toStdString()); });
    VERIFY_CONTAINS(e, fifo + ": is a FIFO");
  }

  void malformedFilesAreRefusedNamingTheFile() {
    QTemporaryDir dir;
    const QString notJson = dir.filePath("notjson.json"), noEvents = dir.filePath("noevents.json"),
                  noDur = dir.filePath("nodur.json"), badCat = dir.filePath("badcat.json"), phase = dir.filePath("phase.json");
    write(notJson, "this is not json {");
    write(noEvents, R"({"displayTimeUnit": "ms"})");
    write(noDur, R"({"traceEvents": [{"name": "matmul", "cat": "compute", "ph": "X", "ts": 1, "pid": 0, "tid": 1}]})");
    write(badCat, R"({"traceEvents": [{"name": "m", "cat": "gpu", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 1}]})");
    write(phase, R"({"traceEvents": [{"name": "m", "ph": "B", "ts": 1, "pid": 0, "tid": 1}]})");
    QString e = error_of([&] { profiler::read_chrome_trace(notJson.toStdString()); });
    VERIFY_CONTAINS(e, notJson);
    VERIFY_CONTAINS(e, "not JSON");
    e = error_of([&] { profiler::read_chrome_trace(noEvents.toStdString()); });
    VERIFY_CONTAINS(e, noEvents);
    VERIFY_CONTAINS(e, "traceEvents");
    e = error_of([&] { profiler::read_chrome_trace(noDur.toStdString()); });
    VERIFY_CONTAINS(e, noDur);
    VERIFY_CONTAINS(e, "traceEvents[0] (\"matmul\")");
    VERIFY_CONTAINS(e, "\"dur\"");
    e = error_of([&] { profiler::read_chrome_trace(badCat.toStdString()); });
    VERIFY_CONTAINS(e, badCat);
    VERIFY_CONTAINS(e, "unknown category \"gpu\"");
    e = error_of([&] { profiler::read_chrome_trace(phase.toStdString()); });
    VERIFY_CONTAINS(e, "phase \"B\"");
    const QString missing = dir.filePath("missing.json");
    e = error_of([&] { profiler::read_chrome_trace(missing.toStdString()); });
    VERIFY_CONTAINS(e, missing);
    VERIFY_CONTAINS(e, "cannot open");
    // A well-formed file is accepted (the checks above are not refusing everything).
    write(noDur, R"({"traceEvents": [{"name": "matmul", "cat": "compute", "ph": "X", "ts": 1, "dur": 4, "pid": 0, "tid": 3}]})");
    const auto ok = profiler::read_chrome_trace(noDur.toStdString());
    QCOMPARE(ok.spans.size(), size_t(1));
    QCOMPARE(ok.spans[0].device, 1);
  }
};

QTEST_APPLESS_MAIN(TestTraceFile)
#include "test_trace_file.moc"
