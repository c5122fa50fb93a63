// The one runtime path: evaluation on many devices equals evaluation on one (batches the mesh does
// not divide included), a run on 8 devices holds no unsharded copy (peak RSS against the plan),
// device threads persist across steps and never outnumber the cores while busy, and a model too
// large for the machine is refused before anything is allocated.
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <cmath>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "engine/backends/backend.h"
#include "engine/backends/backend_module.h"
#include "engine/data/dataset.h"
#include "engine/profiler/trace.h"
#include "engine/runtime/trainer.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/partitioner.h"
#include "tests/engine/test_support.h"

using namespace shardlab;

namespace {

const std::string kSource = SHARDLAB_SOURCE_DIR;
const std::string kCli = SHARDLAB_BINARY_DIR "/app/shardlab-cli";

// fashion-mlp's shapes on a few hundred synthetic examples (no dataset to load).
const char* kMlp = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {"nodes": [
      {"name": "image", "type": "Input", "params": {"shape": [28, 28], "axes": ["height", "width"]}},
      {"name": "flatten", "type": "Flatten", "params": {"axis_name": "embed"}},
      {"name": "dense1", "type": "Dense", "params": {"features": 256}}, {"name": "relu", "type": "ReLU"},
      {"name": "dense2", "type": "Dense", "params": {"features": 10}}],
    "edges": [{"from": "image.out", "to": "flatten.in"}, {"from": "flatten.out", "to": "dense1.in"},
              {"from": "dense1.out", "to": "relu.in"}, {"from": "relu.out", "to": "dense2.in"}]},
  "loss": {"type": "softmax_cross_entropy", "output": "dense2"},
  "optimizer": {"type": "adam", "learning_rate": 0.001},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [28, 28], "classes": 10, "examples": 512},
  "training": {"batch_size": 64, "steps": 4, "eval": false, "seed": 5}
})";

// A labelled batch of `n` examples drawn from `seed`.
data::Dataset examples(int64_t n, uint64_t seed) {
  data::Dataset d;
  d.features = Tensor({n, 28, 28});
  d.targets = Tensor({n});
  d.integer_labels = true;
  d.num_classes = 10;
  for (int64_t i = 0; i < d.features.size(); ++i) d.features.data[size_t(i)] = float(data::hash_normal(seed, 1, uint64_t(i)));
  for (int64_t i = 0; i < n; ++i) d.targets.data[size_t(i)] = float((i * 7 + int64_t(seed)) % 10);
  return d;
}

Tensor rows(const Tensor& t, int64_t begin, int64_t count) {
  const int64_t row = t.size() / t.shape[0];
  Shape s = t.shape;
  s[0] = count;
  Tensor out(s);
  std::copy_n(t.ptr() + begin * row, count * row, out.ptr());
  return out;
}

// Threads of this process that are runnable now (state R in /proc/self/task/*/stat), less the caller.
// This process's threads at one moment: their ids, and how many besides the caller are running.
struct ThreadCensus {
  std::set<long> ids;
  int runnable = 0;
};

ThreadCensus thread_census() {
  ThreadCensus c;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return c;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    c.ids.insert(std::atol(e->d_name));
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string stat;
    std::getline(f, stat);
    const auto paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'R') ++c.runnable;
  }
  closedir(dir);
  c.runnable = std::max(0, c.runnable - 1);
  return c;
}

}  // namespace

class TestRuntime : public QObject {
  Q_OBJECT
 private slots:
  // Trained the same way on 1 and on 8 devices, evaluation agrees, for a batch every split divides
  // and for sizes that leave a remainder (the part evaluated repeated until it divides).
  void evaluationOnManyDevicesEqualsOne_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("data=8") << "data=8" << "batch=data";
    QTest::newRow("data=4,model=2") << "data=4,model=2" << "batch=data,mlp=model";  // the 10 classes split 2 ways
    QTest::newRow("fsdp data=8") << "data=8" << "batch=data,embed=data";
  }
  void evaluationOnManyDevicesEqualsOne() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    runtime::TrainOptions one_opt;
    one_opt.threads = 2;
    runtime::TrainOptions many_opt = one_opt;
    many_opt.mesh = mesh.toStdString();
    many_opt.rules = rules.toStdString();
    runtime::Trainer one(p, one_opt), many(p, many_opt);
    QCOMPARE(many.session().mesh().device_count(), int64_t(8));
    const data::Dataset train = examples(64 * 3, 11);
    for (int s = 0; s < 3; ++s) {
      const double a = one.train_step(rows(train.features, s * 64, 64), rows(train.targets, s * 64, 64));
      const double b = many.train_step(rows(train.features, s * 64, 64), rows(train.targets, s * 64, 64));
      QVERIFY2(std::abs(a - b) <= 1e-5 * std::abs(a), qPrintable(QString("step %1: %2 vs %3").arg(s).arg(a).arg(b)));
    }
    // 64 + 64 + 3: the last batch leaves a remainder of 3 on 8 devices; 29 is smaller than a batch.
    for (int64_t n : {int64_t(131), int64_t(29), int64_t(64)}) {
      const data::Dataset test = examples(n, 23);
      const runtime::EvalEvent a = one.evaluate(test), b = many.evaluate(test);
      QCOMPARE(b.examples, n);
      QVERIFY2(std::abs(a.loss - b.loss) <= 1e-5 * std::abs(a.loss),
               qPrintable(QString("%1 examples: loss %2 on one device, %3 on %4").arg(n).arg(a.loss, 0, 'g', 9).arg(b.loss, 0, 'g', 9).arg(mesh)));
      QVERIFY2(std::abs(a.accuracy - b.accuracy) <= 1e-6, qPrintable(QString("%1 examples: accuracy %2 vs %3").arg(n).arg(a.accuracy).arg(b.accuracy)));
    }
  }

  // Start-up compiles the training step once: the design check's plan (preflight) is the one the
  // session loads, not partitioned again; a second look at the same plan by the session's callers
  // (parameters, a save) compiles nothing more. Evaluation compiles its own step at its batch.
  void aRunCompilesItsStepOnce_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<int>("accumulate");
    QTest::newRow("one device") << "" << "" << 1;
    QTest::newRow("data=4,model=2") << "data=4,model=2" << "batch=data,mlp=model" << 1;
    QTest::newRow("fsdp, 2 microbatches") << "data=2" << "batch=data,embed=data" << 2;
  }
  void aRunCompilesItsStepOnce() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QFETCH(int, accumulate);
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    runtime::TrainOptions o;
    o.threads = 2;
    o.mesh = mesh.toStdString();
    o.rules = rules.toStdString();
    o.accumulate = accumulate;
    const int64_t before = sharding::partitions_built();
    runtime::Trainer t(p, o);
    const int64_t built = sharding::partitions_built() - before;
    // With microbatches the design check also partitions the one-batch step once, to say whether
    // accumulating costs memory; the run's own step is still compiled once.
    QCOMPARE(built, accumulate > 1 ? int64_t(2) : int64_t(1));
    const data::Dataset train = examples(64, 11);
    QVERIFY(std::isfinite(t.train_step(train.features, train.targets)));
    for (const std::string& path : t.parameter_paths()) (void)t.parameter(path);
    QCOMPARE(sharding::partitions_built() - before, built);
  }

  // A data=8 run of deep-mlp-small, as a user starts it: its peak RSS stays within 1.25x of what
  // the plan says 8 devices hold (plus the process's own baseline), well below what one unsharded
  // copy of the parameters and optimizer state would add. Under data parallelism the CPU backend
  // holds the replicated parameters once (backends/cpu/shared_replicas.h): 7 of the plan's 8 copies
  // never take memory.
  void eightDevicesHoldNoUnshardedCopy_data() {
    QTest::addColumn<QString>("rules");
    QTest::addColumn<bool>("held_once");
    QTest::newRow("FSDP") << "batch=data,embed=data" << false;
    QTest::newRow("data parallel, parameters held once") << "batch=data" << true;
  }
  void eightDevicesHoldNoUnshardedCopy() {
    QFETCH(QString, rules);
    QFETCH(bool, held_once);
    const std::string project = kSource + "/projects/deep-mlp-small.shardlab.json";
    const project::Project p = project::load_project(project);
    const runtime::StepProgram g = runtime::build_step(p, project::analyze_project(p), p.training.batch_size, true);
    const sharding::PartitionedStep part =
        sharding::partition(g, sharding::parse_mesh("data=8"), sharding::parse_rules(rules.toStdString()));
    const double planned = double(part.memory.total_bytes()) * 8;
    const double unsharded_state = double(g.memory.param_bytes + g.memory.opt_state_bytes);
    const double unheld = held_once ? 7.0 * double(part.memory.param_bytes) : 0.0;
    const std::string r = rules.toStdString();
    const pid_t pid = fork();
    if (pid == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execl(kCli.c_str(), kCli.c_str(), "train", project.c_str(), "--mesh", "data=8", "--rules", r.c_str(), "--steps", "2",
            "--threads", "2", "--quiet", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    rusage ru{};
    QVERIFY(wait4(pid, &status, 0, &ru) == pid);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, "shardlab-cli train failed");
    const double rss = double(ru.ru_maxrss) * 1024;
    const double baseline = 96.0 * 1024 * 1024;  // the binary, its libraries, threads' stacks, the batch
    qInfo("peak RSS %.0f MiB; plan for 8 devices %.0f MiB, %.0f MiB of it never touched; one unsharded copy of the state would add %.0f MiB",
          rss / 1048576, planned / 1048576, unheld / 1048576, unsharded_state / 1048576);
    if (kUnderSanitizer) QSKIP("peak RSS is not compared with the plan under a sanitizer (shadow memory, quarantine)");
    QVERIFY2(rss <= 1.25 * (planned - unheld) + baseline,
             qPrintable(QString("RSS %1 MiB over 1.25 x plan %2 MiB").arg(rss / 1048576).arg((planned - unheld) / 1048576)));
    QVERIFY2(rss < planned + unsharded_state, "RSS as large as the plan plus an unsharded copy");
  }

  // Device threads are made once: the steps start no thread of their own (thread ids sampled from
  // /proc/self/task; one thread per device per step would add 8 each step). And with 8 devices on
  // 2 cores, no more than 2 devices are ever inside a kernel at once (a sweep over the trace's
  // compute spans; 6 without the budget). The runnable threads sampled from /proc are printed
  // only: about 3 on an idle machine, more while other processes queue the wake-ups.
  void devicesArePersistentAndShareTheCores() {
    // Wider and a larger batch than kMlp, so that steps are mostly compute (~25 ms), not wake-ups.
    std::string text = kMlp;
    text.replace(text.find("\"features\": 256"), 15, "\"features\": 1024");
    text.replace(text.find("\"batch_size\": 64"), 16, "\"batch_size\": 512");
    const project::Project p = project::parse_project(text, "wide.shardlab.json");
    runtime::TrainOptions o;
    o.threads = 2;
    o.mesh = "data=8";
    o.rules = "batch=data";
    o.trace_detailed = true;
    o.trace_keep = 20;
    runtime::Trainer t(p, o);
    const data::Dataset train = examples(512, 3);
    t.train_step(train.features, train.targets);  // the first step starts the threads
    std::atomic<bool> done{false};
    double sum = 0;
    int samples = 0;
    std::set<long> seen;  // every thread id of this process seen during the steps
    std::thread sampler([&] {
      while (!done) {
        const ThreadCensus c = thread_census();
        sum += c.runnable, ++samples;
        seen.insert(c.ids.begin(), c.ids.end());
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
    // Counted in this process, not from the kernel's last pid, which other processes move too.
    const std::set<long> before = thread_census().ids;  // the sampler included
    const int steps = 10;
    for (int s = 0; s < steps; ++s) t.train_step(train.features, train.targets);
    done = true;
    sampler.join();
    size_t created = 0;
    for (long id : seen) created += before.count(id) ? 0 : 1;
    // Most devices inside a kernel (compute or optimizer span) at the same moment.
    std::vector<std::pair<double, int>> edges;
    for (const profiler::Span& sp : t.trace().spans())
      if (sp.category == profiler::Category::Compute || sp.category == profiler::Category::Optimizer)
        edges.push_back({sp.start_us, 1}), edges.push_back({sp.start_us + sp.dur_us, -1});
    std::sort(edges.begin(), edges.end());  // an end sorts before a start at the same instant
    int open = 0, most = 0;
    for (const auto& [ts, d] : edges) most = std::max(most, open += d);
    const double mean = samples ? sum / samples : 0;
    qInfo("%d steps on 8 devices: %zu threads created meanwhile; at most %d devices in a kernel at once over %zu spans; "
          "%.2f runnable threads on average over %d samples",
          steps, created, most, edges.size() / 2, mean, samples);
    QVERIFY2(created < size_t(8 * steps / 2), "threads were created during the steps");
    QVERIFY(edges.size() > 100);
    QVERIFY2(most <= 2, qPrintable(QString("%1 devices computed at once on 2 cores").arg(most)));
  }

  // 4.8 TB of parameters: refused when the trainer is built, naming the need and the largest array,
  // before anything of that size is allocated.
  void aModelLargerThanTheMachineIsRefusedBeforeAllocating() {
    std::string text = kMlp;
    text.replace(text.find("\"features\": 256"), 15, "\"features\": 400000000");
    const project::Project p = project::parse_project(text, "huge.shardlab.json");
    const QString err = testing::error_of([&] { runtime::Trainer t(p); });
    VERIFY_CONTAINS(err, "the training step needs");
    VERIFY_CONTAINS(err, "TiB but only");
    VERIFY_CONTAINS(err, "dense1/kernel");
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    QVERIFY2(ru.ru_maxrss < 2L * 1024 * 1024, "the refusal came after a large allocation");
    bool typed = false;
    try {
      runtime::Trainer t(p);
    } catch (const backends::OutOfMemory&) {
      typed = true;
    } catch (...) {
    }
    QVERIFY2(typed, "the refusal is not a backends::OutOfMemory");
  }

  // The backend enumerates what it runs on.
  void cpuBackendDescribesItsDevice() {
    auto b = backends::make_backend("cpu");
    const auto devices = b->devices();
    QCOMPARE(devices.size(), size_t(1));
    QVERIFY(devices[0].memory_bytes > 0);
    QVERIFY(devices[0].cores >= 1);
    QVERIFY2(QString::fromStdString(devices[0].name).contains("GEMM"), devices[0].name.c_str());
    QVERIFY(b->capacity_per_device(8) * 8 <= b->capacity_per_device(1) + 8);
    const double peak = b->gemm_peak_flops();
    QVERIFY2(peak > 1e9 && peak < 1e13, qPrintable(QString("GEMM peak %1 FLOP/s").arg(peak)));
    QCOMPARE(b->gemm_peak_flops(), peak);  // measured once
    // Without CUDA in the build, or without a GPU, "cuda" is refused with the reason.
    const auto built = backends::built_backends();
    const QString err = testing::error_of([] { backends::make_backend("cuda"); });
    if (std::find(built.begin(), built.end(), "cuda") == built.end()) {
      VERIFY_CONTAINS(err, "cuda");
      VERIFY_CONTAINS(err, "without CUDA");
    } else if (!err.isEmpty()) {
      VERIFY_CONTAINS(err, "no CUDA GPU found: ");
      QVERIFY2(!err.contains('\n'), qPrintable(err));
    }
    VERIFY_CONTAINS(testing::error_of([] { backends::make_backend("tpu"); }), "backend 'tpu': unknown; this build has: cpu");
  }

  // The CUDA backend is a module found beside the program (build/lib/shardlab/backends here) or in
  // $SHARDLAB_BACKEND_DIR; a file that is not a module, or is missing, is refused naming the file.
  // (Where a module is built, cpuBackendDescribesItsDevice above already saw the module's own
  // error, "no CUDA GPU found", cross into this program as a shardlab::Error.)
  void backendModulesAreFoundAndCheckedBeforeUse() {
    const backends::ModuleSearch found = backends::find_backend_module("cuda");
    QVERIFY(!found.looked_in.empty());
    QCOMPARE(QString::fromStdString(found.looked_in.back()), QString(SHARDLAB_BINARY_DIR "/lib/shardlab/backends"));
    const auto built = backends::built_backends();
    const bool has_cuda = std::find(built.begin(), built.end(), "cuda") != built.end();
    QCOMPARE(!found.path.empty(), has_cuda);
    if (has_cuda) QCOMPARE(QString::fromStdString(found.path), QString(SHARDLAB_BINARY_DIR "/lib/shardlab/backends/libshardlab_backend_cuda.so"));

    QTemporaryDir dir;
    qputenv("SHARDLAB_BACKEND_DIR", dir.path().toUtf8());
    const backends::ModuleSearch env = backends::find_backend_module("cuda");
    qunsetenv("SHARDLAB_BACKEND_DIR");
    QCOMPARE(QString::fromStdString(env.looked_in.front()), dir.path());
    QCOMPARE(env.path, found.path);  // nothing there: the folder beside the program still counts

    const std::string missing = dir.path().toStdString() + "/libshardlab_backend_none.so";
    VERIFY_CONTAINS(testing::error_of([&] { backends::make_module_backend(missing, {}); }),
                    QString::fromStdString("backend module " + missing + ": cannot be loaded: "));
    // A shared library that is not a backend module: the test build's fault-injection shim.
    const std::string shim = SHARDLAB_BINARY_DIR "/tests/libshardlab_fault_shim.so";
    if (QFileInfo::exists(QString::fromStdString(shim)))
      VERIFY_CONTAINS(testing::error_of([&] { backends::make_module_backend(shim, {}); }),
                      QString::fromStdString("backend module " + shim + ": not a Shardlab backend module (it lacks shardlab_backend_module_build)"));
    VERIFY_CONTAINS(QString::fromStdString(backends::backend_module_build()), "Shardlab ");
  }
};

QTEST_APPLESS_MAIN(TestRuntime)
#include "test_runtime.moc"
