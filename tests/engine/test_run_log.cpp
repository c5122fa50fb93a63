// The run log's codec (engine/api/run_log.h): what `train --log` writes for each trainer event is
// what the window reads back, every field, so a run over processes or one attached by its log shows
// what an in-process run shows; what the reader cannot use is passed over, never an error.
#include <QtTest>
#include <cmath>

#include "engine/api/run_log.h"

using namespace shardlab;
using Kind = api::LogRecord::Kind;

class TestRunLog : public QObject {
  Q_OBJECT

 private slots:
  void everyStartFieldComesBack() {
    runtime::StartInfo s;
    s.devices = 8;
    s.processes = 2;
    s.mesh = "data=2,model=4";
    s.collectives = 37;
    s.comm_bytes = 123456.5;
    s.total_steps = 60;
    s.steps_per_epoch = 20;
    s.batch = 128;
    s.param_count = 203530;
    s.train_examples = 2560;
    s.test_examples = 512;
    s.first_step = 10;
    s.microbatches = 4;
    s.threads = 3;
    s.step_flops = 1.5e9;
    s.param_bytes = 814120;
    s.opt_state_bytes = 1628240;
    s.arena_bytes = 99999;
    s.total_bytes = 2542359;
    s.precision = "bfloat16 compute, float32 parameters";
    s.loss_scaling = true;
    const api::LogRecord r = api::parse_log_line(api::timed_line(api::start_record(s)), {});
    QCOMPARE(int(r.kind), int(Kind::Start));
    QVERIFY(std::isfinite(r.time) && r.time > 1.7e9);
    const runtime::StartInfo& g = r.start;
    QCOMPARE(g.devices, s.devices);
    QCOMPARE(g.processes, s.processes);
    QCOMPARE(g.mesh, s.mesh);
    QCOMPARE(g.collectives, s.collectives);
    QCOMPARE(g.comm_bytes, s.comm_bytes);
    QCOMPARE(g.total_steps, s.total_steps);
    QCOMPARE(g.steps_per_epoch, s.steps_per_epoch);
    QCOMPARE(g.batch, s.batch);
    QCOMPARE(g.param_count, s.param_count);
    QCOMPARE(g.train_examples, s.train_examples);
    QCOMPARE(g.test_examples, s.test_examples);
    QCOMPARE(g.first_step, s.first_step);
    QCOMPARE(g.microbatches, s.microbatches);
    QCOMPARE(g.threads, s.threads);
    QCOMPARE(g.step_flops, s.step_flops);
    QCOMPARE(g.param_bytes, s.param_bytes);
    QCOMPARE(g.opt_state_bytes, s.opt_state_bytes);
    QCOMPARE(g.arena_bytes, s.arena_bytes);
    QCOMPARE(g.total_bytes, s.total_bytes);
    QCOMPARE(g.precision, s.precision);
    QCOMPARE(g.loss_scaling, s.loss_scaling);
  }

  void stepsAndEvaluationsComeBackWithWhatTheStartSaid() {
    runtime::StartInfo run;
    run.total_steps = 60;
    run.steps_per_epoch = 20;
    runtime::StepEvent e;
    e.step = 21;
    e.epoch = 1;
    e.loss = 0.625;
    e.accuracy = NAN;  // a regression loss: written as null, read as NaN
    e.learning_rate = 1e-3;
    e.step_time_s = 0.25;
    e.cpu_time_s = 0.5;
    e.comm_time_s = 0.0625;
    e.data_wait_s = 0.001;
    e.examples_per_s = 512;
    e.loss_scale = 32768;
    e.skipped = true;
    e.skipped_steps = 3;
    const std::string line = api::timed_line(api::step_record(e));
    QVERIFY2(line.find("\"accuracy\":null") != std::string::npos, line.c_str());
    const api::LogRecord r = api::parse_log_line(line, run);
    QCOMPARE(int(r.kind), int(Kind::Step));
    QCOMPARE(r.step.step, e.step);
    QCOMPARE(r.step.total_steps, run.total_steps);
    QCOMPARE(r.step.epoch, e.epoch);
    QCOMPARE(r.step.loss, e.loss);
    QVERIFY(std::isnan(r.step.accuracy));
    QCOMPARE(r.step.learning_rate, e.learning_rate);
    QCOMPARE(r.step.step_time_s, e.step_time_s);
    QCOMPARE(r.step.cpu_time_s, e.cpu_time_s);
    QCOMPARE(r.step.comm_time_s, e.comm_time_s);
    QCOMPARE(r.step.data_wait_s, e.data_wait_s);
    QCOMPARE(r.step.examples_per_s, e.examples_per_s);
    QCOMPARE(r.step.loss_scale, e.loss_scale);
    QCOMPARE(r.step.skipped, e.skipped);
    QCOMPARE(r.step.skipped_steps, e.skipped_steps);
    // Without loss scaling the step says nothing of it, and reads back as NaN.
    e.loss_scale = NAN;
    const api::LogRecord plain = api::parse_log_line(api::timed_line(api::step_record(e)), run);
    QVERIFY(std::isnan(plain.step.loss_scale));
    QVERIFY(!plain.step.skipped);

    runtime::EvalEvent v;
    v.step = 40;
    v.examples = 512;
    v.loss = 0.5;
    v.accuracy = 0.875;
    const api::LogRecord ev = api::parse_log_line(api::timed_line(api::eval_record(v)), run);
    QCOMPARE(int(ev.kind), int(Kind::Eval));
    QCOMPARE(ev.eval.step, v.step);
    QCOMPARE(ev.eval.epoch, int64_t(1));  // step 40 ends the second epoch of 20
    QCOMPARE(ev.eval.examples, v.examples);
    QCOMPARE(ev.eval.loss, v.loss);
    QCOMPARE(ev.eval.accuracy, v.accuracy);
  }

  void savedWarningAndEndRecords() {
    const api::LogRecord saved = api::parse_log_line(api::timed_line(api::saved_record(30, "ck/step_000030")), {});
    QCOMPARE(int(saved.kind), int(Kind::Saved));
    QCOMPARE(saved.saved_step, int64_t(30));
    QCOMPARE(saved.dir, std::string("ck/step_000030"));
    const api::LogRecord warned = api::parse_log_line(api::timed_line(api::warning_record("the seed changed: 0 -> 1")), {});
    QCOMPARE(int(warned.kind), int(Kind::Warning));
    QCOMPARE(warned.message, std::string("the seed changed: 0 -> 1"));
    for (bool cancelled : {false, true}) {
      const api::LogRecord end = api::parse_log_line(api::timed_line(api::end_record(cancelled)), {});
      QCOMPARE(int(end.kind), int(Kind::End));
      QCOMPARE(end.cancelled, cancelled);
    }
  }

  void whatTheReaderCannotUseIsPassedOver() {
    for (const char* line : {"", "not json", "{\"event\": \"step\"", "[1, 2]", "{\"event\": \"hello\", \"time\": 5}", "{}"}) {
      const api::LogRecord r = api::parse_log_line(line, {});
      QCOMPARE(int(r.kind), int(Kind::Other));
    }
    QVERIFY(std::isnan(api::parse_log_line("not json", {}).time));
    // A start record from before the plan's parts were logged reads them as none.
    const api::LogRecord old = api::parse_log_line(R"({"event": "start", "total_steps": 5, "devices": 2, "mesh": "data=2"})", {});
    QCOMPARE(int(old.kind), int(Kind::Start));
    QCOMPARE(old.start.total_steps, int64_t(5));
    QCOMPARE(old.start.arena_bytes, 0.0);
    QCOMPARE(old.start.processes, 1);
    QCOMPARE(old.start.microbatches, int64_t(1));
  }
};

QTEST_APPLESS_MAIN(TestRunLog)
#include "test_run_log.moc"
