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
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / ".." / ".." / "projects" / "fashion-mlp.shardlab.json").lexically_normal().string();
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
  QApplication app(argc, argv);
  QApplication::setApplicationName("Shardlab");
  QApplication::setOrganizationName("Shardlab");
  QApplication::setApplicationVersion(SHARDLAB_VERSION);

  QCommandLineParser cli;
  cli.setApplicationDescription("Build, shard, train and inspect neural networks.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("project", "a *.shardlab.json project to open");
  QCommandLineOption screenshot("screenshot", "render the window to FILE and exit (for documentation)", "FILE");
  cli.addOption(screenshot);
  cli.process(app);

  shardlab::ui::MainWindow window;
  const QStringList args = cli.positionalArguments();
  if (!args.isEmpty()) window.openFile(args.first());
  else window.openDefaultProject();
  window.show();
  if (cli.isSet(screenshot)) return window.saveScreenshot(cli.value(screenshot)) ? 0 : 1;
  return app.exec();
}
