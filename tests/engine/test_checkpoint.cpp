// Checkpoints: resuming continues bit for bit, a checkpoint restores onto another mesh with
// identical values, a process killed mid-save leaves the previous checkpoint loadable, old ones
// are pruned, and export writes the parameters alone.
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/export/onnx_export.h"
#include "engine/runtime/trainer.h"
#include "engine/util/error.h"
#include "tests/engine/trainer_state.h"

using namespace shardlab;
namespace fs = std::filesystem;

using shardlab::testing::bitwise_equal;
using shardlab::testing::states;

namespace {

const char* kMlp = R"({
  "format": "shardlab.project", "version": 1,
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [32], "axes": ["embed"]}},
      {"name": "l0", "type": "Dense", "params": {"features": 64}}, {"name": "r0", "type": "ReLU"},
      {"name": "drop", "type": "Dropout", "params": {"rate": 0.1}},
      {"name": "out", "type": "Dense", "params": {"features": 4}, "param_axes": {"kernel": ["mlp", "classes"], "bias": ["classes"]}}],
    "edges": [{"from": "x.out", "to": "l0.in"}, {"from": "l0.out", "to": "r0.in"}, {"from": "r0.out", "to": "drop.in"},
              {"from": "drop.out", "to": "out.in"}]},
  "loss": {"type": "softmax_cross_entropy", "output": "out"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [32], "classes": 4, "examples": 256},
  "training": {"batch_size": 32, "steps": 12, "eval": false, "seed": 3}
})";

struct Losses : runtime::TrainerListener {
  std::vector<double> v;
  void on_step(const runtime::StepEvent& e) override { v.push_back(e.loss); }
};

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private slots:

  // N steps straight against N/2, a checkpoint and a resume for N/2, on the same mesh: the losses
  // and the whole state agree bit for bit (dropout, shuffling and Adam included: the step count and
  // the dropout key come back with the checkpoint, not from zero).
  void resumeContinuesBitForBit_data() {
    QTest::addColumn<QString>("mesh");
    QTest::addColumn<QString>("rules");
    QTest::newRow("one device") << "" << "";
    QTest::newRow("data=8") << "data=8" << "batch=data";
    QTest::newRow("data=2,model=4") << "data=2,model=4" << "batch=data,classes=model";
    QTest::newRow("fsdp data=8") << "data=8" << "batch=data,embed=data";
  }
  void resumeContinuesBitForBit() {
    QFETCH(QString, mesh);
    QFETCH(QString, rules);
    QTemporaryDir dir;
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    runtime::TrainOptions o;
    o.mesh = mesh.toStdString();
    o.rules = rules.toStdString();
    o.threads = 2;
    runtime::Trainer straight(p, o);
    Losses all;
    straight.add_listener(&all);
    straight.run();

    runtime::TrainOptions first = o;
    first.steps = 6;
    first.checkpoint_dir = dir.path().toStdString();
    runtime::Trainer a(p, first);
    a.run();
    QVERIFY(checkpoint::latest(first.checkpoint_dir).has_value());
    runtime::TrainOptions second = o;
    second.checkpoint_dir = first.checkpoint_dir;
    second.resume = true;
    runtime::Trainer b(p, second);
    Losses rest;
    b.add_listener(&rest);
    b.run();
    QCOMPARE(rest.v.size(), size_t(12 - 6));
    for (size_t i = 0; i < rest.v.size(); ++i) QCOMPARE(rest.v[i], all.v[6 + i]);
    QVERIFY(bitwise_equal(states(b), states(straight)));
  }

  // A data=8 checkpoint continued on other meshes (and on one device) trains as it would have on
  // data=8: the whole state after 6 more steps within 1e-6 relative (sums in another order).
  void continuesOnAnotherMeshLikeTheOriginal() {
    QTemporaryDir dir;
    const project::Project p = project::parse_project(kMlp, "mlp.shardlab.json");
    runtime::TrainOptions first;
    first.steps = 6;
    first.threads = 2;
    first.mesh = "data=8";
    first.rules = "batch=data";
    first.checkpoint_dir = dir.path().toStdString();
    runtime::Trainer(p, first).run();
    const std::string step6 = checkpoint::latest(first.checkpoint_dir)->string();
    auto continue_on = [&](const std::string& mesh, const std::string& rules) {
      runtime::TrainOptions o;
      o.threads = 2;
      o.mesh = mesh;
      o.rules = rules;
      o.resume_from = step6;
      runtime::Trainer t(p, o);
      t.run();
      return states(t);
    };
    const auto original = continue_on("data=8", "batch=data");
    for (const auto& [mesh, rules] : std::vector<std::pair<std::string, std::string>>{
             {"data=2,model=4", "batch=data,classes=model"}, {"data=8", "batch=data,embed=data"}, {"", ""}}) {
      const auto other = continue_on(mesh, rules);
      double err = 0, norm = 0;
      for (const auto& [name, want] : original) {
        const Tensor& got = other.at(name);
        for (size_t i = 0; i < want.data.size(); ++i) {
          err += double(got.data[i] - want.data[i]) * double(got.data[i] - want.data[i]);
          norm += double(want.data[i]) * double(want.data[i]);
        }
      }
      const double rel = std::sqrt(err / norm);
      qInfo("continued on %s (%s): state differs from continuing on data=8 by %.3g", mesh.empty() ? "one device" : mesh.c_str(),
            rules.c_str(), rel);
      QVERIFY2(rel <= 1e-6, qPrintable(QString("%1: %2").arg(mesh.c_str()).arg(rel)));
    }
  }

  void restoresOntoAnotherMeshWithIdenticalValues() {
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString();
    const project::Project p = project::load_project(std::string(SHARDLAB_SOURCE_DIR) + "/tests/reference/dot-relu-dot-small.shardlab.json");
    runtime::TrainOptions o;
    o.mesh = "data=2,model=4";
    o.rules = "batch=data,hidden=model,layer=none";
    o.steps = 2;
    o.checkpoint_dir = root;
    runtime::Trainer eight(p, o);
    eight.run();
    const auto saved = states(eight);
    const std::string ckpt = checkpoint::latest(root)->string();

    runtime::Trainer one(p);
    one.restore_checkpoint(ckpt);
    QVERIFY(bitwise_equal(states(one), saved));

    runtime::TrainOptions four;
    four.mesh = "data=4";
    four.rules = "batch=data";
    runtime::Trainer dp(p, four);
    dp.restore_checkpoint(ckpt);
    QVERIFY(bitwise_equal(states(dp), saved));
    // And back: saved from 4 devices, loaded onto 8.
    QTemporaryDir dir2;
    dp.save_checkpoint(dir2.path().toStdString(), 2);
    runtime::Trainer back(p, o);
    back.restore_checkpoint(checkpoint::latest(dir2.path().toStdString())->string());
    QVERIFY(bitwise_equal(states(back), saved));
    QCOMPARE(back.steps_done(), int64_t(2));
  }

  void uncommittedCheckpointsNeverLoad() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"));
    t.save_checkpoint(root.string(), 0);
    fs::create_directories(root / "step_000009");  // a save killed before its marker
    std::ofstream(root / "step_000009" / checkpoint::kMetaFile) << "{\"step\": 9}";
    QCOMPARE(checkpoint::latest(root)->filename().string(), std::string("step_000000"));
    QString err;
    try {
      checkpoint::load(root / "step_000009");
    } catch (const Error& e) {
      err = e.what();
    }
    QVERIFY2(err.contains("not a committed checkpoint"), qPrintable(err));
  }

  void keepPrunesOldCheckpoints() {
    QTemporaryDir dir;
    runtime::TrainOptions o;
    o.steps = 6;
    o.save_every = 1;
    o.keep = 2;
    o.checkpoint_dir = dir.path().toStdString();
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"), o);
    t.run();
    std::vector<std::string> left;
    // The run's identity (run.json) and lock file (.lock) sit beside the steps.
    for (const auto& e : fs::directory_iterator(o.checkpoint_dir))
      if (checkpoint::step_of(e.path()) >= 0) left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    QCOMPARE(left, (std::vector<std::string>{"step_000005", "step_000006"}));
  }

  // A real process, killed with SIGKILL at random moments while it saves after every step.
  void killedMidSaveLeavesALoadableCheckpoint() {
    QTemporaryDir dir;
    auto j = nlohmann::ordered_json::parse(kMlp);
    j["graph"]["nodes"][1]["params"]["features"] = 1024;  // ~0.6 MB of state, so saves take a while
    j["training"]["steps"] = 100000;
    const QString project = dir.filePath("big.shardlab.json");
    std::ofstream(project.toStdString()) << j.dump(2);
    const QString root = dir.filePath("ckpt");
    int loaded = 0;
    for (int round = 0; round < 6; ++round) {
      QProcess proc;
      proc.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli",
                 {"train", project, "--checkpoint-dir", root, "--save-every", "1", "--keep", "2", "--quiet", "--threads", "1",
                  "--continue"});
      QVERIFY(proc.waitForStarted());
      // The first round lets one save commit, however slow the build (a sanitizer's is many times
      // slower), so that every kill after it lands on a run that has something to lose.
      if (round == 0) QTRY_VERIFY_WITH_TIMEOUT(checkpoint::latest(root.toStdString()).has_value(), 120000);
      QTest::qWait(300 + int(QRandomGenerator::global()->bounded(500)));
      proc.kill();  // SIGKILL
      proc.waitForFinished();
      if (auto last = checkpoint::latest(root.toStdString())) {
        checkpoint::Loaded c = checkpoint::load(*last);  // must not throw
        QVERIFY(c.step > 0);
        QVERIFY(!c.arrays.empty());
        ++loaded;
      }
    }
    QVERIFY2(loaded > 0, "no checkpoint was ever committed");
  }

  void exportWritesTheParametersAlone() {
    QTemporaryDir dir;
    runtime::Trainer t(project::parse_project(kMlp, "mlp.shardlab.json"));
    t.save_checkpoint(dir.filePath("ckpt").toStdString(), 0);
    const QString out = dir.filePath("model.safetensors");
    QProcess proc;
    proc.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"export", dir.filePath("ckpt"), "--out", out});
    QVERIFY(proc.waitForFinished());
    QCOMPARE(proc.exitCode(), 0);
    checkpoint::SafetensorsFile f = checkpoint::read_safetensors(out.toStdString());
    QCOMPARE(f.tensors.size(), t.parameter_paths().size());
    for (const std::string& path : t.parameter_paths()) {
      const checkpoint::StoredTensor* s = f.find(path);
      QVERIFY2(s, path.c_str());
      QCOMPARE(checkpoint::to_tensor(*s).data, t.parameter(path).data);
    }
    // ONNX export is tested in test_onnx_export.cpp; here only that the format is taken, or refused
    // with the reason in a build without ONNX.
    const QString onnx = dir.filePath("model.onnx");
    proc.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"export", dir.filePath("ckpt"), "--format", "onnx", "--out", onnx});
    QVERIFY(proc.waitForFinished());
    if (exporter::onnx_available()) {
      QCOMPARE(proc.exitCode(), 0);
      QVERIFY(fs::file_size(onnx.toStdString()) > 0);
    } else {
      QVERIFY(proc.exitCode() != 0);
      QVERIFY(QString(proc.readAllStandardError()).contains("built without ONNX"));
    }
    proc.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"export", dir.filePath("ckpt"), "--format", "pt", "--out", out});
    QVERIFY(proc.waitForFinished());
    QVERIFY(proc.exitCode() != 0);
    QVERIFY(QString(proc.readAllStandardError()).contains("--format pt: expected safetensors, onnx or hf"));
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
