// Sharded checkpoints: with a maximum shard size a checkpoint's tensors go into
// model-0000K-of-0000N.safetensors files with a model.safetensors.index.json, as Hugging Face lays
// them out; they restore bit for bit, Python's safetensors reads them, and every inconsistency
// between the index and the shards is an error naming the file at fault.
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/sharded.h"
#include "engine/runtime/trainer.h"
#include "tests/engine/python_runner.h"
#include "tests/engine/test_support.h"
#include "tests/engine/trainer_state.h"

using namespace shardlab;
using shardlab::testing::error_of;
namespace fs = std::filesystem;

using shardlab::testing::PyResult;
using shardlab::testing::run_python;

using shardlab::testing::bitwise_equal;
using shardlab::testing::states;

namespace {

// ~20 KB of parameters and twice that of Adam state: a few KB per shard gives several shards.
const char* kMlp = R"({
  "format": "shardlab.project", "version": 1, "name": "sharded-mlp",
  "graph": {"nodes": [
      {"name": "x", "type": "Input", "params": {"shape": [32]}},
      {"name": "l0", "type": "Dense", "params": {"features": 64}}, {"name": "r0", "type": "ReLU"},
      {"name": "l1", "type": "Dense", "params": {"features": 32}}, {"name": "r1", "type": "ReLU"},
      {"name": "out", "type": "Dense", "params": {"features": 4}}],
    "edges": [{"from": "x.out", "to": "l0.in"}, {"from": "l0.out", "to": "r0.in"}, {"from": "r0.out", "to": "l1.in"},
              {"from": "l1.out", "to": "r1.in"}, {"from": "r1.out", "to": "out.in"}]},
  "loss": {"type": "softmax_cross_entropy", "output": "out"},
  "optimizer": {"type": "adam", "learning_rate": 0.01},
  "data": {"type": "synthetic", "kind": "blobs", "feature_shape": [32], "classes": 4, "examples": 128},
  "training": {"batch_size": 32, "steps": 4, "eval": false, "seed": 5}
})";

const QString kShardScript = QStringLiteral(SHARDLAB_SOURCE_DIR "/tests/reference/safetensors/sharded.py");

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

// The MLP after two steps on a fixed batch (so Adam's moments are not zero), saving with shards of
// at most `shard_bytes` of tensor data.
std::unique_ptr<runtime::Trainer> trained(uint64_t shard_bytes) {
  runtime::TrainOptions o;
  o.max_shard_bytes = shard_bytes;
  auto t = std::make_unique<runtime::Trainer>(project::parse_project(kMlp, "sharded.shardlab.json"), o);
  Tensor x({32, 32}), y({32});
  for (size_t k = 0; k < x.data.size(); ++k) x.data[k] = float(k % 7) * 0.1f;
  for (size_t k = 0; k < y.data.size(); ++k) y.data[k] = float(k % 4);
  for (int i = 0; i < 2; ++i) t->train_step(x, y);
  return t;
}

// t's checkpoint under dir/ckpt; its step directory.
fs::path save(runtime::Trainer& t, const QTemporaryDir& dir) {
  const fs::path root = dir.filePath("ckpt").toStdString();
  t.save_checkpoint(root.string(), 2);
  return *checkpoint::latest(root);
}

fs::path save_sharded(const QTemporaryDir& dir, uint64_t shard_bytes) { return save(*trained(shard_bytes), dir); }

}  // namespace

class TestShardedCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void parsesSizes() {
    QCOMPARE(checkpoint::parse_size("4096"), uint64_t(4096));
    QCOMPARE(checkpoint::parse_size("500MB"), uint64_t(500'000'000));
    QCOMPARE(checkpoint::parse_size("2GB"), uint64_t(2'000'000'000));
    QCOMPARE(checkpoint::parse_size("2gb"), uint64_t(2'000'000'000));
    QCOMPARE(checkpoint::parse_size("1.5GB"), uint64_t(1'500'000'000));
    QCOMPARE(checkpoint::parse_size("10KiB"), uint64_t(10240));
    QCOMPARE(checkpoint::parse_size("1GiB"), uint64_t(1) << 30);
    QCOMPARE(checkpoint::parse_size("3 M"), uint64_t(3'000'000));
    for (const char* bad : {"", "MB", "12XB", "-5MB", "0", "1.5", "1..5GB", "5 GB x", "999999999TB"}) {
      const QString e = error_of([&] { checkpoint::parse_size(bad); });
      VERIFY_CONTAINS(e, QString("size '%1'").arg(bad));
    }
  }

  // Several shards, each within the limit (in tensor bytes), an index that lists every tensor once,
  // and a restore that gives back every array bit for bit.
  void shardedSaveRoundTrips() {
    QTemporaryDir dir;
    const auto t = trained(12'000);
    const fs::path ckpt = save(*t, dir);
    const auto files = files_in(ckpt);
    QVERIFY(std::find(files.begin(), files.end(), checkpoint::kIndexFile) != files.end());
    QVERIFY(std::find(files.begin(), files.end(), checkpoint::kSingleFile) == files.end());

    checkpoint::ModelFiles where;
    const checkpoint::SafetensorsFile all = checkpoint::read_model(ckpt, &where);
    QVERIFY(where.sharded);
    const size_t n = where.files.size();
    QVERIFY2(n >= 3, qPrintable(QString("only %1 shards").arg(n)));
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      QCOMPARE(where.files[i], checkpoint::shard_name(i + 1, n));
      const checkpoint::SafetensorsFile shard = checkpoint::read_safetensors(ckpt / where.files[i]);
      uint64_t bytes = 0;
      for (const auto& s : shard.tensors) bytes += s.bytes.size();
      QVERIFY2(bytes <= 12'000 || shard.tensors.size() == 1, where.files[i].c_str());
      QCOMPARE(shard.metadata.at("format"), std::string("shardlab"));
      total += bytes;
    }
    const auto index = nlohmann::json::parse(read_text(ckpt / checkpoint::kIndexFile));
    QCOMPARE(index["metadata"]["total_size"].get<uint64_t>(), total);
    QCOMPARE(index["weight_map"].size(), t->state_names().size());
    for (const std::string& name : t->state_names()) QCOMPARE(index["weight_map"][name].get<std::string>(), where.file_of.at(name));
    QCOMPARE(checkpoint::shard_name(2, 14), std::string("model-00002-of-00014.safetensors"));

    runtime::Trainer back(project::parse_project(kMlp, "sharded.shardlab.json"));
    back.restore_checkpoint(ckpt.string());
    QVERIFY(bitwise_equal(states(back), states(*t)));
    QCOMPARE(back.steps_done(), int64_t(2));
    // The same arrays as a save in one file.
    QTemporaryDir one;
    const fs::path single = save(*trained(0), one);
    QVERIFY(!checkpoint::read_model(single, &where).tensors.empty());
    QVERIFY(!where.sharded);
    QVERIFY(bitwise_equal(checkpoint::load(single).arrays, checkpoint::load(ckpt).arrays));
  }

  // A tensor larger than the limit gets a shard to itself; a limit everything fits in gives one file.
  void limitsAtTheEdges() {
    QTemporaryDir dir;
    const fs::path tiny = save_sharded(dir, 1);
    checkpoint::ModelFiles where;
    const auto all = checkpoint::read_model(tiny, &where);
    QCOMPARE(where.files.size(), all.tensors.size());  // one tensor per shard

    QTemporaryDir dir2;
    const fs::path big = save_sharded(dir2, 1'000'000'000);
    QCOMPARE(files_in(big), (std::vector<std::string>{"COMMITTED", "checkpoint.json", "model.safetensors"}));

    // Writing the other layout into a directory removes the stale files of the first.
    checkpoint::write_model(big, all, 20'000);
    QVERIFY(!fs::exists(big / checkpoint::kSingleFile));
    checkpoint::write_model(big, all, 0);
    QCOMPARE(files_in(big), (std::vector<std::string>{"COMMITTED", "checkpoint.json", "model.safetensors"}));
  }

  void rejectsInconsistentShards_data() {
    QTest::addColumn<QString>("breakage");
    QTest::addColumn<QString>("file");    // the file the message must name
    QTest::addColumn<QString>("reason");
    QTest::newRow("missing shard") << "missing" << "model-00002-of-" << "missing (model.safetensors.index.json places";
    QTest::newRow("tensor absent from its shard") << "absent" << "model-00001-of-" << "has no tensor '";
    QTest::newRow("tensor in two shards") << "duplicate" << "model-00002-of-" << "is also in";
    QTest::newRow("shard not in the index") << "stray" << "model-00009-of-00009.safetensors" << "does not list";
    QTest::newRow("tensor not in the index") << "unlisted" << "model-00001-of-" << "is not in model.safetensors.index.json's weight_map";
    QTest::newRow("index lists a tensor twice") << "twice" << "model.safetensors.index.json" << "lists tensor 'params/l0/kernel' twice";
    QTest::newRow("wrong total_size") << "total" << "model.safetensors.index.json" << "metadata.total_size is 7";
    QTest::newRow("both layouts") << "both" << "step_000002" << "holds both model.safetensors and model.safetensors.index.json";
    QTest::newRow("shard outside the directory") << "traversal" << "model.safetensors.index.json" << "not a plain file name";
    QTest::newRow("malformed index") << "json" << "model.safetensors.index.json" << "malformed JSON";
    QTest::newRow("no weight_map") << "no-map" << "model.safetensors.index.json" << "weight_map: missing";
    QTest::newRow("corrupt shard") << "corrupt" << "model-00003-of-" << "runs past the end of the file";
    // Limits, checked while the index is parsed; values from the file are quoted cut short.
    QTest::newRow("index nested 100,000 deep") << "deep" << "model.safetensors.index.json" << "nested deeper than 64 levels";
    QTest::newRow("tensor name of 100,000 bytes") << "long-name" << "model.safetensors.index.json"
                                                 << "... (100000 bytes)' is 100000 bytes long (at most 4096)";
    QTest::newRow("over 2^20 tensors") << "many" << "model.safetensors.index.json" << "weight_map lists more than 1048576 tensors";
    QTest::newRow("shard is a number") << "number" << "model.safetensors.index.json" << "tensor 'params/l0/kernel': the shard is not a file name string";
    QTest::newRow("shard is an object") << "object" << "model.safetensors.index.json" << "tensor 'params/l0/kernel': the shard is not a file name string";
    QTest::newRow("truncated index") << "cut" << "model.safetensors.index.json" << "malformed JSON";
  }

  void rejectsInconsistentShards() {
    QFETCH(QString, breakage);
    QFETCH(QString, file);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path ckpt = save_sharded(dir, 12'000);
    checkpoint::ModelFiles where;
    const auto all = checkpoint::read_model(ckpt, &where);
    const size_t n = where.files.size();
    const fs::path index = ckpt / checkpoint::kIndexFile;
    std::string text = read_text(index);
    auto shard = [&](size_t i) { return ckpt / checkpoint::shard_name(i, n); };
    auto rewrite = [&](size_t i, const std::function<void(checkpoint::SafetensorsFile&)>& edit) {
      checkpoint::SafetensorsFile f = checkpoint::read_safetensors(shard(i));
      edit(f);
      checkpoint::write_safetensors(shard(i), f);
    };
    if (breakage == "missing") fs::remove(shard(2));
    if (breakage == "absent") rewrite(1, [](auto& f) { f.tensors.pop_back(); });
    if (breakage == "duplicate") {
      const checkpoint::StoredTensor first = checkpoint::read_safetensors(shard(1)).tensors.front();
      rewrite(2, [&](auto& f) { f.tensors.push_back(first); });
    }
    if (breakage == "stray") fs::copy_file(shard(1), ckpt / "model-00009-of-00009.safetensors");
    if (breakage == "unlisted") rewrite(1, [](auto& f) { f.tensors.push_back({"extra", checkpoint::StoredDType::U8, {1}, {7}}); });
    if (breakage == "twice") {
      const std::string key = "\"params/l0/kernel\": \"" + where.file_of.at("params/l0/kernel") + "\"";
      text.replace(text.find(key), key.size(), key + ",\n    " + key);
      write_text(index, text);
    }
    if (breakage == "total") {
      auto j = nlohmann::ordered_json::parse(text);
      j["metadata"]["total_size"] = 7;
      write_text(index, j.dump(2));
    }
    if (breakage == "both") checkpoint::write_safetensors(ckpt / checkpoint::kSingleFile, all);
    if (breakage == "traversal") {
      auto j = nlohmann::ordered_json::parse(text);
      j["weight_map"]["params/l0/kernel"] = "../elsewhere.safetensors";
      write_text(index, j.dump(2));
    }
    if (breakage == "json") write_text(index, text.substr(0, text.size() / 2));
    if (breakage == "no-map") write_text(index, R"({"metadata": {"total_size": 0}})");
    if (breakage == "deep") write_text(index, "{\"weight_map\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
    if (breakage == "long-name") {
      auto j = nlohmann::ordered_json::parse(text);
      j["weight_map"][std::string(100000, 'n')] = where.file_of.at("params/l0/kernel");
      write_text(index, j.dump(2));
    }
    if (breakage == "many") {
      std::string many = "{\"weight_map\": {";
      for (size_t i = 0; i <= (size_t(1) << 20); ++i) many += "\"t" + std::to_string(i) + "\": \"m.safetensors\",";
      many.back() = '}';
      write_text(index, many + "}");
    }
    if (breakage == "number" || breakage == "object") {
      auto j = nlohmann::ordered_json::parse(text);
      j["weight_map"]["params/l0/kernel"] = breakage == "number" ? nlohmann::ordered_json(5) : nlohmann::ordered_json{{"a", "b"}};
      write_text(index, j.dump(2));
    }
    if (breakage == "cut") write_text(index, text.substr(0, 30));
    if (breakage == "corrupt") {
      const std::string bytes = read_text(shard(3));
      write_text(shard(3), bytes.substr(0, 40));
    }

    for (auto read : std::vector<std::function<void()>>{[&] { checkpoint::read_model(ckpt); },
                                                        [&] { checkpoint::load(ckpt); }}) {
      const QString msg = error_of(read);
      qDebug().noquote() << msg;
      QVERIFY2(!msg.isEmpty(), "no error");
      VERIFY_CONTAINS(msg, QString::fromStdString(ckpt.string()));
      VERIFY_CONTAINS(msg, file);
      VERIFY_CONTAINS(msg, reason);
      QVERIFY2(msg.size() < 1000, "the message quotes too much of the file");
    }
  }

  // The CLI saves shards with --max-shard-size, and inspect and export read them.
  void cliTrainsInspectsAndExportsShards() {
    QTemporaryDir dir;
    const QString project = dir.filePath("mlp.shardlab.json");
    std::ofstream(project.toStdString()) << kMlp;
    const QString root = dir.filePath("ckpt");
    QProcess p;
    p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"train", project, "--checkpoint-dir", root, "--max-shard-size", "8KB", "--quiet"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const fs::path ckpt = *checkpoint::latest(root.toStdString());
    QVERIFY(fs::exists(ckpt / checkpoint::kIndexFile));

    p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"inspect", root});
    QVERIFY(p.waitForFinished(60000));
    const QString out = p.readAllStandardOutput();
    QCOMPARE(p.exitCode(), 0);
    VERIFY_CONTAINS(out, "shards, indexed by model.safetensors.index.json");
    VERIFY_CONTAINS(out, "model-00001-of-");

    const QString exported = dir.filePath("params.safetensors");
    p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"export", root, "--out", exported});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto params = checkpoint::read_safetensors(exported.toStdString());
    QCOMPARE(params.tensors.size(), size_t(6));
    QCOMPARE(checkpoint::to_tensor(*params.find("l1/kernel")).data, checkpoint::load(ckpt).arrays.at("params/l1/kernel").data);

    p.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"train", project, "--checkpoint-dir", root, "--max-shard-size", "12XB"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY(p.exitCode() != 0);
    VERIFY_CONTAINS(QString(p.readAllStandardError()), "--max-shard-size: size '12XB'");
  }

  // As the single-file layout: a process killed at any moment of a sharded save leaves the previous
  // checkpoint loadable, never a partial one.
  void killedMidShardedSaveLeavesALoadableCheckpoint() {
    QTemporaryDir dir;
    auto j = nlohmann::ordered_json::parse(kMlp);
    j["graph"]["nodes"][1]["params"]["features"] = 1024;  // ~1 MB of state over ~10 shards
    j["training"]["steps"] = 100000;
    const QString project = dir.filePath("big.shardlab.json");
    std::ofstream(project.toStdString()) << j.dump(2);
    const QString root = dir.filePath("ckpt");
    int loaded = 0;
    for (int round = 0; round < 4; ++round) {
      QProcess proc;
      proc.start(SHARDLAB_BINARY_DIR "/app/shardlab-cli", {"train", project, "--checkpoint-dir", root, "--save-every", "1", "--keep",
                                                           "2", "--quiet", "--threads", "1", "--max-shard-size", "100KB", "--continue"});
      QVERIFY(proc.waitForStarted());
      QTest::qWait(300 + int(QRandomGenerator::global()->bounded(500)));
      proc.kill();
      proc.waitForFinished();
      if (auto last = checkpoint::latest(root.toStdString())) {
        checkpoint::ModelFiles where;
        checkpoint::read_model(*last, &where);  // must not throw
        QVERIFY(where.sharded);
        QVERIFY(!checkpoint::load(*last).arrays.empty());
        ++loaded;
      }
    }
    QVERIFY2(loaded > 0, "no checkpoint was ever committed");
  }

  // Python's safetensors loads every shard, finds each tensor where the index says, and its merge of
  // the shards is, tensor for tensor and bit for bit, what Shardlab reads.
  void pythonLoadsTheShards() {
    const PyResult probe = run_python({"-c", "import safetensors, numpy"});
    if (!probe.started || probe.exit_code != 0) {
      const QString why = "python3 cannot import safetensors and numpy (" + probe.out.trimmed().split('\n').last() + ")";
      qInfo().noquote() << "skipping:" << why;
      QSKIP(qPrintable(why));
    }
    QTemporaryDir dir;
    const fs::path ckpt = save_sharded(dir, 12'000);
    const QString merged = dir.filePath("merged.safetensors");
    const PyResult r = run_python({kShardScript, QString::fromStdString(ckpt.string()), merged});
    qInfo().noquote() << r.out.trimmed();
    QVERIFY2(r.exit_code == 0, qPrintable(r.out));
    const auto ours = checkpoint::read_model(ckpt);
    const auto theirs = checkpoint::read_safetensors(merged.toStdString());
    QCOMPARE(theirs.tensors.size(), ours.tensors.size());
    for (const auto& t : ours.tensors) {
      const auto* p = theirs.find(t.name);
      QVERIFY2(p, t.name.c_str());
      QCOMPARE(p->shape, t.shape);
      QVERIFY2(p->bytes == t.bytes, t.name.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestShardedCheckpoint)
#include "test_sharded_checkpoint.moc"
