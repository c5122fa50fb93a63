// Optimizer updates, schedules and losses against Optax. Expected values were computed with
// optax 0.2.8 in float64 (the snippet that produced them is beside each table) and by hand.
#include <QtTest>
#include <cmath>

#include "engine/backends/cpu/executor.h"
#include "engine/ir/primitive.h"
#include "engine/project/optimizer_spec.h"
#include "engine/runtime/train_step.h"

using namespace shardlab;
using ir::Op;

namespace {

const double kP0[3] = {0.5, -1.25, 2.0};
const double kGrads[3][3] = {{0.1, -0.3, 0.02}, {-0.2, 0.05, 0.4}, {0.3, 0.3, -0.1}};

// Three updates of p0 with the gradients above through the engine's update primitive.
std::vector<double> three_updates(const std::string& json) {
  project::OptimizerSpec o = project::parse_optimizer(nlohmann::ordered_json::parse(json), "optimizer");
  ir::Program p;
  int param = p.add_value("p", {3}, ir::ValueKind::Param);
  int grad = p.add_value("g", {3}, ir::ValueKind::Input);
  std::vector<int> in{param, grad};
  int states = o.type == "sgd" ? (o.momentum != 0 ? 1 : 0) : 2;
  for (int s = 0; s < states; ++s) in.push_back(p.add_value("s" + std::to_string(s), {3}, ir::ValueKind::OptState));
  // The primitive and attributes a training step gives each parameter (runtime::update_attrs).
  p.apply(runtime::update_op(o), in, runtime::update_attrs(o));
  backends::cpu::Executor<double> ex(p, plan::plan_memory(p, {}));
  std::copy(kP0, kP0 + 3, ex.data(param));
  for (int step = 0; step < 3; ++step) {
    std::copy(kGrads[step], kGrads[step] + 3, ex.data(grad));
    ex.run({step, o.learning_rate.at(step)});
  }
  return {ex.data(param), ex.data(param) + 3};
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel = 1e-12) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    QVERIFY2(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])),
             qPrintable(QString("element %1: got %2, want %3").arg(i).arg(got[i], 0, 'g', 17).arg(want[i], 0, 'g', 17)));
}

double run_loss(Op op, const Shape& a, const std::vector<double>& av, const Shape& b, const std::vector<double>& bv) {
  ir::Program p;
  int x = p.add_value("x", a, ir::ValueKind::Input), y = p.add_value("y", b, ir::ValueKind::Input);
  int l = p.apply1(op, {x, y});
  backends::cpu::Executor<double> ex(p, plan::plan_memory(p, {l}));
  std::copy(av.begin(), av.end(), ex.data(x));
  std::copy(bv.begin(), bv.end(), ex.data(y));
  ex.run({0, 0.0});
  return ex.data(l)[0];
}

}  // namespace

class TestOptimizers : public QObject {
  Q_OBJECT
 private slots:
  // optax.sgd(0.1) etc.; q = p0; for g in grads: u, st = tx.update(g, st, q); q = apply_updates(q, u)
  void sgdMatchesOptax() { expect_close(three_updates(R"({"type":"sgd","learning_rate":0.1})"), {0.48, -1.255, 1.968}); }
  void sgdMomentumMatchesOptax() {
    expect_close(three_updates(R"({"type":"sgd","learning_rate":0.1,"momentum":0.9})"), {0.4809, -1.2082, 1.92858});
  }
  void sgdNesterovMatchesOptax() {
    expect_close(three_updates(R"({"type":"sgd","learning_rate":0.1,"momentum":0.9,"nesterov":true})"),
                 {0.46281, -1.21738, 1.903722});
  }
  void adamMatchesOptax() {
    expect_close(three_updates(R"({"type":"adam","learning_rate":0.01})"),
                 {0.49022862539477424, -1.2361406443476721, 1.9779571692764208});
  }
  void adamwMatchesOptax() {
    expect_close(three_updates(R"({"type":"adamw","learning_rate":0.01,"weight_decay":0.1})"),
                 {0.48874645385773646, -1.2324197684722744, 1.9719909238035422});
  }
  void adamWithWarmupCosineMatchesOptax() {
    expect_close(three_updates(R"({"type":"adam","learning_rate":{"schedule":"warmup_cosine_decay","init_value":0.0,)"
                               R"("peak_value":0.01,"warmup_steps":2,"decay_steps":5,"end_value":0.001}})"),
                 {0.49839810691115505, -1.2488333316748221, 1.9918404330170332},
                 1e-9);  // Optax evaluates the schedule's cosine at lower precision than the update
  }
  void adamFirstStepIsSignTimesLearningRate() {
    // By hand: after one step m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps).
    auto o = project::parse_optimizer(nlohmann::ordered_json::parse(R"({"type":"adam","learning_rate":0.01})"), "o");
    QCOMPARE(o.eps, 1e-8);
    ir::Program p;
    int param = p.add_value("p", {1}, ir::ValueKind::Param), grad = p.add_value("g", {1}, ir::ValueKind::Input);
    int mu = p.add_value("mu", {1}, ir::ValueKind::OptState), nu = p.add_value("nu", {1}, ir::ValueKind::OptState);
    p.apply(Op::AdamUpdate, {param, grad, mu, nu});
    backends::cpu::Executor<double> ex(p, plan::plan_memory(p, {}));
    ex.data(param)[0] = 1.0;
    ex.data(grad)[0] = -0.25;
    ex.run({0, 0.01});
    QVERIFY(std::abs(ex.data(param)[0] - (1.0 + 0.01 * 0.25 / (0.25 + 1e-8))) < 1e-15);
    QVERIFY(std::abs(ex.data(mu)[0] - 0.1 * -0.25) < 1e-15);
    QVERIFY(std::abs(ex.data(nu)[0] - 0.001 * 0.0625) < 1e-15);
  }
  void warmupCosineScheduleMatchesOptax() {
    // optax.warmup_cosine_decay_schedule(0.0, 0.01, 2, 5, 0.001)(0..6)
    auto o = project::parse_optimizer(
        nlohmann::ordered_json::parse(R"({"type":"adam","learning_rate":{"schedule":"warmup_cosine_decay",)"
                                      R"("init_value":0.0,"peak_value":0.01,"warmup_steps":2,"decay_steps":5,"end_value":0.001}})"),
        "o");
    const double want[] = {0.0, 0.005, 0.01, 0.00775, 0.00325, 0.001, 0.001};
    for (int i = 0; i < 7; ++i) QVERIFY2(std::abs(o.learning_rate.at(i) - want[i]) < 1e-15, qPrintable(QString::number(i)));
  }
  void constantScheduleIsConstant() {
    auto o = project::parse_optimizer(nlohmann::ordered_json::parse(R"({"type":"sgd","learning_rate":0.3})"), "o");
    QCOMPARE(o.learning_rate.at(0), 0.3);
    QCOMPARE(o.learning_rate.at(100000), 0.3);
  }
  void adamwDefaultsToOptaxWeightDecay() {
    auto o = project::parse_optimizer(nlohmann::ordered_json::parse(R"({"type":"adamw"})"), "o");
    QCOMPARE(o.weight_decay, 1e-4);
    QCOMPARE(o.learning_rate.at(0), 1e-3);
  }
  void optimizerFieldOfAnotherOptimizerIsAnError() {
    try {
      project::parse_optimizer(nlohmann::ordered_json::parse(R"({"type":"sgd","b1":0.8})"), "f.json: optimizer");
      QFAIL("no error");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("optimizer.b1"), e.what());
    }
  }
  void softmaxCrossEntropyMatchesOptaxAndHand() {
    const double got = run_loss(Op::SoftmaxXent, {2, 3}, {1.0, 2.0, 0.5, -1.0, 0.0, 3.0}, {2}, {2, 0});
    const double hand = ((std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5)) - 0.5) +
                         (std::log(std::exp(-1.0) + std::exp(0.0) + std::exp(3.0)) + 1.0)) / 2.0;
    QVERIFY(std::abs(got - hand) < 1e-14);
    QVERIFY(std::abs(got - 3.015126343932687) < 1e-14);  // optax.softmax_cross_entropy_with_integer_labels(...).mean()
  }
  void softmaxCrossEntropyIsStableForHugeLogits() {
    const double got = run_loss(Op::SoftmaxXent, {1, 2}, {1000.0, 0.0}, {1}, {1});
    QVERIFY(std::isfinite(got));
    QVERIFY(std::abs(got - 1000.0) < 1e-9);
  }
  void meanSquaredErrorByHand() {
    const double got = run_loss(Op::Mse, {2, 2}, {1.0, 2.0, 3.0, 4.0}, {2, 2}, {1.0, 1.0, 1.0, 1.0});
    QCOMPARE(got, (0.0 + 1.0 + 4.0 + 9.0) / 4.0);
  }
  void accuracyCountsArgmaxHits() {
    const double got = run_loss(Op::Accuracy, {3, 2}, {0.1, 0.9, 0.8, 0.2, 0.3, 0.7}, {3}, {1, 1, 1});
    QCOMPARE(got, 2.0 / 3.0);
  }
  void labelOutOfRangeIsAClearError() {
    try {
      run_loss(Op::SoftmaxXent, {1, 3}, {0.0, 0.0, 0.0}, {1}, {7});
      QFAIL("no error");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("label 7"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestOptimizers)
#include "test_optimizers.moc"
