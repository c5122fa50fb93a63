// The engine against real Flax/Optax: start from Flax's own initial parameters, take 3 Adam steps
// on a fixed batch, and match the losses and parameters tests/reference/make_reference.py wrote.
#include <QtTest>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/data/npy.h"
#include "engine/runtime/inference.h"
#include "engine/runtime/trainer.h"

using namespace shardlab;

namespace {

const std::string kRef = std::string(SHARDLAB_SOURCE_DIR) + "/tests/reference/";

std::string npy_name(std::string path) {
  std::replace(path.begin(), path.end(), '/', '.');
  return path + ".npy";
}

// ||got - want|| / ||want||. Per element, Adam amplifies float32 rounding where a gradient is
// near zero (m / (sqrt(v) + eps) with tiny m and v), so single entries of two correct float32
// implementations differ by more than their tensors do.
// Options for a run on a reference batch: the batch whole, on 2 threads.
runtime::TrainOptions reference_options(const Tensor& x) {
  runtime::TrainOptions opt;
  opt.batch_size = x.shape[0];
  opt.threads = 2;
  return opt;
}

// Sets every parameter of `trainer` to the reference's initial value in `dir` (init/*.npy).
void load_reference_init(runtime::Trainer& trainer, const std::string& dir) {
  for (const std::string& p : trainer.parameter_paths()) trainer.set_parameter(p, data::load_npy(dir + "init/" + npy_name(p)));
}

double relative_error(const Tensor& got, const Tensor& want) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double d = double(got.data[size_t(i)]) - double(want.data[size_t(i)]);
    err += d * d;
    norm += double(want.data[size_t(i)]) * double(want.data[size_t(i)]);
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

// `mesh` and `rules` (TrainOptions' strings, e.g. "data=4,model=2" and "batch=data,heads=model"):
// run on that mesh of virtual CPU devices; empty: the project's own (one device here).
void check_against_flax(const std::string& project_file, const std::string& model, const std::string& mesh = {},
                        const std::string& rules = {}) {
  const std::string label = model + (mesh.empty() ? "" : " [" + mesh + (rules.empty() ? "" : "; " + rules) + "]");
  const std::string dir = kRef + "data/" + model + "/";
  nlohmann::json ref = nlohmann::json::parse(std::ifstream(dir + "losses.json"));
  Tensor x = data::load_npy(dir + "x.npy");
  Tensor y = data::load_npy(dir + "y.npy");
  runtime::TrainOptions opt = reference_options(x);
  opt.mesh = mesh;
  opt.rules = rules;
  runtime::Trainer trainer(project::load_project(project_file), opt);
  if (!mesh.empty()) QCOMPARE(trainer.session().mesh().device_count(), int64_t(8));
  const auto paths = trainer.parameter_paths();
  QCOMPARE(paths.size(), ref["params"].size());
  load_reference_init(trainer, dir);

  for (int step = 0; step < 3; ++step) {
    const double loss = trainer.train_step(x, y);
    const double want = ref["losses"][size_t(step)].get<double>();
    QVERIFY2(std::abs(loss - want) <= 1e-5 * std::abs(want),
             qPrintable(QString("%1 step %2: loss %3, Flax %4").arg(label.c_str()).arg(step + 1).arg(loss, 0, 'g', 9).arg(want, 0, 'g', 9)));
  }
  // The model's parameters as one vector must agree within 1e-5 relative; each tensor within
  // 1e-4, since a small tensor (a bias starting at zero) is all Adam update and carries the
  // rounding of near-zero gradients (see relative_error).
  // Except the parameters losses.json lists under "zero_gradient" (vit-tiny's attention key bias:
  // softmax over the keys ignores the q . b they all share): their exact gradient is 0, so both
  // sides' values are float32 noise that Adam scales up to ~lr per step, in any direction. Those
  // need only stay within Adam's reach of their initial values, and stay out of the vector.
  const std::set<std::string> zero_gradient = ref.value("zero_gradient", std::set<std::string>{});
  double err2 = 0, norm2 = 0;
  for (const std::string& p : paths) {
    const Tensor want = data::load_npy(dir + "step3/" + npy_name(p));
    const Tensor got = trainer.parameter(p);
    QCOMPARE(got.shape, want.shape);
    if (zero_gradient.count(p)) {
      const Tensor init = data::load_npy(dir + "init/" + npy_name(p));
      const double lr = ref["optimizer"]["learning_rate"].get<double>(), reach = ref["steps"].get<double>() * lr * 1.001;
      double moved = 0;
      for (size_t i = 0; i < got.data.size(); ++i) moved = std::max(moved, std::abs(double(got.data[i]) - double(init.data[i])));
      qInfo("%s %s after 3 steps (zero gradient, not compared): moved at most %.3g (Adam's reach %.3g), relative to Flax %.3g", label.c_str(),
            p.c_str(), moved, reach, relative_error(got, want));
      QVERIFY2(moved <= reach, qPrintable(QString("%1 %2: moved %3 with a zero gradient").arg(label.c_str(), p.c_str()).arg(moved)));
      continue;
    }
    const double rel = relative_error(got, want);
    size_t worst = 0;
    for (size_t i = 0; i < want.data.size(); ++i) {
      const double d = double(got.data[i]) - double(want.data[i]);
      err2 += d * d;
      norm2 += double(want.data[i]) * double(want.data[i]);
      if (std::abs(got.data[i] - want.data[i]) > std::abs(got.data[worst] - want.data[worst])) worst = i;
    }
    qInfo("%s %s after 3 steps: relative error %.3g (worst element %zu: %.9g vs Flax %.9g)", label.c_str(), p.c_str(), rel,
          worst, got.data[worst], want.data[worst]);
    QVERIFY2(rel <= 1e-4, qPrintable(QString("%1 %2 after 3 steps: relative error %3").arg(label.c_str(), p.c_str()).arg(rel)));
  }
  const double model_rel = std::sqrt(err2 / norm2);
  qInfo("%s: all parameters after 3 steps: relative error %.3g", label.c_str(), model_rel);
  QVERIFY2(model_rel <= 1e-5, qPrintable(QString("%1: parameters differ from Flax by %2 relative").arg(label.c_str()).arg(model_rel)));
  // The loss at the updated parameters (a forward pass only) matches too.
  data::Dataset ds;
  ds.features = x;
  ds.targets = y;
  ds.integer_labels = ref["y"]["dtype"].get<std::string>() == "int32";
  ds.num_classes = ds.integer_labels ? 10 : 0;
  const double after = trainer.evaluate(ds).loss;
  const double want_after = ref["loss_after"].get<double>();
  QVERIFY2(std::abs(after - want_after) <= 1e-5 * std::abs(want_after),
           qPrintable(QString("%1 loss after: %2, Flax %3").arg(label.c_str()).arg(after, 0, 'g', 9).arg(want_after, 0, 'g', 9)));
}

// The same model under a precision policy (make_precision_reference.py): Flax's initial
// parameters, 10 Adam steps on the fixed batch with the policy `dtype` / `matmul_precision` laid
// over the project, every loss within 1e-2 relative and every parameter tensor after 3 steps within
// 2e-2 of Flax's (the bounds). The figures actually reached are printed, and the run must
// also be nearer the policy's reference than the float32 one: a run that ignored the policy would
// pass bounds this loose.
void check_policy_against_flax(const std::string& project_file, const std::string& model, const std::string& policy,
                               const std::string& dtype, const std::string& matmul_precision) {
  const std::string label = model + "-" + policy;
  const std::string dir = kRef + "data/" + label + "/", base = kRef + "data/" + model + "/";
  nlohmann::json ref = nlohmann::json::parse(std::ifstream(dir + "losses.json"));
  nlohmann::json f32 = nlohmann::json::parse(std::ifstream(base + "losses.json"));
  QCOMPARE(ref["init_from"].get<std::string>(), model);
  const Tensor x = data::load_npy(base + "x.npy"), y = data::load_npy(base + "y.npy");
  runtime::TrainOptions opt = reference_options(x);
  opt.dtype = dtype;
  opt.matmul_precision = matmul_precision;
  runtime::Trainer trainer(project::load_project(project_file), opt);
  load_reference_init(trainer, base);

  const size_t steps = ref["losses"].size();
  double worst_loss = 0;
  // The whole model's distance from the policy's reference and from the float32 one.
  double err_policy = 0, err_f32 = 0, norm = 0;
  for (size_t step = 0; step < steps; ++step) {
    const double loss = trainer.train_step(x, y), want = ref["losses"][step].get<double>();
    const double rel = std::abs(loss - want) / std::abs(want);
    worst_loss = std::max(worst_loss, rel);
    QVERIFY2(rel <= 1e-2, qPrintable(QString("%1 step %2: loss %3, Flax %4").arg(label.c_str()).arg(step + 1).arg(loss, 0, 'g', 9).arg(want, 0, 'g', 9)));
    if (step + 1 != ref["params_after_step"].get<size_t>()) continue;
    for (const std::string& p : trainer.parameter_paths()) {
      const Tensor got = trainer.parameter(p), want_p = data::load_npy(dir + "step3/" + npy_name(p)),
                   want_f32 = data::load_npy(base + "step3/" + npy_name(p));
      const double rel_p = relative_error(got, want_p);
      qInfo("%s %s after 3 steps: relative error %.3g (float32's reference: %.3g)", label.c_str(), p.c_str(), rel_p,
            relative_error(got, want_f32));
      QVERIFY2(rel_p <= 2e-2, qPrintable(QString("%1 %2 after 3 steps: relative error %3").arg(label.c_str(), p.c_str()).arg(rel_p)));
      for (size_t i = 0; i < got.data.size(); ++i) {
        err_policy += std::pow(double(got.data[i]) - double(want_p.data[i]), 2);
        err_f32 += std::pow(double(got.data[i]) - double(want_f32.data[i]), 2);
        norm += std::pow(double(want_p.data[i]), 2);
      }
    }
  }
  const double policy_rel = std::sqrt(err_policy / norm), f32_rel = std::sqrt(err_f32 / norm);
  qInfo("%s: worst loss over %zu steps %.3g relative to Flax; parameters after 3 steps %.3g from the policy's reference, %.3g from float32's",
        label.c_str(), steps, worst_loss, policy_rel, f32_rel);
  QVERIFY2(policy_rel < f32_rel / 2, qPrintable(QString("%1: the run is no nearer the policy's reference (%2) than float32's (%3)")
                                                    .arg(label.c_str()).arg(policy_rel).arg(f32_rel)));
}

}  // namespace

class TestReference : public QObject {
  Q_OBJECT
 private slots:
  void fashionMlpMatchesFlaxAfterThreeAdamSteps() {
    check_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/fashion-mlp.shardlab.json", "fashion-mlp");
  }
  void dotReluDotScanMatchesFlaxAfterThreeAdamSteps() {
    check_against_flax(kRef + "dot-relu-dot-small.shardlab.json", "dot-relu-dot");
  }
  // A small pre-norm ViT (PatchEmbed, PositionEmbedding, a Repeat of LayerNorm, MultiHeadAttention,
  // GELU MLP, MeanPool) against make_reference.py's vit-tiny, on one device and on 8 virtual devices
  // sharded Megatron-style (heads and mlp over `model`) and FSDP-style (embed over `data`).
  void vitTinyMatchesFlaxAfterThreeAdamSteps() { check_against_flax(kRef + "vit-tiny.shardlab.json", "vit-tiny"); }
  void vitTinyMegatronOnEightDevicesMatchesFlax() {
    check_against_flax(kRef + "vit-tiny.shardlab.json", "vit-tiny", "data=4,model=2", "batch=data,heads=model,mlp=model");
  }
  void vitTinyFsdpOnEightDevicesMatchesFlax() {
    check_against_flax(kRef + "vit-tiny.shardlab.json", "vit-tiny", "data=8", "batch=data,embed=data");
  }
  // The convolution layers: the Flax MNIST example's CNN (Conv, AvgPool) as the example project
  // has it, and cnn-tiny's strides, SAME padding on an even size, SAME max pooling (whose -inf
  // padding never wins), dilation and feature groups; on one device, and on 8 sharded over the
  // batch with the output channels and the MLP over `model`, and FSDP-style.
  void cnnFashionMatchesFlaxAfterThreeAdamSteps() {
    check_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/cnn-fashion.shardlab.json", "cnn-fashion");
  }
  void cnnFashionChannelsSplitOnEightDevicesMatchesFlax() {
    check_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/cnn-fashion.shardlab.json", "cnn-fashion", "data=4,model=2",
                       "batch=data,channels=model,mlp=model");
  }
  void cnnFashionFsdpOnEightDevicesMatchesFlax() {
    check_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/cnn-fashion.shardlab.json", "cnn-fashion", "data=8",
                       "batch=data,embed=data,channels=data");
  }
  void cnnTinyMatchesFlaxAfterThreeAdamSteps() { check_against_flax(kRef + "cnn-tiny.shardlab.json", "cnn-tiny"); }
  void cnnTinyShardedOnEightDevicesMatchesFlax() {
    check_against_flax(kRef + "cnn-tiny.shardlab.json", "cnn-tiny", "data=4,model=2", "batch=data,channels=model,in_channels=model,classes=model");
  }
  // GroupNorm (make_reference.py's gn-tiny): 4 groups of an image's 8 channels, each normalised over
  // 6 x 6 x 2 values, and 2 groups of a vector's 16; on one device, and on 8 with the batch over
  // `data` and the channels (the groups' own axis) over `model`.
  void gnTinyMatchesFlaxAfterThreeAdamSteps() { check_against_flax(kRef + "gn-tiny.shardlab.json", "gn-tiny"); }
  void gnTinyShardedOnEightDevicesMatchesFlax() {
    check_against_flax(kRef + "gn-tiny.shardlab.json", "gn-tiny", "data=4,model=2", "batch=data,channels=model,mlp=model");
  }
  // Concatenate twice (make_reference.py's cat-tiny): a U-Net-style skip joining channels, and two
  // Dense branches joining features; sharded, the joined channels and features are split over
  // model, so the join gathers them first.
  void catTinyMatchesFlaxAfterThreeAdamSteps() { check_against_flax(kRef + "cat-tiny.shardlab.json", "cat-tiny"); }
  void catTinyShardedOnEightDevicesMatchesFlax() {
    check_against_flax(kRef + "cat-tiny.shardlab.json", "cat-tiny", "data=4,model=2", "batch=data,channels=model,mlp=model");
  }
  // A tiny Llama against transformers' own FlaxLlamaForCausalLM (make_reference.py's llama-tiny):
  // RMSNorm, rotary embedding, grouped-query attention (4 query heads on 2 key/value heads) and a
  // SwiGLU MLP. Its logits at the initial parameters first, then 3 Adam steps, on one device and
  // on 8 (Megatron over heads, key/value heads and the MLP; FSDP).
  void llamaTinyLogitsMatchTransformers() {
    const std::string dir = kRef + "data/llama-tiny/";
    const project::Project project = project::load_project(kRef + "llama-tiny.shardlab.json");
    const Tensor x = data::load_npy(dir + "x.npy"), want = data::load_npy(dir + "logits.npy");
    runtime::Trainer trainer(project, reference_options(x));
    load_reference_init(trainer, dir);
    std::map<std::string, Tensor> params;
    for (const std::string& p : trainer.parameter_paths()) params[p] = trainer.parameter(p);
    const Tensor got = runtime::predict(project, params, x);
    QCOMPARE(got.shape, want.shape);
    double worst = 0;
    for (size_t i = 0; i < want.data.size(); ++i) worst = std::max(worst, std::abs(double(got.data[i]) - double(want.data[i])));
    qInfo("llama-tiny logits at the initial parameters: max abs diff %.3g from transformers", worst);
    QVERIFY2(worst <= 1e-4, qPrintable(QString("logits differ from transformers by %1").arg(worst)));
  }
  void llamaTinyMatchesTransformersAfterThreeAdamSteps() { check_against_flax(kRef + "llama-tiny.shardlab.json", "llama-tiny"); }
  void llamaTinyMegatronOnEightDevicesMatchesTransformers() {
    check_against_flax(kRef + "llama-tiny.shardlab.json", "llama-tiny", "data=4,model=2",
                       "batch=data,heads=model,kv_heads=model,mlp=model");
  }
  void llamaTinyFsdpOnEightDevicesMatchesTransformers() {
    check_against_flax(kRef + "llama-tiny.shardlab.json", "llama-tiny", "data=8", "batch=data,embed=data");
  }
  // Mixed precision and TensorFloat-32 matmuls against make_precision_reference.py.
  void fashionMlpInBfloat16MatchesFlax() {
    check_policy_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/fashion-mlp.shardlab.json", "fashion-mlp", "bf16", "bfloat16", "");
  }
  void dotReluDotInBfloat16MatchesFlax() {
    check_policy_against_flax(kRef + "dot-relu-dot-small.shardlab.json", "dot-relu-dot", "bf16", "bfloat16", "");
  }
  void fashionMlpWithTf32MatmulsMatchesTheirEmulation() {
    check_policy_against_flax(std::string(SHARDLAB_SOURCE_DIR) + "/projects/fashion-mlp.shardlab.json", "fashion-mlp", "tf32", "", "tf32");
  }
  void dotReluDotWithTf32MatmulsMatchesTheirEmulation() {
    check_policy_against_flax(kRef + "dot-relu-dot-small.shardlab.json", "dot-relu-dot", "tf32", "", "tf32");
  }
};

QTEST_APPLESS_MAIN(TestReference)
#include "test_reference.moc"
