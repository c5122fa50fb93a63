// shardlab-cli import on Hugging Face model folders as the Hub has them (tests/reference/hf/, written by
// make_reference.py from transformers' own FlaxLlamaForCausalLM and FlaxGPT2LMHeadModel: PyTorch
// names and layouts; for Llama one file, two shards with an index, and bfloat16): the project it writes computes the logits
// transformers computes for llama-tiny's tokens, from the step-0 checkpoint it writes beside it, and
// `train --continue` starts from that checkpoint. What it cannot map is refused naming the file and
// the field or tensor.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/safetensors.h"
#include "engine/data/npy.h"
#include "engine/runtime/inference.h"
#include "engine/runtime/trainer.h"
#include "engine/tensor/convert.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
namespace fs = std::filesystem;

namespace {

const fs::path kHf = fs::path(SHARDLAB_SOURCE_DIR) / "tests/reference/hf";
const fs::path kRef = fs::path(SHARDLAB_SOURCE_DIR) / "tests/reference/data/llama-tiny";

std::string npy_name(std::string path) {
  std::replace(path.begin(), path.end(), '/', '.');
  return path + ".npy";
}

// The parameters of an imported project as its checkpoint holds them.
std::map<std::string, Tensor> imported_params(const project::Project& p, const fs::path& step) {
  runtime::Trainer t(p);
  t.restore_checkpoint(step.string());
  std::map<std::string, Tensor> params;
  for (const std::string& path : t.parameter_paths()) params[path] = t.parameter(path);
  return params;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(double(a.data[i]) - double(b.data[i])));
  return m;
}

void copy_folder(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
}

nlohmann::json read_json(const fs::path& f) { return nlohmann::json::parse(std::ifstream(f)); }
void write_json(const fs::path& f, const nlohmann::json& j) { std::ofstream(f) << j.dump(2); }

}  // namespace

class TestHfImport : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  fs::path tmp(const std::string& name) const { return fs::path(dir_.path().toStdString()) / name; }
  // The CLI's error for importing `folder`, which must fail.
  QString refusal(const fs::path& folder, const std::string& out) {
    const testing::CliResult r = testing::run_cli({"import", QString::fromStdString(folder.string()), "--out",
                                                   QString::fromStdString(tmp(out).string())});
    [&] { QVERIFY2(r.exit_code == 1, qPrintable("exit " + QString::number(r.exit_code) + ": " + r.out + r.err)); }();
    return r.err;
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // One file, two shards with their index, and bfloat16 weights: each imported project computes
  // transformers' logits for llama-tiny's tokens (the bfloat16 weights: exactly their float32 values).
  void importedLlamaComputesTransformersLogits_data() {
    QTest::addColumn<QString>("folder");
    QTest::newRow("one file") << "llama-tiny";
    QTest::newRow("two shards and an index") << "llama-tiny-sharded";
    QTest::newRow("bfloat16") << "llama-tiny-bf16";
  }
  void importedLlamaComputesTransformersLogits() {
    QFETCH(QString, folder);
    const fs::path out = tmp(folder.toStdString() + "/llama.shardlab.json");
    fs::create_directories(out.parent_path());
    const testing::CliResult r =
        testing::run_cli({"import", QString::fromStdString((kHf / folder.toStdString()).string()), "--out", QString::fromStdString(out.string())});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    VERIFY_CONTAINS(r.out, "22688 parameters in 12 arrays");
    const fs::path step = out.parent_path() / "llama.init" / "step_000000";
    QVERIFY2(fs::is_directory(step), step.c_str());
    const project::Project p = project::load_project(out);
    QCOMPARE(p.training.checkpoint->dir, std::string("llama.init"));
    const std::map<std::string, Tensor> params = imported_params(p, step);
    const bool bf16 = folder.endsWith("bf16");
    if (bf16) VERIFY_CONTAINS(r.out, "bfloat16 were converted to float32");
    // Every parameter is transformers' initial value (rounded to bfloat16 where the folder holds that).
    for (const auto& [path, got] : params) {
      Tensor want = data::load_npy((kRef / "init" / npy_name(path)).string());
      if (bf16)
        for (float& v : want.data) v = round_to_bf16(v);
      QCOMPARE(got.shape, want.shape);
      QVERIFY2(max_abs_diff(got, want) == 0.0, qPrintable(QString::fromStdString(path)));
    }
    if (bf16) return;  // transformers' logits are of the float32 weights
    const Tensor x = data::load_npy((kRef / "x.npy").string()), want = data::load_npy((kRef / "logits.npy").string());
    const Tensor got = runtime::predict(p, params, x);
    const double diff = max_abs_diff(got, want);
    qInfo("%s: logits %.3g from transformers'", qPrintable(folder), diff);
    QVERIFY2(diff <= 1e-4, qPrintable(QString::number(diff)));
  }

  // GPT-2 (transformers' own FlaxGPT2LMHeadModel, written as the Hub has it: Conv1D weights (in,
  // out), q, k and v side by side in c_attn, the LM head tied to the token embedding): the imported
  // project computes transformers' logits.
  void importedGpt2ComputesTransformersLogits() {
    const fs::path out = tmp("gpt2/gpt.shardlab.json");
    fs::create_directories(out.parent_path());
    const testing::CliResult r =
        testing::run_cli({"import", QString::fromStdString((kHf / "gpt2-tiny").string()), "--out", QString::fromStdString(out.string())});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    VERIFY_CONTAINS(r.out, "ties its LM head to the token embedding");
    VERIFY_CONTAINS(r.out, "shares its table");
    const project::Project p = project::load_project(out);
    const std::map<std::string, Tensor> params = imported_params(p, out.parent_path() / "gpt.init" / "step_000000");
    const fs::path ref = fs::path(SHARDLAB_SOURCE_DIR) / "tests/reference/data/gpt2-tiny";
    const Tensor x = data::load_npy((ref / "x.npy").string()), want = data::load_npy((ref / "logits.npy").string());
    const Tensor got = runtime::predict(p, params, x);
    QCOMPARE(got.shape, want.shape);
    const double diff = max_abs_diff(got, want);
    qInfo("gpt2-tiny: logits %.3g from transformers'", diff);
    QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
  }

  // GPT-2 trains its LM head tied to the token embedding: the imported head is an Attend node on the
  // Embed's table, and 3 Adam steps on make_reference.py's batch give transformers' own losses and
  // logits. The same 3 steps with the head untied (a Dense starting at the table's transpose, as
  // the importer once made it) move the logits by 0.11 (meta.json's control): this test tells the two apart.
  void importedGpt2TrainsWithItsHeadTiedAsTransformersDoes() {
    const fs::path out = tmp("gpt2-trained/gpt.shardlab.json");
    fs::create_directories(out.parent_path());
    const testing::CliResult r =
        testing::run_cli({"import", QString::fromStdString((kHf / "gpt2-tiny").string()), "--out", QString::fromStdString(out.string())});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    const project::Project p = project::load_project(out);
    const graph::GraphReport report = project::analyze_project(p);
    const graph::NodeReport* head = report.find("head");
    QVERIFY(head && head->type == "Attend");
    QCOMPARE(head->params.size(), size_t(1));
    QCOMPARE(head->params[0].tied, std::string("embed/embedding"));
    QCOMPARE(head->param_count, int64_t(0));

    const fs::path ref = fs::path(SHARDLAB_SOURCE_DIR) / "tests/reference/data/gpt2-tiny";
    const nlohmann::json meta = read_json(ref / "meta.json")["training"];
    const Tensor x = data::load_npy((ref / "x.npy").string()), y = data::load_npy((ref / "y.npy").string());
    runtime::TrainOptions opt;
    opt.batch_size = x.shape[0];
    opt.threads = 2;
    project::Project q = p;
    q.optimizer.type = "adam";
    q.optimizer.learning_rate = project::ScheduleSpec{};
    q.optimizer.learning_rate.value = meta["optimizer"]["learning_rate"].get<double>();
    q.optimizer.weight_decay = 0;
    runtime::Trainer trainer(q, opt);
    const std::vector<std::string> paths = trainer.parameter_paths();
    QVERIFY(std::find(paths.begin(), paths.end(), "head/embedding") == paths.end());  // one table, not two
    for (const auto& [path, value] : imported_params(p, out.parent_path() / "gpt.init" / "step_000000")) trainer.set_parameter(path, value);
    for (int step = 0; step < 3; ++step) {
      const double loss = trainer.train_step(x, y), want = meta["losses"][size_t(step)].get<double>();
      qInfo("gpt2-tiny step %d: loss %.9g, transformers %.9g (untied: %.9g)", step + 1, loss, want, meta["untied_losses"][size_t(step)].get<double>());
      QVERIFY2(std::abs(loss - want) <= 1e-5 * std::abs(want), qPrintable(QString("step %1: %2 vs %3").arg(step + 1).arg(loss).arg(want)));
    }
    std::map<std::string, Tensor> trained;
    for (const std::string& path : paths) trained[path] = trainer.parameter(path);
    const Tensor got = runtime::predict(p, trained, x), want = data::load_npy((ref / "logits_after.npy").string());
    const double diff = max_abs_diff(got, want);
    qInfo("gpt2-tiny after 3 tied Adam steps: logits %.3g from transformers' (the untied control differs by %.3g)", diff,
          meta["untied_logits_after_max_abs_diff"].get<double>());
    QVERIFY2(diff <= 1e-4, qPrintable(QString::number(diff)));
    QVERIFY(meta["untied_logits_after_max_abs_diff"].get<double>() > 100 * 1e-4);

    // In a pipeline the shared table would be read on the first stage and on the last: refused,
    // naming it, rather than trained with one stage's copy stale.
    runtime::TrainOptions piped = opt;
    piped.mesh = "stage=2,data=4";
    piped.rules = "batch=data,layer=stage";
    VERIFY_CONTAINS(testing::error_of([&] { runtime::Trainer t(q, piped); }),
                    "parameter 'embed/embedding' is read on pipeline stages 0 and 1");

    // Sharded, the shared table is one array with one layout: its vocabulary split over model
    // (the lookup's rows and the logits' columns), or its features under FSDP; the same losses.
    for (const auto& [mesh, rules] : std::vector<std::pair<std::string, std::string>>{
             {"data=4,model=2", "batch=data,heads=model,mlp=model,vocab=model"}, {"data=8", "batch=data,embed=data"}}) {
      runtime::TrainOptions sharded = opt;
      sharded.mesh = mesh;
      sharded.rules = rules;
      runtime::Trainer t(q, sharded);
      for (const auto& [path, value] : imported_params(p, out.parent_path() / "gpt.init" / "step_000000")) t.set_parameter(path, value);
      for (int step = 0; step < 3; ++step) {
        const double loss = t.train_step(x, y), want = meta["losses"][size_t(step)].get<double>();
        QVERIFY2(std::abs(loss - want) <= 1e-5 * std::abs(want),
                 qPrintable(QString("%1 %2 step %3: %4 vs %5").arg(mesh.c_str(), rules.c_str()).arg(step + 1).arg(loss).arg(want)));
      }
    }
  }

  // At that initialisation every bias is 0 and every LayerNorm scale 1, which logits cannot tell
  // from a mapping that drops them: here they are random, and each lands where GPT-2 keeps it (the
  // key bias is c_attn's second third, split into heads).
  void gpt2BiasesAndNormsLandWhereGpt2KeepsThem() {
    const fs::path folder = tmp("gpt2-biased");
    copy_folder(kHf / "gpt2-tiny", folder);
    checkpoint::SafetensorsFile f = checkpoint::read_safetensors(folder / "model.safetensors");
    std::map<std::string, Tensor> written;
    uint32_t seed = 1;
    for (checkpoint::StoredTensor& t : f.tensors)
      if (t.shape.size() == 1) {
        Tensor v(t.shape);
        for (float& x : v.data) x = float(int(seed = seed * 1103515245u + 12345u) % 1000) / 1000.0f;
        written[t.name] = v;
        t = checkpoint::from_tensor(t.name, v);
      }
    checkpoint::write_safetensors(folder / "model.safetensors", f);
    const fs::path out = tmp("gpt2-biased-project/gpt.shardlab.json");
    fs::create_directories(out.parent_path());
    QCOMPARE(testing::run_cli({"import", QString::fromStdString(folder.string()), "--out", QString::fromStdString(out.string())}).exit_code, 0);
    const std::map<std::string, Tensor> params = imported_params(project::load_project(out), out.parent_path() / "gpt.init" / "step_000000");
    auto layer = [](const Tensor& stacked, int64_t i) {
      const size_t n = stacked.data.size() / size_t(stacked.shape[0]);
      return std::vector<float>(stacked.data.begin() + ptrdiff_t(i * n), stacked.data.begin() + ptrdiff_t((i + 1) * n));
    };
    const std::vector<float>& qkv = written.at("transformer.h.1.attn.c_attn.bias").data;
    QCOMPARE(layer(params.at("blocks/attn/key/bias"), 1), std::vector<float>(qkv.begin() + 32, qkv.begin() + 64));
    QCOMPARE(layer(params.at("blocks/attn/value/bias"), 1), std::vector<float>(qkv.begin() + 64, qkv.end()));
    QCOMPARE(layer(params.at("blocks/ln2/scale"), 0), written.at("transformer.h.0.ln_2.weight").data);
    QCOMPARE(layer(params.at("blocks/ln1/bias"), 1), written.at("transformer.h.1.ln_1.bias").data);
    QCOMPARE(layer(params.at("blocks/mlp2/bias"), 0), written.at("transformer.h.0.mlp.c_proj.bias").data);
    QCOMPARE(layer(params.at("blocks/attn/out/bias"), 1), written.at("transformer.h.1.attn.c_proj.bias").data);
    QCOMPARE(params.at("norm/bias").data, written.at("transformer.ln_f.bias").data);
  }

  // The project trains on from its imported weights: `train --continue` continues the run its
  // checkpoint folder holds, at step 0.
  void trainContinuesFromTheImportedWeights() {
    const fs::path out = tmp("trained/llama.shardlab.json");
    fs::create_directories(out.parent_path());
    QCOMPARE(testing::run_cli({"import", QString::fromStdString((kHf / "llama-tiny").string()), "--out", QString::fromStdString(out.string()),
                               "--seq", "16"})
                 .exit_code,
             0);
    const testing::CliResult r = testing::run_cli({"train", QString::fromStdString(out.string()), "--continue", "--steps", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    const fs::path init = out.parent_path() / "llama.init";
    QVERIFY(fs::is_directory(init / "step_000002"));
    // Two AdamW steps of lr 1e-4 move each weight by at most 2e-4 from where it started: from the
    // imported weights, not from a fresh initialisation.
    const project::Project p = project::load_project(out);
    const std::map<std::string, Tensor> before = imported_params(p, init / "step_000000"), after = imported_params(p, init / "step_000002");
    double moved = 0;
    for (const auto& [path, t] : after) moved = std::max(moved, max_abs_diff(t, before.at(path)));
    qInfo("two steps moved the imported weights by at most %.3g", moved);
    QVERIFY(moved > 0 && moved <= 2e-4 * 1.01);
  }

  // A Llama with tie_word_embeddings: its head is an Attend on the embedding (a copy of the table
  // under lm_head.weight, as some checkpoints carry it, is read and dropped), and it trains.
  void aTiedLlamaSharesItsEmbedding() {
    const fs::path folder = tmp("llama-tied");
    copy_folder(kHf / "llama-tiny", folder);
    nlohmann::json c = read_json(folder / "config.json");
    c["tie_word_embeddings"] = true;
    write_json(folder / "config.json", c);
    const fs::path out = tmp("llama-tied-project/llama.shardlab.json");
    fs::create_directories(out.parent_path());
    testing::CliResult r = testing::run_cli({"import", QString::fromStdString(folder.string()), "--out", QString::fromStdString(out.string()), "--seq", "16"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    VERIFY_CONTAINS(r.out, "shares the token embedding's table");
    const project::Project p = project::load_project(out);
    const graph::GraphReport report = project::analyze_project(p);
    QVERIFY(report.ok());
    QCOMPARE(report.find("head")->type, std::string("Attend"));
    const std::map<std::string, Tensor> params = imported_params(p, out.parent_path() / "llama.init" / "step_000000");
    QVERIFY(!params.count("head/kernel"));
    QVERIFY(params.count("embed/embedding"));
    r = testing::run_cli({"train", QString::fromStdString(out.string()), "--continue", "--steps", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  }

  // export --format hf writes an imported project's checkpoint back as a Hugging Face folder: at
  // step 0 every tensor is the folder's own, bit for bit, under its own names (Llama's (out, in)
  // Linear weights, GPT-2's fused c_attn), and config.json is the folder's; after training, import
  // reads the trained weights back from it.
  void exportWritesTheFolderBack() {
    for (const std::string model : {"llama-tiny", "gpt2-tiny"}) {
      const fs::path out = tmp("export-" + model + "/m.shardlab.json"), hf = tmp("export-" + model + "/hf");
      fs::create_directories(out.parent_path());
      QCOMPARE(testing::run_cli({"import", QString::fromStdString((kHf / model).string()), "--out", QString::fromStdString(out.string())}).exit_code, 0);
      const testing::CliResult r = testing::run_cli({"export", QString::fromStdString((out.parent_path() / "m.init").string()), "--format", "hf",
                                                     "--out", QString::fromStdString(hf.string())});
      QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
      const checkpoint::SafetensorsFile want = checkpoint::read_safetensors(kHf / model / "model.safetensors");
      const checkpoint::SafetensorsFile got = checkpoint::read_safetensors(hf / "model.safetensors");
      QCOMPARE(got.tensors.size(), want.tensors.size());
      for (const checkpoint::StoredTensor& w : want.tensors) {
        const checkpoint::StoredTensor* g = got.find(w.name);
        QVERIFY2(g, (model + ": " + w.name + " not written").c_str());
        QCOMPARE(g->shape, w.shape);
        QVERIFY2(g->bytes == w.bytes, (model + ": " + w.name + " differs").c_str());
      }
      QCOMPARE(got.metadata.at("format"), std::string("pt"));
      QCOMPARE(read_json(hf / "config.json"), read_json(kHf / model / "config.json"));
    }

    // Trained, exported, imported again: the trained weights.
    const fs::path out = tmp("export-llama-tiny/m.shardlab.json");
    QCOMPARE(testing::run_cli({"train", QString::fromStdString(out.string()), "--continue", "--steps", "2"}).exit_code, 0);
    const fs::path hf = tmp("export-trained-hf");
    QCOMPARE(testing::run_cli({"export", QString::fromStdString((out.parent_path() / "m.init").string()), "--format", "hf", "--out",
                               QString::fromStdString(hf.string())})
                 .exit_code,
             0);
    const fs::path again = tmp("export-again/a.shardlab.json");
    fs::create_directories(again.parent_path());
    QCOMPARE(testing::run_cli({"import", QString::fromStdString(hf.string()), "--out", QString::fromStdString(again.string()), "--seq", "16"}).exit_code, 0);
    const project::Project p = project::load_project(out);
    const std::map<std::string, Tensor> trained = imported_params(p, out.parent_path() / "m.init" / "step_000002");
    const std::map<std::string, Tensor> back = imported_params(project::load_project(again), again.parent_path() / "a.init" / "step_000000");
    QCOMPARE(back.size(), trained.size());
    for (const auto& [path, t] : trained) QVERIFY2(max_abs_diff(back.at(path), t) == 0.0, path.c_str());
    QVERIFY(max_abs_diff(trained.at("blocks/attn/query/kernel"), imported_params(p, out.parent_path() / "m.init" / "step_000000").at("blocks/attn/query/kernel")) > 0);

    // Into a folder that holds something, or without the config the import kept: refused, naming it.
    testing::CliResult r = testing::run_cli({"export", QString::fromStdString((out.parent_path() / "m.init").string()), "--format", "hf", "--out",
                                             QString::fromStdString(hf.string())});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "exists and is not an empty folder");
    fs::remove(out.parent_path() / "m.init" / "hf_config.json");
    r = testing::run_cli({"export", QString::fromStdString((out.parent_path() / "m.init").string()), "--format", "hf", "--out",
                          QString::fromStdString(tmp("export-none").string())});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "hf_config.json: not found");
    VERIFY_CONTAINS(r.err, "--hf-config");
    // A config that ties the head, for a checkpoint whose head is its own: refused, not dropped.
    nlohmann::json tied = read_json(kHf / "llama-tiny" / "config.json");
    tied["tie_word_embeddings"] = true;
    write_json(tmp("tied-config.json"), tied);
    r = testing::run_cli({"export", QString::fromStdString((out.parent_path() / "m.init").string()), "--format", "hf", "--out",
                          QString::fromStdString(tmp("export-tied").string()), "--hf-config",
                          QString::fromStdString(tmp("tied-config.json").string())});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, "has a head of its own ('head/kernel')");
    QVERIFY(!fs::exists(tmp("export-tied") / "model.safetensors"));
  }

  void refusesWhatItCannotMap() {
    VERIFY_CONTAINS(refusal(tmp("nowhere"), "a.shardlab.json"), "not a folder");

    const fs::path t5 = tmp("t5");
    copy_folder(kHf / "llama-tiny", t5);
    nlohmann::json c = read_json(t5 / "config.json");
    c["model_type"] = "t5";
    write_json(t5 / "config.json", c);
    VERIFY_CONTAINS(refusal(t5, "b.shardlab.json"), "config.json: model_type: 't5' is not supported");

    const fs::path scaled = tmp("scaled");
    copy_folder(kHf / "llama-tiny", scaled);
    c = read_json(scaled / "config.json");
    c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    write_json(scaled / "config.json", c);
    VERIFY_CONTAINS(refusal(scaled, "c.shardlab.json"), "rope_scaling");

    // A tensor missing, then one of the wrong shape: each named.
    const fs::path missing = tmp("missing");
    copy_folder(kHf / "llama-tiny", missing);
    checkpoint::SafetensorsFile f = checkpoint::read_safetensors(missing / "model.safetensors");
    std::erase_if(f.tensors, [](const checkpoint::StoredTensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
    checkpoint::write_safetensors(missing / "model.safetensors", f);
    VERIFY_CONTAINS(refusal(missing, "d.shardlab.json"), "tensor 'model.layers.1.mlp.up_proj.weight' is missing");

    const fs::path wrong = tmp("wrong");
    copy_folder(kHf / "llama-tiny", wrong);
    f = checkpoint::read_safetensors(wrong / "model.safetensors");
    for (checkpoint::StoredTensor& t : f.tensors)
      if (t.name == "model.norm.weight") t = checkpoint::from_tensor(t.name, Tensor({16}));
    checkpoint::write_safetensors(wrong / "model.safetensors", f);
    const QString e = refusal(wrong, "e.shardlab.json");
    VERIFY_CONTAINS(e, "tensor 'model.norm.weight' is (16,), the config needs (32,)");

    const fs::path none = tmp("no-weights");
    fs::create_directories(none);
    fs::copy_file(kHf / "llama-tiny" / "config.json", none / "config.json");
    VERIFY_CONTAINS(refusal(none, "f.shardlab.json"), "no model.safetensors or model.safetensors.index.json");

    // An earlier import's project and checkpoint are never overwritten.
    const fs::path out = tmp("twice/llama.shardlab.json");
    fs::create_directories(out.parent_path());
    QCOMPARE(testing::run_cli({"import", QString::fromStdString((kHf / "llama-tiny").string()), "--out", QString::fromStdString(out.string())})
                 .exit_code,
             0);
    VERIFY_CONTAINS(refusal(kHf / "llama-tiny", "twice/llama.shardlab.json"), "llama.shardlab.json: already exists");
    fs::remove(out);
    VERIFY_CONTAINS(refusal(kHf / "llama-tiny", "twice/llama.shardlab.json"), "llama.init: already holds a checkpoint");
    QVERIFY(!fs::exists(out));  // refused before anything was written
  }
};

QTEST_APPLESS_MAIN(TestHfImport)
#include "test_hf_import.moc"
