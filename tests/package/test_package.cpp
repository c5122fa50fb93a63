// The Debian packages as a user gets them: CPack builds shardlab, shardlab-cli and, where the CUDA
// backend was built, shardlab-cuda from this build tree, lintian finds no error, the desktop entry, AppStream metainfo and MIME type validate, and
// the programs unpacked with dpkg-deb into a temporary root train an example and draw the window.
// The packaged binaries hold no AVX-512 code outside the AVX-512 GEMM kernel and start with the
// baseline CPU check.
#include <QDirIterator>
#include <QElapsedTimer>
#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/engine/disassembly.h"

using namespace shardlab::testing;

namespace {

const QString kBuild = QStringLiteral(SHARDLAB_BINARY_DIR);
const QString kVersion = QStringLiteral(SHARDLAB_PROJECT_VERSION);
// The CUDA backend module, where this build has one (engine/backends/cuda).
const QString kCudaModule = kBuild + "/lib/shardlab/backends/libshardlab_backend_cuda.so";

struct Run {
  int exit_code = -1;  // -1: killed by a signal, did not start or did not finish
  QString out, err;
  QString all() const { return out + err; }
};

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
        int timeout_ms = 300000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Run r;
  if (!p.waitForStarted(10000)) {
    r.err = "could not start " + program + ": " + p.errorString();
    return r;
  }
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = program + " timed out";
    return r;
  }
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

QString describe(const QString& what, const Run& r) {
  return QString("%1 exited %2:\n%3").arg(what).arg(r.exit_code).arg(r.all());
}

QString read_text(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestPackage : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString root_;                   // every package unpacked here, as if installed under /
  QString cli_root_;               // shardlab-cli alone: a machine without shardlab-cuda
  QMap<QString, QString> debs_;    // package name -> .deb
  qint64 cpack_ms_ = 0;

  QString field(const QString& package, const QString& name) {
    return run("dpkg-deb", {"-f", debs_.value(package), name}).out.trimmed();
  }

 private slots:
  void initTestCase() {
    for (const char* tool : {"cpack", "dpkg-deb", "dpkg-shlibdeps", "file", "lintian", "desktop-file-validate",
                             "appstreamcli", "update-mime-database", "xvfb-run", "objdump", "objcopy", "nm"})
      if (QStandardPaths::findExecutable(tool).isEmpty())
        QSKIP(qPrintable(QString("%1 not found: packaging/install-deps.sh installs it").arg(tool)));
    if (!QFileInfo::exists(kBuild + "/packaging/man/shardlab-cli.1.gz"))
      QSKIP("no man pages in the build (help2man was not found at configure time): packaging/install-deps.sh installs it");
    QVERIFY(tmp_.isValid());
    QElapsedTimer timer;
    timer.start();
    const Run cpack = run("cpack", {"--config", kBuild + "/CPackConfig.cmake", "-B", tmp_.path() + "/packages"});
    cpack_ms_ = timer.elapsed();
    QVERIFY2(cpack.exit_code == 0, qPrintable(describe("cpack", cpack)));
    for (QDirIterator it(tmp_.path() + "/packages", {"*.deb"}, QDir::Files); it.hasNext();) {
      const QString deb = it.next();
      debs_[run("dpkg-deb", {"-f", deb, "Package"}).out.trimmed()] = deb;
    }
    root_ = tmp_.path() + "/root";
    for (const QString& deb : debs_) {
      const Run x = run("dpkg-deb", {"-x", deb, root_});
      QVERIFY2(x.exit_code == 0, qPrintable(describe("dpkg-deb -x " + deb, x)));
    }
    cli_root_ = tmp_.path() + "/cli-root";
    if (debs_.contains("shardlab-cli")) {
      const Run x = run("dpkg-deb", {"-x", debs_.value("shardlab-cli"), cli_root_});
      QVERIFY2(x.exit_code == 0, qPrintable(describe("dpkg-deb -x shardlab-cli", x)));
    }
    qInfo("cpack took %.1f s", cpack_ms_ / 1000.0);
  }

  // Exactly the packages the issue names (shardlab-cuda only where the CUDA backend was built),
  // with the project's version.
  void everyPackageIsBuilt() {
    QStringList expected{"shardlab", "shardlab-cli"};
    if (QFileInfo::exists(kCudaModule)) expected << "shardlab-cuda";
    QCOMPARE(QStringList(debs_.keys()), expected);
    for (auto it = debs_.cbegin(); it != debs_.cend(); ++it) {
      QCOMPARE(field(it.key(), "Version"), kVersion);
      qInfo("%s: %.0f KiB", qPrintable(QFileInfo(it.value()).fileName()), QFileInfo(it.value()).size() / 1024.0);
    }
  }

  // Depends come from dpkg-shlibdeps: the command line needs no Qt, the desktop application does
  // and brings the command line with it.
  void dependsNameTheLibraries() {
    const QString cli = field("shardlab-cli", "Depends"), gui = field("shardlab", "Depends");
    qInfo("shardlab-cli Depends: %s", qPrintable(cli));
    qInfo("shardlab Depends: %s", qPrintable(gui));
    for (const char* lib : {"libc6", "libstdc++6", "libgomp1", "zlib1g"}) QVERIFY2(cli.contains(lib), qPrintable(cli));
    QVERIFY2(!cli.contains("qt", Qt::CaseInsensitive), qPrintable("shardlab-cli must not need Qt: " + cli));
    if (run(kBuild + "/app/shardlab-cli", {"--version"}).out.contains("ONNX yes"))
      QVERIFY2(cli.contains("libonnx") && cli.contains("libprotobuf"), qPrintable(cli));
    if (run(kBuild + "/app/shardlab-cli", {"--version"}).out.contains("MPI yes"))
      QVERIFY2(cli.contains("libopenmpi"), qPrintable(cli));
    QVERIFY2(gui.contains("libqt6widgets6") && gui.contains("libqt6gui6") && gui.contains("qt6-qpa-plugins"), qPrintable(gui));
    QVERIFY2(gui.contains("shardlab-cli (= " + kVersion + ")"), qPrintable(gui));
  }

  void lintianFindsNoErrors() {
    const Run r = run("lintian", QStringList{"--no-tag-display-limit"} + debs_.values());
    static const QRegularExpression error("^E: .*$", QRegularExpression::MultilineOption);
    QStringList errors, others;
    for (const QString& line : r.out.split('\n', Qt::SkipEmptyParts)) (error.match(line).hasMatch() ? errors : others) << line;
    for (const QString& line : others) qInfo("lintian: %s", qPrintable(line));
    QVERIFY2(errors.isEmpty(), qPrintable("lintian errors:\n" + errors.join('\n')));
    QVERIFY2(r.exit_code == 0 || r.exit_code == 2 || (r.exit_code == 1 && errors.isEmpty()), qPrintable(describe("lintian", r)));
  }

  void desktopEntryValidates() {
    const QString desktop = root_ + "/usr/share/applications/io.shardlab.Shardlab.desktop";
    const Run r = run("desktop-file-validate", {desktop});
    QVERIFY2(r.exit_code == 0 && !r.all().contains("error:"), qPrintable(describe("desktop-file-validate", r)));
    QVERIFY2(read_text(desktop).contains("\nMimeType=application/x-shardlab-project;\n"), "the entry does not open projects");
    QVERIFY(QFileInfo::exists(root_ + "/usr/share/icons/hicolor/scalable/apps/io.shardlab.Shardlab.svg"));
  }

  // The metainfo validates, and its newest release (the release notes) is this version.
  void metainfoValidatesWithReleaseNotes() {
    const QString metainfo = root_ + "/usr/share/metainfo/io.shardlab.Shardlab.metainfo.xml";
    const Run r = run("appstreamcli", {"validate", "--no-net", metainfo});
    QVERIFY2(r.exit_code == 0, qPrintable(describe("appstreamcli validate --no-net", r)));
    const QString text = read_text(metainfo);
    static const QRegularExpression newest("<release version=\"([^\"]+)\"");
    QCOMPARE(newest.match(text).captured(1), kVersion);
    QVERIFY2(text.contains("<screenshot type=\"default\">"), "no screenshot");
  }

  // shared-mime-info, given the package's type, maps *.shardlab.json to it.
  void projectFilesGetTheirMimeType() {
    const QString db = tmp_.path() + "/mime";
    QVERIFY(QDir().mkpath(db + "/packages"));
    QVERIFY(QFile::copy(root_ + "/usr/share/mime/packages/io.shardlab.Shardlab.xml", db + "/packages/io.shardlab.Shardlab.xml"));
    const Run r = run("update-mime-database", {db});
    QVERIFY2(r.exit_code == 0, qPrintable(describe("update-mime-database", r)));
    const QString globs = read_text(db + "/globs2");
    QVERIFY2(globs.contains(":application/x-shardlab-project:*.shardlab.json"), qPrintable(globs));
  }

  // Man pages generated from --help at build time name the programs' options.
  void manPagesDescribeTheOptions() {
    for (const QString& program : {QString("shardlab-cli"), QString("shardlab")}) {
      const Run r = run("gzip", {"-dc", root_ + "/usr/share/man/man1/" + program + ".1.gz"});
      QVERIFY2(r.exit_code == 0, qPrintable(describe("gzip -dc " + program + ".1.gz", r)));
      QVERIFY2(r.out.contains(".TH " + program.toUpper()), qPrintable(r.out.left(400)));
      QVERIFY2(r.out.contains("version"), qPrintable(r.out));
    }
    QVERIFY(run("gzip", {"-dc", root_ + "/usr/share/man/man1/shardlab-cli.1.gz"}).out.contains("train"));
  }

  // From the unpacked root: --version names the build options and the CPU code path, and the
  // command line trains a shipped example for a few steps.
  void cliTrainsAShippedExample() {
    const QString cli = root_ + "/usr/bin/shardlab-cli";
    const Run v = run(cli, {"--version"});
    QVERIFY2(v.exit_code == 0, qPrintable(describe("shardlab-cli --version", v)));
    QVERIFY2(v.out.startsWith("Shardlab " + kVersion + "\n") && v.out.contains("built with: CUDA") &&
                 v.out.contains("GEMM kernel"),
             qPrintable(v.out));
    QTemporaryDir work;
    // dot-relu-dot: SPMD on its 2x4 mesh of virtual devices, and quick.
    const Run t = run(cli, {"train", root_ + "/usr/share/shardlab/projects/dot-relu-dot.shardlab.json", "--steps", "3",
                            "--threads", "2", "--log", work.path() + "/run.jsonl"});
    QVERIFY2(t.exit_code == 0, qPrintable(describe("shardlab-cli train", t)));
    QCOMPARE(read_text(work.path() + "/run.jsonl").count("{\"event\":\"step\""), 3);
  }

  // shardlab-cuda holds the CUDA backend module where the programs look for it, exporting only its
  // two entry points; it declares cuBLASLt, which it opens at run time, and the system libraries
  // come from dpkg-shlibdeps. With it, the command line has the CUDA backend (here without a GPU:
  // one line saying so); without it, --backend cuda says which package to install.
  void cudaPackageAddsTheCudaBackend() {
    if (!QFileInfo::exists(kCudaModule))
      QSKIP("this build has no CUDA backend (no CUDA toolkit at configure time), so no shardlab-cuda package");
    const QString depends = field("shardlab-cuda", "Depends");
    qInfo("shardlab-cuda Depends: %s; Recommends: %s", qPrintable(depends), qPrintable(field("shardlab-cuda", "Recommends")));
    for (const QString& dep : {"shardlab-cli (= " + kVersion + ")", QString("libcublas-"), QString("libc6"), QString("libstdc++6")})
      QVERIFY2(depends.contains(dep), qPrintable(dep + " missing from: " + depends));
    // The CUDA runtime is inside the module and NCCL is opened at run time: neither is a dependency.
    for (const char* not_needed : {"qt", "cudart", "nccl"})
      QVERIFY2(!depends.contains(not_needed, Qt::CaseInsensitive), qPrintable(depends));

    const QString module = root_ + "/usr/lib/shardlab/backends/libshardlab_backend_cuda.so";
    const Run nm = run("nm", {"-D", "--defined-only", module});
    QVERIFY2(nm.exit_code == 0, qPrintable(describe("nm -D " + module, nm)));
    QStringList exported;
    for (const QString& line : nm.out.split('\n', Qt::SkipEmptyParts)) {
      const QStringList f = line.split(' ', Qt::SkipEmptyParts);
      if (f.size() == 3 && f[1] == "T") exported << f[2];
    }
    exported.sort();
    QCOMPARE(exported, QStringList({"shardlab_backend_module_build", "shardlab_backend_module_make"}));

    QTemporaryDir work;
    const QString project = root_ + "/usr/share/shardlab/projects/dot-relu-dot.shardlab.json";
    const QStringList train{"train", project, "--steps", "2", "--backend", "cuda", "--log", work.path() + "/run.jsonl"};
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("SHARDLAB_BACKEND_DIR");
    const Run with = run(root_ + "/usr/bin/shardlab-cli", {"--version"}, env);
    QVERIFY2(with.out.contains("built with: CUDA yes"), qPrintable(with.all()));
    const Run t = run(root_ + "/usr/bin/shardlab-cli", train, env);
    if (t.exit_code != 0) {  // no GPU here: the module's own reason, in one line
      QVERIFY2(t.exit_code == 1 && t.err.trimmed().count('\n') == 0 && t.err.contains("no CUDA GPU found: "),
               qPrintable(describe("shardlab-cli train --backend cuda", t)));
    }

    const Run without = run(cli_root_ + "/usr/bin/shardlab-cli", {"--version"}, env);
    QVERIFY2(without.out.contains("built with: CUDA no"), qPrintable(without.all()));
    const Run refused = run(cli_root_ + "/usr/bin/shardlab-cli", train, env);
    QVERIFY2(refused.exit_code == 1 && refused.err.contains("the CUDA backend is not installed") &&
                 refused.err.contains(cli_root_ + "/usr/lib/shardlab/backends") && refused.err.contains("install the shardlab-cuda package"),
             qPrintable(describe("shardlab-cli train --backend cuda without shardlab-cuda", refused)));
  }

  // From the unpacked root, on a real (virtual) X server: the desktop application opens a shipped
  // example and draws its window.
  void desktopApplicationDrawsItsWindow() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM");  // the xcb platform, as on a desktop
    env.insert("HOME", tmp_.path());  // settings and recent files stay out of the user's
    const QString shot = tmp_.path() + "/window.png";
    const Run r = run("xvfb-run", {"-a", root_ + "/usr/bin/shardlab", "--screenshot", shot,
                                   root_ + "/usr/share/shardlab/projects/dot-relu-dot.shardlab.json"},
                      env);
    QVERIFY2(r.exit_code == 0, qPrintable(describe("xvfb-run shardlab --screenshot", r)));
    const QImage image(shot);
    QVERIFY2(image.width() >= 400 && image.height() >= 300, qPrintable(QString("screenshot %1x%2").arg(image.width()).arg(image.height())));
  }

  // The packaged programs start with the baseline CPU check (simulated missing feature).
  void packagedProgramsRefuseOldCpusWithOneLine() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDLAB_TEST_CPU_LACKS", "avx2");
    for (const QString& program : {QString("shardlab-cli"), QString("shardlab")}) {
      const Run r = run(root_ + "/usr/bin/" + program, {"--version"}, env);
      QCOMPARE(r.exit_code, 1);
      QVERIFY2(r.out.isEmpty() && r.err.startsWith(program + ": this build needs an x86-64-v3 CPU") &&
                   r.err.endsWith("this CPU lacks AVX2\n"),
               qPrintable(r.all()));
    }
  }

  // The packaged (stripped) programs are the build's code: their .text is the same bytes. In that
  // code, AVX-512 instructions appear only in the AVX-512 GEMM kernel (entered after a CPU check),
  // and the start-up CPU check holds nothing beyond baseline x86-64.
  void packagedCodeKeepsToTheBaseline() {
    for (const QString& program : {QString("shardlab-cli"), QString("shardlab")}) {
      const QString built = kBuild + "/app/" + program, packaged = root_ + "/usr/bin/" + program;
      for (const QString& which : {built, packaged}) {
        const Run r = run("objcopy", {"--dump-section", ".text=" + tmp_.path() + "/" + QFileInfo(which).fileName() +
                                                            (which == built ? ".built" : ".packaged") + ".text",
                                      which, tmp_.path() + "/objcopy.out"});
        QVERIFY2(r.exit_code == 0, qPrintable(describe("objcopy " + which, r)));
      }
      QFile a(tmp_.path() + "/" + program + ".built.text"), b(tmp_.path() + "/" + program + ".packaged.text");
      QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
      QVERIFY2(a.size() > 0 && a.readAll() == b.readAll(), qPrintable(program + ": the packaged code is not the build's"));

      int avx512_functions = 0, check_functions = 0;
      for (const DisassembledFunction& f : disassemble(built)) {
        if (f.name.contains("refuse_cpus_older_than_x86_64_v3") || f.name.contains("pretend_missing")) {
          ++check_functions;
          const QRegularExpressionMatch hit = beyond_baseline_instruction().match(f.code);
          QVERIFY2(!hit.hasMatch(), qPrintable(program + ": the CPU check " + f.name + " holds " + hit.captured(0)));
        }
        if (f.name.contains("avx512", Qt::CaseInsensitive)) {
          ++avx512_functions;
          continue;
        }
        const QRegularExpressionMatch hit = avx512_instruction().match(f.code);
        QVERIFY2(!hit.hasMatch(), qPrintable(program + ": " + f.name + " holds AVX-512 code: " + hit.captured(0)));
      }
      QVERIFY2(check_functions >= 1, qPrintable(program + ": the CPU check is not linked in"));
      QVERIFY2(avx512_functions >= 1, qPrintable(program + ": no AVX-512 kernel found, so the check above proves nothing"));
    }
  }
};

QTEST_GUILESS_MAIN(TestPackage)
#include "test_package.moc"
