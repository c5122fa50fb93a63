// The CUDA backend over several processes: `mpirun -np 2` launching shardlab-cli, one GPU per
// process and NCCL between them, gives the losses of one process on the CPU backend with the same
// mesh, within 1e-4 relative (NCCL does not add in rank order, so not bit for bit). Skips, saying
// what is missing, where there is no mpirun, no CUDA backend, fewer than 2 GPUs, no Fashion-MNIST,
// or a shardlab-cli or CUDA backend built without MPI or NCCL.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "engine/backends/backend.h"
#include "tests/engine/cli_runner.h"
#include "tests/engine/mpi_runner.h"

using namespace shardlab;
using shardlab::testing::kCli;
using shardlab::testing::Launch;
using shardlab::testing::run_cli;
using shardlab::testing::start_record;

namespace {

const QString kProject = QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/fashion-mlp.shardlab.json");
const QString kSystemFashion = QStringLiteral("/usr/share/datasets/fashion-mnist");
// Where tests/gpu/pack_for_device.sh puts the data set for a machine without the Debian package.
const QString kPackedFashion = QStringLiteral(SHARDLAB_SOURCE_DIR "/.device/fashion-mnist");

QString find_mpirun() {
  if (QFileInfo(QStringLiteral("/usr/bin/mpirun")).isExecutable()) return QStringLiteral("/usr/bin/mpirun");
  return QStandardPaths::findExecutable(QStringLiteral("mpirun"));
}

Launch mpirun(const QString& launcher, int processes, const QStringList& args, int timeout_ms = 300000) {
  return shardlab::testing::run_mpirun(launcher, processes, kCli, args, timeout_ms);
}

QVector<double> losses(const QString& log) { return shardlab::testing::logged_losses(log); }

}  // namespace

class TestNcclProcesses : public QObject {
  Q_OBJECT

  QString mpirun_;
  QTemporaryDir dir_;
  QString project_ = kProject;

 private slots:
  void initTestCase() {
    mpirun_ = find_mpirun();
    if (mpirun_.isEmpty()) QSKIP("no mpirun (not at /usr/bin/mpirun, nor on PATH): the run over 2 processes needs one");
    int gpus = 0;
    try {
      gpus = int(backends::make_backend("cuda")->devices().size());
    } catch (const std::exception& e) {
      QSKIP(qPrintable(QString("no CUDA backend to run over processes: %1").arg(e.what())));
    }
    if (gpus < 2)
      QSKIP(qPrintable(QString("%1 GPU here; the run over 2 processes needs 2 (one per process)").arg(gpus)));
    if (!QFileInfo::exists(kSystemFashion)) {
      if (!QFileInfo::exists(kPackedFashion))
        QSKIP(qPrintable("no Fashion-MNIST (neither " + kSystemFashion + " nor " + kPackedFashion + ")"));
      // The project with data.dir pointing at the packed copy.
      QFile in(kProject);
      QVERIFY(in.open(QIODevice::ReadOnly));
      QJsonObject p = QJsonDocument::fromJson(in.readAll()).object();
      QJsonObject data = p["data"].toObject();
      data["dir"] = kPackedFashion;
      p["data"] = data;
      project_ = dir_.filePath("fashion-mlp.shardlab.json");
      QFile out(project_);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(QJsonDocument(p).toJson());
    }
  }

  void lossesOverTwoProcessesMatchOneCpuProcess() {
    const QStringList common{"train", project_, "--mesh", "data=2", "--rules", "batch=data", "--steps", "5", "--quiet"};
    const QString cpu_log = dir_.filePath("cpu.jsonl"), gpu_log = dir_.filePath("cuda.jsonl");
    const auto cpu = run_cli(common + QStringList{"--backend", "cpu", "--log", cpu_log});
    QVERIFY2(cpu.exit_code == 0, qPrintable(cpu.err));

    const Launch gpu = mpirun(mpirun_, 2, common + QStringList{"--backend", "cuda", "--log", gpu_log});
    if (gpu.exit_code != 0) {
      const QString said = gpu.out + gpu.err;
      if (said.contains("built without MPI"))
        QSKIP(qPrintable("shardlab-cli was built without MPI: " + said.trimmed().left(400)));
      if (said.contains("runs over several processes need NCCL") || said.contains("cannot load libnccl"))
        QSKIP(qPrintable("the CUDA backend has no NCCL here: " + said.trimmed().left(400)));
    }
    QVERIFY2(gpu.exit_code == 0, qPrintable(gpu.out + gpu.err));
    QCOMPARE(start_record(gpu_log)["processes"].toInt(), 2);

    const QVector<double> want = losses(cpu_log), got = losses(gpu_log);
    QVERIFY2(!want.isEmpty(), "the CPU run logged no loss");
    QCOMPARE(got.size(), want.size());
    for (int i = 0; i < want.size(); ++i)
      QVERIFY2(std::isfinite(got[i]) && std::abs(got[i] - want[i]) <= 1e-4 * std::abs(want[i]),
               qPrintable(QString("loss %1: %2 on CUDA over 2 processes, %3 on the CPU in one")
                              .arg(i)
                              .arg(got[i], 0, 'g', 9)
                              .arg(want[i], 0, 'g', 9)));
  }
};

QTEST_APPLESS_MAIN(TestNcclProcesses)
#include "test_nccl_processes.moc"
