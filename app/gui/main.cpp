// `shardlab [PROJECT]`: the desktop application. Without a project it opens the default example.
// Where there is no display it says so and trains the project with shardlab-cli instead, so the
// README's first command does something useful on a headless machine too.
#include <unistd.h>

#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/api/build_info.h"
#include "ui/main_window.h"

namespace {

bool has_display() {
  if (std::getenv("QT_QPA_PLATFORM")) return true;  // offscreen, vnc, ...: the user chose a platform
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

// The project named on the command line (the first argument not starting with '-'), or the default.
std::string project_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  // Installed (bin/../share/shardlab/projects) or in the build tree (build/app/../../projects).
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  const auto installed = (bin / ".." / "share" / "shardlab" / "projects" / "fashion-mlp.shardlab.json").lexically_normal();
  if (std::filesystem::exists(installed, ec)) return installed.string();
  return (bin / ".." / ".." / "projects" / "fashion-mlp.shardlab.json").lexically_normal().string();
}

int train_headless(int argc, char** argv) {
  std::error_code ec;
  const auto cli = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "shardlab-cli";
  const std::string project = project_argument(argc, argv);
  std::fprintf(stderr, "shardlab: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window; training %s with %s instead\n",
               project.c_str(), cli.c_str());
  std::fflush(stderr);
  execl(cli.c_str(), "shardlab-cli", "train", project.c_str(), static_cast<char*>(nullptr));
  std::perror(("shardlab: cannot run " + cli.string()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool info_only = false;  // --help and --version need no display
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    info_only |= a == "--help" || a == "-h" || a == "--version" || a == "-v";
  }
  if (!info_only && !has_display()) return train_headless(argc, argv);
  // --help and --version print and exit; without a display they run on the offscreen platform
  // (help2man runs them so at build time).
  if (info_only && !has_display()) setenv("QT_QPA_PLATFORM", "offscreen", 0);
  QApplication app(argc, argv);
  QApplication::setApplicationName("Shardlab");
  QApplication::setOrganizationName("Shardlab");
  QApplication::setApplicationVersion(SHARDLAB_VERSION);

  QCommandLineParser cli;
  cli.setApplicationDescription("Build, shard, train and inspect neural networks.");
  cli.addHelpOption();
  // Like shardlab-cli --version: the version, build options and the CPU code path in use.
  QCommandLineOption version({"v", "version"}, "Displays the version, build options and CPU code path.");
  cli.addOption(version);
  cli.addPositionalArgument("project", "a *.shardlab.json project to open");
  QCommandLineOption screenshot("screenshot", "render the window to FILE and exit (for documentation)", "FILE");
  cli.addOption(screenshot);
  QCommandLineOption size("size", "open the window WIDTHxHEIGHT pixels large, e.g. 1920x1080", "WxH");
  cli.addOption(size);
  QCommandLineOption attach("attach", "follow the run that writes LOG (its --log file, or a folder holding it), as "
                            "File > Attach to Run does", "LOG");
  cli.addOption(attach);
  cli.process(app);
  if (cli.isSet(version)) {
    std::fputs(shardlab::api::build_info_text().c_str(), stdout);
    return 0;
  }

  shardlab::ui::MainWindow window;
  if (cli.isSet(size)) {
    const QStringList wh = cli.value(size).split('x');
    bool w_ok = false, h_ok = false;
    const int w = wh.size() == 2 ? wh[0].toInt(&w_ok) : 0, h = wh.size() == 2 ? wh[1].toInt(&h_ok) : 0;
    if (!w_ok || !h_ok || w < 320 || h < 240) {
      std::fprintf(stderr, "shardlab: --size '%s': expected WIDTHxHEIGHT of at least 320x240, e.g. 1920x1080\n",
                   qPrintable(cli.value(size)));
      return 1;
    }
    window.resize(w, h);
  }
  const QStringList args = cli.positionalArguments();
  if (!args.isEmpty()) window.openFile(args.first());
  else window.openDefaultProject();
  window.show();
  if (cli.isSet(attach)) window.attachToRun(cli.value(attach));
  if (cli.isSet(screenshot)) return window.saveScreenshot(cli.value(screenshot)) ? 0 : 1;
  return app.exec();
}
