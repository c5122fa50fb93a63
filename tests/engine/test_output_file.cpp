// Where Shardlab writes a file a user named (engine/util/output_file.h): a regular file or a new
// name outside any checkpoint directory, refused otherwise with the reason; what makes a
// directory a checkpoint's (and what does not: another tool's run.json); and a line file that
// reports a failed write at once.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/run_identity.h"
#include "engine/util/output_file.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
namespace fs = std::filesystem;
using testing::error_of;

namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

class TestOutputFile : public QObject {
  Q_OBJECT
 private slots:
  // The markers this file knows are the checkpoint writer's own names.
  void theMarkersAreTheCheckpointsFiles() {
    QCOMPARE(std::string(util::kCheckpointMarkers[0]), std::string(checkpoint::kRunFile));
    QCOMPARE(std::string(util::kCheckpointMarkers[1]), std::string(checkpoint::kLockFile));
    QCOMPARE(std::string(util::kCheckpointMarkers[2]), std::string(checkpoint::kMetaFile));
    QCOMPARE(std::string(util::kCheckpointMarkers[3]), std::string(checkpoint::kCommitFile));
  }

  void regularFilesAndNewNamesAreWritten() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    write(root / "old.json", "old");
    util::write_output_file(root / "old.json", "new", "trace");
    QCOMPARE(read(root / "old.json"), std::string("new"));
    util::write_output_file(root / "fresh.json", "made", "trace");
    QCOMPARE(read(root / "fresh.json"), std::string("made"));
    // Another tool's run.json beside it does not make the folder a checkpoint's.
    write(root / "run.json", R"({"tool": "something else"})");
    util::write_output_file(root / "beside.json", "ok", "trace");
    QCOMPARE(read(root / "beside.json"), std::string("ok"));
  }

  void whatIsNotARegularFileIsRefused_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("reason");
    QTest::newRow("symlink to a file") << "link" << "is a symbolic link";
    QTest::newRow("dangling symlink") << "dangling" << "is a symbolic link";
    QTest::newRow("FIFO") << "fifo" << "is a FIFO";
    QTest::newRow("directory") << "adir" << "is a directory";
    QTest::newRow("device") << "device" << "is a character device";
    QTest::newRow("missing directory") << "nowhere/file" << "does not exist";
  }
  void whatIsNotARegularFileIsRefused() {
    QFETCH(QString, target);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    write(root / "victim", "precious");
    fs::create_symlink(root / "victim", root / "link");
    fs::create_symlink(root / "gone", root / "dangling");
    QCOMPARE(::mkfifo((root / "fifo").c_str(), 0644), 0);
    fs::create_directory(root / "adir");
    if (target == "device" && ::mknod((root / "device").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
      QSKIP("making a device node needs root");
    const fs::path out = root / target.toStdString();
    const QString err = error_of([&] { util::write_output_file(out, "overwritten", "--trace"); });
    VERIFY_CONTAINS(err, QString("--trace ") + QString::fromStdString(out.string()) + ": ");
    VERIFY_CONTAINS(err, reason);
    QCOMPARE(read(root / "victim"), std::string("precious"));
    QVERIFY(!fs::exists(root / "gone"));
    QVERIFY(fs::is_symlink(root / "link") && fs::is_fifo(root / "fifo") && fs::is_directory(root / "adir"));
    VERIFY_CONTAINS(error_of([&] { util::LineFile(out, "--log"); }), reason);
  }

  // A checkpoint root's own names (Shardlab's run.json, .lock, a step's name or a save's
  // temporary one) and anything in a step directory; a log or export beside the steps is fine.
  void nothingIsWrittenInsideACheckpoint_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("reason");
    const QString in_step = "lies in the checkpoint directory", root_name = "is a name the checkpoint writer uses";
    QTest::newRow("run.json") << "ck/run.json" << root_name;
    QTest::newRow(".lock") << "ck/.lock" << root_name;
    QTest::newRow("a step directory's name") << "ck/step_000009" << root_name;
    QTest::newRow("a save's temporary name") << "ck/step_000009.tmp-123" << root_name;
    QTest::newRow("checkpoint.json") << "ck/step_000002/checkpoint.json" << in_step;
    QTest::newRow("COMMITTED") << "ck/step_000002/COMMITTED" << in_step;
    QTest::newRow("a new file in a step") << "ck/step_000002/extra" << in_step;
    QTest::newRow("an old root without run.json") << "old/step_000001/model.safetensors" << in_step;
    QTest::newRow("an old root's lock") << "old/.lock" << root_name;
    QTest::newRow("a log beside the steps") << "ck/train.jsonl" << "";
    QTest::newRow("an export beside an old root's steps") << "old/params.safetensors" << "";
  }
  void nothingIsWrittenInsideACheckpoint() {
    QFETCH(QString, target);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    fs::create_directories(root / "ck" / "step_000002");
    write(root / "ck" / "run.json", R"({"format": "shardlab.run", "version": 1})");
    write(root / "ck" / ".lock", "1\n");
    write(root / "ck" / "step_000002" / "checkpoint.json", "{}");
    write(root / "ck" / "step_000002" / "COMMITTED", "committed\n");
    fs::create_directories(root / "old" / "step_000001");
    write(root / "old" / ".lock", "");
    write(root / "old" / "step_000001" / "COMMITTED", "committed\n");
    const fs::path out = root / target.toStdString();
    if (reason.isEmpty()) {
      util::write_output_file(out, "x", "export to");
      QCOMPARE(read(out), std::string("x"));
      return;
    }
    const bool existed = fs::exists(out);
    const std::string before = existed && fs::is_regular_file(out) ? read(out) : "";
    VERIFY_CONTAINS(error_of([&] { util::write_output_file(out, "x", "export to"); }), reason);
    VERIFY_CONTAINS(error_of([&] { util::LineFile(out, "--log"); }), reason);
    QCOMPARE(fs::exists(out), existed);
    if (existed && fs::is_regular_file(out)) QCOMPARE(read(out), before);
  }

  // Lines go out as they are written; one that cannot be written is an error at once, and the file
  // then ends at the last whole line.
  void aLineFileReportsAFailedWriteAtOnce() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    {
      util::LineFile f(root / "log.jsonl", "--log");
      f.write_line("{\"a\": 1}");
      QCOMPARE(read(root / "log.jsonl"), std::string("{\"a\": 1}\n"));  // no buffering
    }
    const fs::path mnt = root / "small";
    fs::create_directory(mnt);
    if (::geteuid() != 0 || std::system(("mount -t tmpfs -o size=8k tmpfs '" + mnt.string() + "'").c_str()) != 0)
      QSKIP("no small tmpfs to fill here (mounting one needs root); train's full-disk case is in test_checkpoint_integrity");
    struct Unmount {
      fs::path at;
      ~Unmount() { std::system(("umount '" + at.string() + "'").c_str()); }
    } unmount{mnt};
    util::LineFile f(mnt / "log.jsonl", "--log");
    const std::string line(1000, 'x');
    QString err;
    int written = 0;
    for (; written < 100 && err.isEmpty(); ++written) err = error_of([&] { f.write_line(line); });
    VERIFY_CONTAINS(err, QString::fromStdString((mnt / "log.jsonl").string()) + ": writing failed");
    const std::string text = read(mnt / "log.jsonl");
    QCOMPARE(text.size() % (line.size() + 1), size_t(0));
    QCOMPARE(int(text.size() / (line.size() + 1)), written - 1);
  }
};

QTEST_APPLESS_MAIN(TestOutputFile)
#include "test_output_file.moc"
