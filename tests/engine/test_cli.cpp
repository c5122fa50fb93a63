// shardlab-cli as a user runs it: the real binary, its exit codes, stdout, stderr and log file.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/api/build_info.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/backend.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/test_support.h"

using Json = nlohmann::ordered_json;

namespace {

using Result = shardlab::testing::CliResult;
using shardlab::testing::run_cli;

using shardlab::testing::kCli;
const QString kProjects = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects");
// A command that calibrates this machine: sanitizer builds run it several times slower.
constexpr int kCalibrateMs = 600000;



QString describe(const Result& r) {
  return QString("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(r.exit_code).arg(r.out, r.err);
}

// Input 16 -> Dense 10, mean squared error on synthetic ones, batch 8, 5 steps.
Json small_project() {
  return Json::parse(R"({
    "format": "shardlab.project",
    "version": 1,
    "name": "small",
    "graph": {
      "nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [16]}},
        {"name": "dense", "type": "Dense", "params": {"features": 10}}
      ],
      "edges": [{"from": "x.out", "to": "dense.in"}]
    },
    "loss": {"type": "mean_squared_error", "output": "dense"},
    "optimizer": {"type": "sgd", "learning_rate": 0.1},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 5, "eval": false}
  })");
}

QString write_project(const QTemporaryDir& dir, const QString& name, const Json& j) {
  const QString path = dir.filePath(name);
  std::ofstream(path.toStdString()) << j.dump(2) << "\n";
  return path;
}

QStringList nonempty_lines(const QString& s) { return s.split('\n', Qt::SkipEmptyParts); }

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + " is not built")); }

  void checkPrintsTheLayerTable() {
    Result r = run_cli({"check", kProjects + "/fashion-mlp.shardlab.json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "dense1");
    VERIFY_CONTAINS(r.out, "(batch 128, mlp 256)");
    VERIFY_CONTAINS(r.out, "kernel (embed 784, mlp 256)");
    VERIFY_CONTAINS(r.out, "203530 parameters");
    QVERIFY2(r.err.isEmpty(), qPrintable(describe(r)));
  }

  void checkBatchSizeOverridesTheProject() {
    Result r = run_cli({"check", "--batch-size", "4", kProjects + "/fashion-mlp.shardlab.json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "(batch 4, mlp 256)");
  }

  void checkJsonIsMachineReadable() {
    Result r = run_cli({"check", "--json", kProjects + "/fashion-mlp.shardlab.json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j;
    try {
      j = Json::parse(r.out.toStdString());
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("stdout is not JSON (%1):\n%2").arg(e.what(), r.out)));
    }
    QVERIFY(j.contains("layers") && j["layers"].is_array());
    QCOMPARE(j["layers"].size(), size_t(5));
    QCOMPARE(j["totals"]["param_count"].get<int64_t>(), int64_t(203530));
    QVERIFY(j["memory"]["total_bytes"].get<double>() > 0);
    QCOMPARE(j["batch_size"].get<int64_t>(), int64_t(128));

    const Json* dense1 = nullptr;
    for (const Json& l : j["layers"])
      if (l["name"] == "dense1") dense1 = &l;
    QVERIFY(dense1);
    QCOMPARE((*dense1)["output_shape"], Json({128, 256}));
    QCOMPARE((*dense1)["output_axes"], Json({"batch", "mlp"}));
    QCOMPARE((*dense1)["params"][0]["shape"], Json({784, 256}));
    QCOMPARE((*dense1)["forward_flops"].get<double>(), 2.0 * 128 * 784 * 256 + 128.0 * 256);
  }

  void checkOfABrokenProjectIsOneErrorLine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json j = small_project();
    j["graph"]["nodes"][1]["params"]["features"] = 0;
    const QString path = write_project(dir, "broken.shardlab.json", j);
    Result r = run_cli({"check", path});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    QStringList lines = nonempty_lines(r.err);
    QVERIFY2(lines.size() == 1, qPrintable(describe(r)));
    QVERIFY2(lines[0].startsWith("shardlab-cli: error:"), qPrintable(describe(r)));
    VERIFY_CONTAINS(lines[0], path);
    VERIFY_CONTAINS(lines[0], "node 'dense'");
    VERIFY_CONTAINS(lines[0], "features");
    QVERIFY2(r.out.isEmpty(), qPrintable(describe(r)));
  }

  void checkWithSeveralErrorsStillPrintsOneLine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json j = small_project();
    j["graph"]["nodes"][1]["type"] = "Dnese";
    j["graph"]["edges"].push_back({{"from", "x.out"}, {"to", "ghost.in"}});
    const QString path = write_project(dir, "two-errors.shardlab.json", j);
    Result r = run_cli({"check", path});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    QStringList lines = nonempty_lines(r.err);
    QVERIFY2(lines.size() == 1, qPrintable(describe(r)));
    QVERIFY2(lines[0].startsWith("shardlab-cli: error:"), qPrintable(describe(r)));
    VERIFY_CONTAINS(lines[0], "node 'dense'");
    VERIFY_CONTAINS(lines[0], "Dnese");
    VERIFY_CONTAINS(lines[0], "ghost");
  }

  // Data that does not fit the model: the error, and under it what would fix it.
  void checkSaysHowToFitTheData() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Json j = small_project();
    j["data"] = {{"type", "synthetic"}, {"kind", "normal"}, {"feature_shape", {16}}, {"target_shape", {3}}, {"examples", 16}};
    const QString path = write_project(dir, "misfit.shardlab.json", j);
    Result r = run_cli({"check", path});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    const QStringList lines = nonempty_lines(r.err);
    QVERIFY2(lines.size() == 2, qPrintable(describe(r)));
    VERIFY_CONTAINS(lines[0], "targets have shape (3,) per example");
    QCOMPARE(lines[1], QString("  fix: make 'dense' give (3,) per example, as the data's targets are"));
  }

  void checkOfMalformedJsonGivesLineAndColumn() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("bad.shardlab.json");
    std::ofstream(path.toStdString()) << "{\n  \"format\": \"shardlab.project\",\n  \"version\": 1,,\n}\n";
    Result r = run_cli({"check", path});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    QStringList lines = nonempty_lines(r.err);
    QVERIFY2(lines.size() == 1, qPrintable(describe(r)));
    VERIFY_CONTAINS(lines[0], path);
    VERIFY_CONTAINS(lines[0], "line 3, column 16");
  }

  // A node name nested 100,000 arrays deep (the parser recursed once per level and overflowed the
  // stack: exit 139) is one short error line, for check and train alike.
  void deeplyNestedJsonIsOneShortErrorLine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("nested.shardlab.json");
    const std::string nested = std::string(100000, '[') + std::string(100000, ']');
    std::ofstream(path.toStdString()) << R"({"format": "shardlab.project", "version": 1, "graph": {"nodes": [{"name": )" << nested
                                      << R"(, "type": "Input"}], "edges": []}})";
    for (const char* command : {"check", "train"}) {
      Result r = run_cli({command, path});
      QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
      const QStringList lines = nonempty_lines(r.err);
      QVERIFY2(lines.size() == 1 && lines[0].size() < 300, qPrintable(describe(r).left(2000)));
      VERIFY_CONTAINS(lines[0], path + ": JSON nested deeper than 256 levels");
    }
  }

  void checkOfAMissingFileNamesThePath() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("nothing-here.shardlab.json");
    Result r = run_cli({"check", path});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    QVERIFY2(r.err.startsWith("shardlab-cli: error:"), qPrintable(describe(r)));
    VERIFY_CONTAINS(r.err, path);
    VERIFY_CONTAINS(r.err, "no such file");
  }

  void trainWritesAStepLogAndPlainProgress() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "small.shardlab.json", small_project());
    const QString log = dir.filePath("run.jsonl");
    Result r = run_cli({"train", path, "--log", log, "--threads", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));

    // The log: one JSON object a line, five of them steps 1..5 with the step metrics.
    std::ifstream in(log.toStdString());
    QVERIFY2(in.good(), qPrintable("no log at " + log));
    std::string line;
    int steps = 0;
    while (std::getline(in, line)) {
      Json e;
      try {
        e = Json::parse(line);
      } catch (const std::exception& ex) {
        QFAIL(qPrintable(QString("log line is not JSON (%1): %2").arg(ex.what(), QString::fromStdString(line))));
      }
      if (e.value("event", "") != "step") continue;
      ++steps;
      QCOMPARE(e["step"].get<int64_t>(), int64_t(steps));
      for (const char* k : {"step", "loss", "step_time_s", "examples_per_s"})
        QVERIFY2(e.contains(k), qPrintable(QString("step line lacks %1: %2").arg(k, QString::fromStdString(line))));
      QVERIFY(e["loss"].is_number());
      QVERIFY(e["step_time_s"].get<double>() >= 0);
      QVERIFY(e["examples_per_s"].get<double>() > 0);
    }
    QCOMPARE(steps, 5);

    // stdout is a pipe here, not a terminal: plain lines, no progress bar redraws.
    for (int s = 1; s <= 5; ++s) VERIFY_CONTAINS(r.out, QString("step %1/5").arg(s));
    QStringList step_lines;
    for (const QString& l : r.out.split('\n'))
      if (l.startsWith("step ")) step_lines << l;
    QCOMPARE(step_lines.size(), 5);
    QVERIFY2(step_lines.last().startsWith("step 5/5"), qPrintable(r.out));
    QVERIFY2(!r.out.contains('\r') && !r.out.contains("\x1b"), qPrintable(r.out));
  }

  void trainQuietPrintsNoStepLines() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "small.shardlab.json", small_project());
    Result r = run_cli({"train", path, "--quiet", "--threads", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY2(!r.out.contains("step 1/5"), qPrintable(describe(r)));
  }

  void trainStepsOptionOverridesTheProject() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "small.shardlab.json", small_project());
    Result r = run_cli({"train", path, "--steps", "3", "--threads", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "step 3/3");
    QVERIFY2(!r.out.contains("step 4/"), qPrintable(describe(r)));
  }

  // --accumulate runs each batch as microbatches: the same losses as the whole batch, the count in
  // the log and the check; a count that does not divide the batch is one error line naming the field.
  void accumulateRunsTheBatchAsMicrobatches() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = write_project(dir, "small.shardlab.json", small_project());
    auto losses = [&](const QString& accumulate, Json* start) {
      const QString log = dir.filePath("run-" + accumulate + ".jsonl");
      const Result r = run_cli({"train", path, "--accumulate", accumulate, "--steps", "3", "--log", log, "--threads", "1"});
      std::vector<double> out;
      if (r.exit_code != 0) {
        qWarning("%s", qPrintable(describe(r)));
        return out;
      }
      std::ifstream in(log.toStdString());
      for (std::string line; std::getline(in, line);) {
        const Json e = Json::parse(line);
        if (e.value("event", "") == "step") out.push_back(e["loss"].get<double>());
        if (e.value("event", "") == "start") *start = e;
      }
      return out;
    };
    Json whole_start, micro_start;
    const std::vector<double> whole = losses("1", &whole_start), micro = losses("4", &micro_start);
    QCOMPARE(whole.size(), size_t(3));
    QCOMPARE(micro.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) QVERIFY2(std::abs(micro[i] - whole[i]) <= 1e-6 * std::abs(whole[i]), qPrintable(QString::number(i)));
    QCOMPARE(micro_start["accumulate"].get<int64_t>(), int64_t(4));
    QCOMPARE(whole_start["accumulate"].get<int64_t>(), int64_t(1));

    Result r = run_cli({"check", path, "--accumulate", "4"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "batch 8, as 4 microbatches of 2");
    r = run_cli({"shard", path, "--accumulate", "2", "--mesh", "data=2", "--rules", "batch=data", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QCOMPARE(Json::parse(r.out.toStdString())["microbatches"].get<int64_t>(), int64_t(2));
    r = run_cli({"check", path, "--accumulate", "3"});
    QCOMPARE(r.exit_code, 1);
    QCOMPARE(nonempty_lines(r.err).size(), 1);
    VERIFY_CONTAINS(r.err, "training.accumulate: 3 microbatches do not divide the batch size 8");
  }

  void unknownOptionFails() {
    Result r = run_cli({"check", "--no-such-option", kProjects + "/fashion-mlp.shardlab.json"});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out + r.err, "--no-such-option");
  }

  void missingSubcommandFails() {
    Result r = run_cli({});
    QVERIFY2(r.exit_code != 0, qPrintable(describe(r)));
  }

  // --version: the version, the build options and the GEMM kernel this CPU runs, as the engine
  // reports them; no subcommand needed.
  void versionShowsBuildOptionsAndTheCpuCodePath() {
    Result r = run_cli({"--version"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QCOMPARE(r.out, QString::fromStdString(shardlab::api::build_info_text()));
    QVERIFY2(QRegularExpression("^Shardlab \\d+\\.\\d+\\.\\d+\\nbuilt with: CUDA (yes|no), MPI (yes|no), ONNX (yes|no)\\n")
                 .match(r.out)
                 .hasMatch(),
             qPrintable(r.out));
    VERIFY_CONTAINS(r.out, QString(" GEMM kernel (picked at run time)"));
    VERIFY_CONTAINS(r.out, QString::fromStdString(shardlab::backends::cpu::gemm_kind()));
  }

  // shard: the project's own mesh and rules (seed 002's), every array's spec, per-device totals.
  void shardPrintsSpecsUnderTheProjectsMeshAndRules() {
    Result r = run_cli({"shard", kProjects + "/dot-relu-dot.shardlab.json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "mesh data=2,model=4 (8 devices)");
    VERIFY_CONTAINS(r.out, "PartitionSpec(None, None, 'model')");
    VERIFY_CONTAINS(r.out, "PartitionSpec('data', None)");
    VERIFY_CONTAINS(r.out, "on each of 8 devices");
  }

  void shardShowDrawsTheBlocksOfOneArray() {
    Result r = run_cli({"shard", kProjects + "/dot-relu-dot.shardlab.json", "--show", "x"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "CPU 0,1,2,3");
    VERIFY_CONTAINS(r.out, "CPU 4,5,6,7");
    r = run_cli({"shard", kProjects + "/dot-relu-dot.shardlab.json", "--show", "nothing"});
    QVERIFY(r.exit_code != 0);
    VERIFY_CONTAINS(r.err, "no array 'nothing'");
  }

  void shardMeshAndRulesOnTheCommandLineOverrideTheProjects() {
    Result r = run_cli({"shard", kProjects + "/deep-mlp-small.shardlab.json", "--mesh", "data=8", "--rules", "batch=data", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j = Json::parse(r.out.toStdString());
    QCOMPARE(j["devices"].size(), size_t(8));
    std::string x_spec;
    for (const auto& a : j["arrays"])
      if (a["name"] == "x") x_spec = a["spec"].dump();
    QCOMPARE(x_spec, std::string(R"(["data",null])"));
    VERIFY_CONTAINS(QString::fromStdString(j["warnings"].dump()), "is replicated on all 8 devices");
  }

  void shardIndivisibleBatchIsAnErrorWithTheNearestSizes() {
    Result r = run_cli({"shard", kProjects + "/fashion-mlp.shardlab.json", "--mesh", "data=3", "--rules", "batch=data"});
    QVERIFY(r.exit_code != 0);
    VERIFY_CONTAINS(r.err, "mesh axis data (3) does not divide 5 arrays it splits: 'image' dimension 0 (128)");
    VERIFY_CONTAINS(r.err, "2 or 4");
  }

  // shard --processes: which process of an mpirun -np K run holds each device, in the text, the
  // JSON and the drawn blocks; a mesh the processes do not divide is refused.
  void shardNamesTheProcessHoldingEachDevice() {
    const QString p = kProjects + "/fashion-mlp.shardlab.json";
    Result r = run_cli({"shard", p, "--mesh", "data=2,model=2", "--rules", "batch=data,mlp=model", "--processes", "2", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j = Json::parse(r.out.toStdString());
    QCOMPARE(j["devices"].size(), size_t(4));
    for (int d = 0; d < 4; ++d) QCOMPARE(j["devices"][size_t(d)]["process"].get<int>(), d / 2);
    r = run_cli({"shard", p, "--mesh", "data=2,model=2", "--rules", "batch=data,mlp=model", "--processes", "2"});
    VERIFY_CONTAINS(r.out, "process 0 holds devices 0-1; process 1 holds devices 2-3");
    r = run_cli({"shard", p, "--mesh", "data=2,model=2", "--rules", "batch=data,mlp=model", "--processes", "2", "--show", "dense1/kernel"});
    VERIFY_CONTAINS(r.out, "CPU 0,2 (processes 0,1)");
    r = run_cli({"shard", p, "--mesh", "data=4", "--rules", "batch=data", "--processes", "3"});
    QVERIFY(r.exit_code != 0);
    VERIFY_CONTAINS(r.err, "4 devices, which do not divide among 3 processes");
  }

  // --preset is the GUI's presets menu on the command line: the same engine function sets the mesh
  // and the rules, and every planning command takes it.
  void presetSetsTheMeshAndRulesAsTheGuisMenuDoes() {
    Result r = run_cli({"shard", kProjects + "/deep-mlp-small.shardlab.json", "--preset", "fsdp", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j = Json::parse(r.out.toStdString());
    QCOMPARE(j["devices"].size(), size_t(8));  // a one-device project gets seed 002's 8 devices
    QCOMPARE(j["mesh"].dump(), std::string(R"({"data":8})"));
    VERIFY_CONTAINS(QString::fromStdString(j["rules"].dump()), R"(["embed","data"])");
    r = run_cli({"shard", kProjects + "/deep-mlp-small.shardlab.json", "--preset", "megatron", "--mesh", "data=2,model=2", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    j = Json::parse(r.out.toStdString());
    QCOMPARE(j["mesh"].dump(), std::string(R"({"data":2,"model":2})"));
    VERIFY_CONTAINS(QString::fromStdString(j["rules"].dump()), R"(["mlp","model"])");
    r = run_cli({"check", kProjects + "/deep-mlp-small.shardlab.json", "--preset", "data_parallel", "--mesh", "data=2"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
  }
  void presetErrorsNameThePresetsThereAre() {
    Result r = run_cli({"shard", kProjects + "/deep-mlp-small.shardlab.json", "--preset", "zero3"});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "preset 'zero3': no such preset (there are data_parallel, model_parallel, megatron, fsdp)");
    r = run_cli({"train", kProjects + "/deep-mlp-small.shardlab.json", "--preset", "fsdp", "--rules", "batch=data"});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "--preset fsdp and --rules both set the logical axis rules");
  }
  // advise --json: every candidate with its mesh, rules, memory and prediction, best first.
  // advise measures this machine once (saved under the config folder) and reuses it; the JSON has
  // every figure, ranked; the best candidate passes the design check; a GPU profile by name.
  void adviseRanksTheLayoutsAsJson() {
    QTemporaryDir config;
    QProcessEnvironment env;
    env.insert("XDG_CONFIG_HOME", config.path());
    // The first call calibrates this machine for 1-8 devices: about 25 s in a Release build, near
    // 4 min under AddressSanitizer, more on a loaded machine.
    Result r = run_cli({"advise", kProjects + "/deep-mlp-small.shardlab.json", "--devices", "8", "--threads", "2", "--json"}, kCalibrateMs, env);
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    const QString saved = config.filePath("shardlab/hardware/this-machine.json");
    QVERIFY2(QFile::exists(saved), "advise did not save its calibration");
    Json j = Json::parse(r.out.toStdString());
    QVERIFY(j["candidates"].size() >= 8);
    const Json& best = j["candidates"][0];
    QVERIFY(best["fits"].get<bool>());
    QVERIFY(best["predicted_step_ms"].get<double>() > 0);
    QVERIFY(best["bound_by"] == "compute" || best["bound_by"] == "memory" || best["bound_by"] == "communication");
    // Beside the named strategies, a search of the model's own axes: what it did, and why the first is first.
    // (Every survivor of the pruning is partitioned or bounded out; which, depends on this machine.)
    const Json& search = j["search"];
    QVERIFY2(search["survivors"].get<int64_t>() > 0, search.dump().c_str());
    QVERIFY(search["assignments"].get<int64_t>() > search["survivors"].get<int64_t>());
    QCOMPARE(search["partitioned"].get<int64_t>() + search["bounded_out"].get<int64_t>() + search["past_limit"].get<int64_t>(),
             search["survivors"].get<int64_t>());
    VERIFY_CONTAINS(QString::fromStdString(j["why_the_first"].get<std::string>()), "bound by");
    double last = 0;
    for (const auto& c : j["candidates"]) {
      if (c.contains("error") || !c["fits"].get<bool>()) break;
      QVERIFY(c["predicted_step_ms"].get<double>() >= last);
      last = c["predicted_step_ms"].get<double>();
    }
    const Json& gpu = j["gpu_worth_it"];
    QVERIFY(gpu["gpu_step_ms"].get<double>() < gpu["cpu_step_ms"].get<double>());
    QCOMPARE(gpu["examples_per_s_needed"].get<double>(), 512 / (gpu["gpu_step_ms"].get<double>() / 1e3));
    // The best candidate trains as advised.
    r = run_cli({"check", kProjects + "/deep-mlp-small.shardlab.json", "--mesh", QString::fromStdString(best["mesh"]),
                 "--rules", QString::fromStdString(best["rules"])});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));

    // The saved calibration is reused: the same machine figures, at once.
    r = run_cli({"advise", kProjects + "/deep-mlp-small.shardlab.json", "--devices", "8", "--threads", "2", "--json"}, 120000, env);
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QCOMPARE(Json::parse(r.out.toStdString())["hardware"]["measured"], j["hardware"]["measured"]);
    // ... and checked against a GEMM timed now. (Whether it is called stale here depends on what ran
    // beside this test while it calibrated: ctest runs two suites at once.)
    const Json checked = Json::parse(r.out.toStdString())["calibration"];
    QVERIFY(checked["gemm_flops_now"].get<double>() > 0);
    QVERIFY(checked["saved_gemm_flops"].get<double>() > 0);
    // A profile measured while the machine was busy (here: GEMMs at 1 GFLOP/s, slower than any
    // machine runs them) is called stale, saying what to do.
    {
      QFile f(saved);
      QVERIFY(f.open(QIODevice::ReadOnly));
      Json profile = Json::parse(f.readAll().toStdString());
      f.close();
      profile["peak_flops"]["float32"] = 1e9;
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(QByteArray::fromStdString(profile.dump()));
    }
    r = run_cli({"advise", kProjects + "/deep-mlp-small.shardlab.json", "--devices", "8", "--threads", "2"}, 120000, env);
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.err, "where its calibration");
    VERIFY_CONTAINS(r.err, "measured 1: the profile was measured while the machine was busy");
    VERIFY_CONTAINS(r.err, "`shardlab-cli calibrate`");
    VERIFY_CONTAINS(r.out, "Why the first: ");
    VERIFY_CONTAINS(r.out, "Searched batch");

    // On 16 H100s over InfiniBand each device has 80 GB.
    // (Only the named strategies: --no-search.)
    r = run_cli({"advise", kProjects + "/deep-mlp.shardlab.json", "--devices", "16", "--hardware", "h100-infiniband", "--json", "--no-search"},
                120000, env);
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    j = Json::parse(r.out.toStdString());
    QVERIFY(!j.contains("search"));
    for (const auto& c : j["candidates"]) QVERIFY(c["strategy"] != "searched");
    QCOMPARE(j["hardware"]["kind"], "gpu");
    QVERIFY(j["candidates"][0]["fits"].get<bool>());
    QCOMPARE(j["hardware"]["capacity_bytes_per_device"].get<double>(), 85899345920.0);

    r = run_cli({"advise", kProjects + "/deep-mlp-small.shardlab.json", "--devices", "8", "--hardware", "tpu-v9"}, 120000, env);
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "tpu-v9");
    r = run_cli({"advise", kProjects + "/deep-mlp-small.shardlab.json"});
    QVERIFY(r.exit_code != 0);  // --devices is required
  }

  // calibrate checks where --out goes before it measures anything: a device, a FIFO or a
  // checkpoint's file is refused at once, and left as it was.
  void calibrateRefusesItsOutBeforeMeasuring() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("fifo");
    QCOMPARE(::mkfifo(fifo.toUtf8().constData(), 0644), 0);
    const Result r = run_cli({"calibrate", "--out", fifo});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "--out " + fifo + ": is a FIFO");
    VERIFY_LACKS(r.out, "GEMM");  // nothing was measured
  }

  // calibrate writes a profile a user can read, edit and hand to advise.
  void calibrateWritesAProfileAdviseReads() {
    QTemporaryDir dir;
    const QString file = dir.filePath("mine.json");
    Result r = run_cli({"calibrate", "--threads", "2", "--devices", "2", "--out", file}, kCalibrateMs);
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "all_reduce");
    VERIFY_CONTAINS(r.out, file);
    std::ifstream in(file.toStdString());
    Json profile = Json::parse(in);
    QCOMPARE(profile["format"], "shardlab.hardware");
    QCOMPARE(profile["rates"].size(), size_t(2));
    // "Is a GPU worth it?" sets this machine beside the GPU whatever --hardware is, and advise
    // measures it first where no profile of it is saved (minutes under ASan): the one just measured
    // is saved as this machine's.
    QTemporaryDir config;
    QVERIFY(QDir().mkpath(config.filePath("shardlab/hardware")));
    QVERIFY(QFile::copy(file, config.filePath("shardlab/hardware/this-machine.json")));
    QProcessEnvironment env;
    env.insert("XDG_CONFIG_HOME", config.path());
    profile["name"] = "my edited machine";
    std::ofstream(file.toStdString()) << profile.dump(2);
    r = run_cli({"advise", kProjects + "/fashion-mlp.shardlab.json", "--devices", "2", "--threads", "2", "--hardware", file},
                kCalibrateMs, env);
    QVERIFY2(!r.err.contains("Measured this machine"), qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "my edited machine");
    VERIFY_CONTAINS(r.out, "Is a GPU worth it?");
    // A broken edit is named, field and file.
    profile["rates"][0].erase("memory_bytes_per_s");
    std::ofstream(file.toStdString()) << profile.dump(2);
    r = run_cli({"advise", kProjects + "/fashion-mlp.shardlab.json", "--devices", "2", "--threads", "2", "--hardware", file},
                kCalibrateMs, env);
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "rates[0].memory_bytes_per_s: missing");
  }

  // shard's per-device memory is the partitioned step's buffer plan, and a gradient shows the sum
  // still pending where the step produces it (before its reduce-scatter).
  void shardReadsTheDevicesMemoryFromThePlan() {
    Result r = run_cli({"shard", kProjects + "/deep-mlp-small.shardlab.json", "--mesh", "data=4", "--rules", "batch=data", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    Json j = Json::parse(r.out.toStdString());
    QCOMPARE(j["devices"][0]["total"].get<double>(), j["plan_per_device"]["total_bytes"].get<double>());
    QCOMPARE(j["devices"][0]["arena"].get<double>(), j["plan_per_device"]["arena_bytes"].get<double>());
    bool pending = false;
    for (const auto& a : j["arrays"])
      if (a["kind"] == "gradient" && a.contains("pending_sum")) pending = a["pending_sum"].dump() == R"(["data"])";
    QVERIFY2(pending, "no gradient shows its pending sum over data");
  }

  // --dtype, --param-dtype and --matmul-precision override the project's precision for check, shard
  // and train; shard --json gives each array's dtype beside its bytes (bfloat16 activations take
  // half of float32's), check --json the policy; a bad value is one error line.
  void precisionFlagsOverrideTheProject() {
    const QString project = kProjects + "/fashion-mlp.shardlab.json";
    Result f32 = run_cli({"shard", project, "--json"});
    Result bf16 = run_cli({"shard", project, "--json", "--dtype", "bfloat16", "--param-dtype", "bfloat16"});
    QVERIFY2(f32.exit_code == 0 && bf16.exit_code == 0, qPrintable(describe(bf16)));
    const Json a = Json::parse(f32.out.toStdString()), b = Json::parse(bf16.out.toStdString());
    QCOMPARE(b["precision"]["dtype"], Json("bfloat16"));
    QCOMPARE(b["precision"]["param_dtype"], Json("bfloat16"));
    auto array = [](const Json& j, const std::string& name) {
      for (const auto& x : j["arrays"])
        if (x["name"] == name) return x;
      return Json();
    };
    QCOMPARE(array(a, "dense1/kernel")["dtype"], Json("float32"));
    QCOMPARE(array(b, "dense1/kernel")["dtype"], Json("bfloat16"));
    QCOMPARE(array(b, "dense1/kernel")["bytes_per_device"].get<double>(), array(a, "dense1/kernel")["bytes_per_device"].get<double>() / 2);
    QCOMPARE(array(b, "dense1/kernel/mu")["dtype"], Json("float32"));  // optimizer state stays float32
    QCOMPARE(array(b, "relu")["dtype"], Json("bfloat16"));
    QCOMPARE(array(b, "relu")["bytes_per_device"].get<double>(), array(a, "relu")["bytes_per_device"].get<double>() / 2);

    Result check = run_cli({"check", project, "--json", "--dtype", "float16", "--matmul-precision", "tf32"});
    QVERIFY2(check.exit_code == 0, qPrintable(describe(check)));
    const Json c = Json::parse(check.out.toStdString());
    QCOMPARE(c["precision"]["dtype"], Json("float16"));
    QCOMPARE(c["precision"]["matmul_precision"], Json("tf32"));
    QCOMPARE(c["precision"]["loss_scaling"], Json(true));

    QTemporaryDir dir;
    const QString log = dir.filePath("run.jsonl");
    Result train = run_cli({"train", write_project(dir, "small.json", small_project()), "--dtype", "float16", "--log", log, "--quiet"});
    QVERIFY2(train.exit_code == 0, qPrintable(describe(train)));
    std::ifstream in(log.toStdString());
    std::string line;
    std::getline(in, line);
    QCOMPARE(Json::parse(line)["precision"], Json("float16 compute, float32 parameters, dynamic loss scaling"));
    std::getline(in, line);
    const Json step = Json::parse(line);
    QCOMPARE(step["loss_scale"].get<double>(), 65536.0);
    QCOMPARE(step["skipped"], Json(false));

    Result bad = run_cli({"check", project, "--dtype", "float64"});
    QVERIFY(bad.exit_code != 0);
    VERIFY_CONTAINS(bad.err, "--dtype");
  }

  // train --trace writes Chrome trace JSON; profile prints the per-device breakdown and top spans.
  void trainWritesAChromeTrace() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("run.json");
    Result r = run_cli({"train", kProjects + "/deep-mlp-small.shardlab.json", "--steps", "3", "--batch-size", "64", "--trace", trace,
                        "--trace-steps", "2:3"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    Json j = Json::parse(f.readAll().toStdString());
    int x = 0;
    for (const auto& e : j["traceEvents"]) x += e["ph"] == "X";
    QVERIFY(x > 20);
    r = run_cli({"train", kProjects + "/deep-mlp-small.shardlab.json", "--steps", "1", "--trace-steps", "5:2", "--trace", trace});
    QVERIFY(r.exit_code != 0);
    VERIFY_CONTAINS(r.err, "--trace-steps '5:2'");
  }

  // --backend cuda where there is no GPU (or no CUDA in the build) is one error line and exit 1,
  // for every command that runs on or plans for devices; never a crash.
  void cudaBackendWithoutAGpuIsOneErrorLine() {
    const QString why = shardlab::testing::error_of([] { shardlab::backends::make_backend("cuda"); });
    if (why.isEmpty()) QSKIP("a CUDA GPU is present here: --backend cuda runs instead of refusing");
    const auto built = shardlab::backends::built_backends();
    const bool has_cuda = std::find(built.begin(), built.end(), "cuda") != built.end();
    const QString project = kProjects + "/dot-relu-dot.shardlab.json";
    for (const QString& cmd : {QString("train"), QString("shard"), QString("profile")}) {
      QStringList args{cmd, project, "--backend", "cuda"};
      if (cmd != "shard") args << "--steps" << "2";
      const Result r = run_cli(args);
      QVERIFY2(r.exit_code == 1, qPrintable(cmd + ": " + describe(r)));
      const QStringList lines = r.err.trimmed().split('\n');
      QVERIFY2(lines.size() == 1, qPrintable(cmd + ": " + describe(r)));
      VERIFY_CONTAINS(lines[0], "shardlab-cli: error: ");
      VERIFY_CONTAINS(lines[0], has_cuda ? "no CUDA GPU found: " : "without CUDA");
      QVERIFY2(r.out.isEmpty(), qPrintable(cmd + ": " + describe(r)));
    }
    const Result bad = run_cli({"train", project, "--backend", "tpu"});
    QVERIFY2(bad.exit_code != 0 && bad.err.contains("tpu"), qPrintable(describe(bad)));
  }

  void profilePrintsTheStepBreakdown() {
    Result r = run_cli({"profile", kProjects + "/fashion-mlp.shardlab.json", "--steps", "4", "--mesh", "data=2", "--rules", "batch=data"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    VERIFY_CONTAINS(r.out, "CPU 0");
    VERIFY_CONTAINS(r.out, "CPU 1");
    VERIFY_CONTAINS(r.out, "MFU");
    VERIFY_CONTAINS(r.out, "top spans");
    VERIFY_CONTAINS(r.out, "all_reduce");
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
