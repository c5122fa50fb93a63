// `shardlab [PROJECT]`: the desktop application. Without a project it opens the default example.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>

#include "ui/main_window.h"

int main(int argc, char** argv) {
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
