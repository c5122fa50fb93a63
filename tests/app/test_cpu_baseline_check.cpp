// The start-up CPU check (app/startup/cpu_baseline_check.cpp): on a CPU without the x86-64-v3
// features the build targets, shardlab and shardlab-cli print one line naming what is missing and
// exit 1, before any static initializer built for x86-64-v3 runs; and the check itself holds no
// instruction an older CPU lacks. A missing feature is simulated with SHARDLAB_TEST_CPU_LACKS.
#include <QProcess>
#include <QProcessEnvironment>
#include <QtTest>

#include "tests/engine/disassembly.h"

using namespace shardlab::testing;

namespace {

struct Run {
  int exit_code = -1;  // -1: killed by a signal or did not finish
  QString out, err;
};

Run run(const QString& program, const QStringList& args, const QString& lacks) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("SHARDLAB_TEST_CPU_LACKS");
  if (!lacks.isEmpty()) env.insert("SHARDLAB_TEST_CPU_LACKS", lacks);
  env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(program, args);
  Run r;
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    r.err = "did not finish";
    return r;
  }
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

bool cpu_has_x86_64_v3() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3");
}

}  // namespace

class TestCpuBaselineCheck : public QObject {
  Q_OBJECT

 private slots:
  // On a CPU with every feature, the check lets the program start: its v3 static initializer and
  // main both run.
  void aCapableCpuRunsTheProgram() {
    if (!cpu_has_x86_64_v3()) QSKIP("this CPU lacks x86-64-v3, so the probe is refused here (as it should be)");
    const Run r = run(CPU_CHECK_PROBE, {}, {});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("probe: v3 static initializer ran (6)"), qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("probe: main ran"), qPrintable(r.out + r.err));
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
  }

  // A missing feature stops the program with one line before the v3 static initializer runs.
  void aMissingFeatureStopsBeforeAnyStaticInitializer() {
    const Run r = run(CPU_CHECK_PROBE, {}, "avx2,FMA");
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.out.isEmpty(), qPrintable("the program ran on: " + r.out));
    QCOMPARE(r.err,
             QString("cpu_check_probe: this build needs an x86-64-v3 CPU (AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, "
                     "MOVBE, SSE4.2, ...); this CPU lacks AVX2, FMA\n"));
  }

  // shardlab-cli and shardlab carry the check: each refuses with one line naming itself.
  void bothProgramsRefuseWithOneLine_data() {
    QTest::addColumn<QString>("program");
    QTest::newRow("shardlab-cli") << "shardlab-cli";
    QTest::newRow("shardlab") << "shardlab";
  }
  void bothProgramsRefuseWithOneLine() {
    QFETCH(QString, program);
    const Run r = run(QString(SHARDLAB_BINARY_DIR "/app/") + program, {"--version"}, "movbe");
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.out.isEmpty(), qPrintable("the program ran on: " + r.out));
    QVERIFY2(r.err.startsWith(program + ": this build needs an x86-64-v3 CPU"), qPrintable(r.err));
    QVERIFY2(r.err.endsWith("; this CPU lacks MOVBE\n") && r.err.count('\n') == 1, qPrintable(r.err));
  }

  // The check runs on any x86-64 CPU: its object holds no VEX, BMI, SSE3+ or similar instruction,
  // and defines no weak symbol through which the linker could swap in a copy built for v3.
  void theCheckHoldsOnlyBaselineInstructions() {
    if (const QString missing = binutils_missing(); !missing.isEmpty()) QSKIP(qPrintable(missing));
    const QStringList objects = QString(CPU_CHECK_OBJECTS).split(';', Qt::SkipEmptyParts);
    QVERIFY(!objects.isEmpty());
    for (const QString& object : objects) {
      const QList<DisassembledFunction> functions = disassemble(object);
      QVERIFY2(!functions.isEmpty(), qPrintable("nothing disassembled in " + object));
      for (const DisassembledFunction& f : functions) {
        const QRegularExpressionMatch hit = beyond_baseline_instruction().match(f.code);
        QVERIFY2(!hit.hasMatch(), qPrintable(object + ": " + f.name + " holds " + hit.captured(0).trimmed()));
      }
      const QString weak = weak_symbol(object);
      QVERIFY2(weak.isEmpty(), qPrintable(object + " defines a weak or unique symbol: " + weak));
    }
  }

  // The detector itself: an AVX2 instruction is caught, so the check above could fail.
  void theBaselineDetectorCatchesV3Code() {
    if (const QString missing = binutils_missing(); !missing.isEmpty()) QSKIP(qPrintable(missing));
    const QList<DisassembledFunction> functions = disassemble(CPU_CHECK_PROBE, "v3_work");
    QVERIFY2(!functions.isEmpty(), "v3_work not found in the probe");
    QVERIFY2(beyond_baseline_instruction().match(functions.front().code).hasMatch(), qPrintable(functions.front().code));
  }
};

QTEST_APPLESS_MAIN(TestCpuBaselineCheck)
#include "test_cpu_baseline_check.moc"
