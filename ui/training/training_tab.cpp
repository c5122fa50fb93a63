#include "ui/training/training_tab.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QStyle>
#include <QTime>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "ui/document/project_document.h"
#include "ui/training/chart_grid.h"
#include "ui/training/cluster_command_dialog.h"
#include "ui/training/hyperparameter_form.h"
#include "ui/training/line_chart.h"
#include "ui/training/process_command.h"
#include "ui/training/process_run.h"
#include "ui/training/run_outputs_form.h"
#include "ui/training/training_run.h"

namespace shardlab::ui {

namespace {

constexpr size_t kEtaWindow = 20;  // the ETA uses the mean of this many recent steps
constexpr int kLogLines = 20;      // about this many step lines per run in the log
constexpr int kRefreshMs = 100;    // the progress bar and status line redraw at most this often

QString clockText(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("--:--");
  const qint64 t = qint64(seconds + 0.5);
  if (t >= 3600)
    return QStringLiteral("%1:%2:%3").arg(t / 3600).arg(t / 60 % 60, 2, 10, QChar('0')).arg(t % 60, 2, 10, QChar('0'));
  return QStringLiteral("%1:%2").arg(t / 60).arg(t % 60, 2, 10, QChar('0'));
}

QString bytesText(double bytes) { return QString::fromStdString(runtime::format_bytes(bytes)); }

QString number(double v, int precision = 4) { return QString::number(v, 'g', precision); }

// A project as shardlab-cli trains it from its file with the options `o` on its command line:
// without what those options override (batch size, microbatches and their pipeline schedule, seed;
// steps and epochs when steps are given; checkpoints when a folder is) and without the editor's
// layout, which no run reads.
graph::Json trainedPart(const project::Project& p, const runtime::TrainOptions& o) {
  graph::Json j = graph::Json::parse(project::to_json_string(p));
  j.erase("editor");
  if (auto t = j.find("training"); t != j.end() && t->is_object()) {
    for (const char* key : {"batch_size", "accumulate", "pipeline_schedule", "seed", "epochs"}) t->erase(key);
    if (o.steps > 0) t->erase("steps");
    if (!o.checkpoint_dir.empty()) t->erase("checkpoint");
  }
  return j;
}

}  // namespace

TrainingTab::TrainingTab(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  run_ = new TrainingRun(this);
  processRun_ = new ProcessRun(this);

  // Left: settings and controls.
  form_ = new HyperparameterForm(this);
  auto* settingsBox = new QGroupBox(tr("Run settings"), this);
  auto* settingsLayout = new QVBoxLayout(settingsBox);
  settingsLayout->addWidget(form_);
  outputs_ = new RunOutputsForm(this);
  auto* outputsBox = new QGroupBox(tr("Trace and checkpoints"), this);
  auto* outputsLayout = new QVBoxLayout(outputsBox);
  outputsLayout->addWidget(outputs_);

  startButton_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Start"), this);
  startButton_->setObjectName("start");
  startButton_->setToolTip(tr("Train a copy of the project with these settings"));
  pauseButton_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPause), tr("Pause"), this);
  pauseButton_->setObjectName("pause");
  pauseButton_->setToolTip(tr("Hold the run between two steps, or let it go on"));
  stopButton_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Stop"), this);
  stopButton_->setObjectName("stop");
  stopButton_->setToolTip(tr("Cancel the run after the current step"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(startButton_);
  buttons->addWidget(pauseButton_);
  buttons->addWidget(stopButton_);
  clusterButton_ = new QPushButton(tr("Command Line for a &Cluster…"), this);
  clusterButton_->setObjectName("clusterCommand");
  clusterButton_->setToolTip(
      tr("The mpirun line and the Slurm batch script that train the saved project with these settings on several machines"));

  error_ = new QLabel(this);
  error_->setObjectName("error");
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setStyleSheet(QStringLiteral("QLabel { color: #b00020; }"));
  error_->hide();

  // Start, Pause and Stop first, with why a start was refused right under them: in a short panel
  // they stay in view, and the settings below scroll.
  auto* left = new QVBoxLayout;
  left->addLayout(buttons);
  left->addWidget(error_);
  left->addWidget(settingsBox);
  left->addWidget(outputsBox);
  left->addWidget(clusterButton_);
  left->addStretch(1);

  // Right: progress, charts and the log.
  progress_ = new QProgressBar(this);
  progress_->setObjectName("progress");
  showNotStarted();
  status_ = new QLabel(tr("Idle"), this);
  status_->setObjectName("status");
  // Its text changes every refresh; it must not widen the window's layout each time. In a narrow
  // window (1024 pixels leave this column about 240) it wraps rather than cut a sentence short.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setWordWrap(true);
  lossScale_ = new QLabel(this);
  lossScale_->setObjectName("lossScale");
  lossScale_->setToolTip(tr("Dynamic loss scaling: a step whose float16 gradients overflow applies no update and halves the "
                            "scale; a run of finite steps doubles it again"));
  lossScale_->hide();

  lossChart_ = new LineChart(tr("Loss"), this);
  lossChart_->setObjectName("lossChart");
  trainLoss_ = lossChart_->addSeries(tr("train"), QColor(31, 119, 180));
  evalLoss_ = lossChart_->addSeries(tr("eval"), QColor(214, 39, 40), true);
  // A skipped step's loss, marked where it stands (only float16 runs have any).
  skippedSteps_ = lossChart_->addSeries(tr("skipped"), QColor(127, 127, 127), true, false);
  accuracyChart_ = new LineChart(tr("Accuracy"), this);
  accuracyChart_->setObjectName("accuracyChart");
  trainAcc_ = accuracyChart_->addSeries(tr("train"), QColor(31, 119, 180));
  evalAcc_ = accuracyChart_->addSeries(tr("eval"), QColor(214, 39, 40), true);
  accuracyChart_->setYLimits(0, 1);
  stepTimeChart_ = new LineChart(tr("Step time (ms)"), this);
  stepTimeChart_->setObjectName("stepTimeChart");
  computeMs_ = stepTimeChart_->addSeries(tr("step"), QColor(44, 160, 44));
  waitMs_ = stepTimeChart_->addSeries(tr("data wait"), QColor(255, 127, 14));
  stepTimeChart_->setIncludeZero(true);
  throughputChart_ = new LineChart(tr("Throughput (examples/s)"), this);
  throughputChart_->setObjectName("throughputChart");
  examples_ = throughputChart_->addSeries(tr("examples/s"), QColor(148, 103, 189));
  throughputChart_->setIncludeZero(true);
  auto* charts = new ChartGrid(this);
  charts->setObjectName("charts");
  for (LineChart* c : {lossChart_, accuracyChart_, stepTimeChart_, throughputChart_}) {
    c->setXLabel(tr("step"));
    c->setIntegerX(true);
    charts->addChart(c);
  }

  log_ = new QPlainTextEdit(this);
  log_->setObjectName("runLog");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setPlaceholderText(tr("The run's log: devices, mesh, memory plan, evaluations, the end of each run."));
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(charts);
  split->addWidget(log_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);

  auto* right = new QVBoxLayout;
  right->addWidget(progress_);
  right->addWidget(status_);
  right->addWidget(lossScale_);
  right->addWidget(split, 1);

  auto* layout = new QHBoxLayout(this);
  layout->addLayout(left, 0);
  layout->addLayout(right, 1);

  refresh_.setSingleShot(true);
  refresh_.setInterval(kRefreshMs);
  connect(&refresh_, &QTimer::timeout, this, &TrainingTab::refreshProgress);

  connect(startButton_, &QPushButton::clicked, this, &TrainingTab::start);
  connect(pauseButton_, &QPushButton::clicked, this, &TrainingTab::togglePause);
  connect(stopButton_, &QPushButton::clicked, this, &TrainingTab::stop);
  connect(clusterButton_, &QPushButton::clicked, this, &TrainingTab::showClusterCommand);
  connect(run_, &TrainingRun::prepared, this, &TrainingTab::onPrepared);
  connect(run_, &TrainingRun::started, this, &TrainingTab::onStarted);
  connect(run_, &TrainingRun::saved, this, &TrainingTab::onSaved);
  connect(run_, &TrainingRun::stepped, this, &TrainingTab::onStep);
  connect(run_, &TrainingRun::evaluated, this, &TrainingTab::onEval);
  connect(run_, &TrainingRun::finished, this, &TrainingTab::onFinished);
  connect(run_, &TrainingRun::failed, this, &TrainingTab::onFailed);
  // A run over processes reports the same events, read from its log.
  connect(processRun_, &ProcessRun::started, this, &TrainingTab::onStarted);
  connect(processRun_, &ProcessRun::stepped, this, &TrainingTab::onStep);
  connect(processRun_, &ProcessRun::evaluated, this, &TrainingTab::onEval);
  connect(processRun_, &ProcessRun::saved, this, &TrainingTab::onSaved);
  connect(processRun_, &ProcessRun::finished, this, &TrainingTab::onFinished);
  connect(processRun_, &ProcessRun::finished, this, [this] {
    const QString trace = processLogDir_ ? processLogDir_->filePath(QStringLiteral("trace.json")) : attachedTrace_;
    if (!trace.isEmpty() && QFileInfo::exists(trace)) emit traceFileWritten(trace);
  });
  connect(processRun_, &ProcessRun::failed, this, &TrainingTab::onFailed);
  connect(processRun_, &ProcessRun::output, this, [this](const QString& line) { log(line); });
  // A followed run gone quiet may have ended where no "end" could be written (its job killed with
  // its node): say so, and keep following, since a long step or save is quiet too.
  // Short enough for the status line of a 1024-pixel window; the whole account in its tooltip.
  connect(processRun_, &ProcessRun::quiet, this, [this](double seconds) {
    quietText_ = began_ ? tr("No word for %1 (last: step %2 of %3); it may have stopped, still following")
                              .arg(clockText(seconds))
                              .arg(last_.step)
                              .arg(info_.total_steps)
                        : tr("Nothing in the log for %1: the job may be queued or not started; still waiting").arg(clockText(seconds));
    const QString why = tr("%1 has not grown for %2. A job killed with its node writes no end record; a long step, a checkpoint "
                           "save or a queued job is quiet too. Shardlab keeps reading it.")
                            .arg(processRun_->logFile(), clockText(seconds));
    log(quietText_ + ". " + why);
    status_->setText(quietText_);
    status_->setToolTip(why);
  });
  connect(processRun_, &ProcessRun::heard, this, [this] {
    log(tr("The run's log grows again."));
    quietText_.clear();
    status_->setToolTip(QString());
    updateStatus();
  });
  connect(processRun_, &ProcessRun::restarted, this, [this] {
    log(tr("The run's log started over (the job restarted, or the file was replaced): reading it from its start."));
    began_ = false;
    last_ = {};
    recentStepSeconds_.clear();
    resetCharts();
  });
  connect(outputs_, &RunOutputsForm::checkpointDirChanged, this, &TrainingTab::checkpointDirChanged);
  connect(doc_, &ProjectDocument::opened, this, &TrainingTab::projectOpened);
  connect(doc_, &ProjectDocument::changed, this, &TrainingTab::projectChanged);
  // A relative checkpoint folder is the project file's: Save As elsewhere moves it.
  connect(doc_, &ProjectDocument::pathChanged, this, &TrainingTab::showRunSettings);
  const std::pair<QSpinBox*, QString> kept[] = {{form_->stepsBox(), "steps"},         {form_->epochsBox(), "epochs"},
                                                {form_->batchBox(), "batch_size"},    {form_->seedBox(), "seed"},
                                                {form_->accumulateBox(), "accumulate"},
                                                {outputs_->saveEveryBox(), "save_every"}, {outputs_->keepBox(), "keep"}};
  for (const auto& [box, field] : kept)
    connect(box, &QSpinBox::valueChanged, this, [this, field] { storeRunSettings(field); });
  connect(form_->pipelineScheduleBox(), &QComboBox::currentIndexChanged, this,
          [this] { storeRunSettings("pipeline_schedule"); });
  connect(outputs_, &RunOutputsForm::checkpointDirChanged, this, [this] { storeRunSettings("checkpoint"); });

  cliProgram_ = QCoreApplication::applicationDirPath() + QStringLiteral("/shardlab-cli");
  setMpirunProgram(QStandardPaths::findExecutable(QStringLiteral("mpirun")));
  projectOpened();
}

TrainingTab::~TrainingTab() {
  // Closing the window mid-run: cancel and wait for the worker (at most about one step), or end
  // the processes (SIGTERM, then SIGKILL after a few seconds).
  processRun_->shutdown();
  run_->shutdown();
}

bool TrainingTab::isRunning() const { return running(); }
bool TrainingTab::running() const { return run_->isRunning() || processRun_->isRunning(); }
bool TrainingTab::stopping() const { return run_->isStopping() || processRun_->isStopping(); }

void TrainingTab::setMpirunProgram(const QString& mpirun) {
  mpirunProgram_ = mpirun;
  form_->setMpirunFound(!mpirun.isEmpty());
}

QString TrainingTab::processLogFile() const { return processLogDir_ ? processRun_->logFile() : QString(); }
bool TrainingTab::isPaused() const { return run_->isPaused(); }
QString TrainingTab::errorText() const { return error_->text(); }

int TrainingTab::meshDevices() const {
  const api::Design& d = doc_->design();
  if (d.sharding_ok) return int(d.sharding.mesh.device_count());
  try {
    return int(sharding::project_mesh(doc_->project()).device_count());
  } catch (const std::exception&) {
    return 1;  // the mesh is broken; the design errors say how, and start() refuses
  }
}

void TrainingTab::projectOpened() {
  // A run belongs to the project it was started from.
  if (running()) {
    log(tr("Another project was opened: stopping the run."));
    run_->stop();
    processRun_->stop();
  }
  // Nothing of the last project's run stays: not its charts, figures or log, and not its checkpoint
  // folder, which the next run, of another model, must not write into.
  resetCharts();
  info_ = {};
  last_ = {};
  recentStepSeconds_.clear();
  began_ = false;
  log_->clear();
  error_->clear();
  error_->hide();
  status_->setText(tr("Idle"));
  showNotStarted();
  showing_ = true;
  form_->loadDefaults(doc_->project(), meshDevices());
  showing_ = false;
  // The project's own checkpoint folder, or none: never the last project's.
  showRunSettings();
  updateControls();
}

void TrainingTab::showRunSettings() {
  const project::Project& p = doc_->project();
  showing_ = true;
  outputs_->setBaseDir(doc_->path().isEmpty() ? QString() : QFileInfo(doc_->path()).absolutePath());
  form_->showTraining(p.training);
  const runtime::TrainOptions defaults;
  if (const auto& c = p.training.checkpoint)
    outputs_->showCheckpoint(QDir::cleanPath(QString::fromStdString(project::checkpoint_dir(p).string())),
                             int(std::min<int64_t>(c->save_every, INT_MAX)), int(std::min<int64_t>(c->keep, INT_MAX)));
  else
    outputs_->showCheckpoint(QString(), 0, defaults.keep);
  showing_ = false;
}

void TrainingTab::storeRunSettings(const QString& field) {
  if (showing_ || running()) return;
  const project::Project& now = doc_->project();
  const int steps = form_->stepsBox()->value(), epochs = form_->epochsBox()->value();
  const int batch = form_->batchBox()->value(), seed = form_->seedBox()->value();
  const int accumulate = form_->accumulateBox()->value();
  const std::string schedule = form_->pipelineSchedule();
  // The folder as the project writes it: relative to the project file when it lies beside or
  // below it (the project and its runs move together), absolute otherwise.
  const QString dir = outputs_->checkpointDir();
  QString written = dir;
  if (!dir.isEmpty() && !doc_->path().isEmpty()) {
    const QString relative = QFileInfo(doc_->path()).absoluteDir().relativeFilePath(dir);
    if (!relative.startsWith(QStringLiteral(".."))) written = relative;
  }
  std::optional<project::CheckpointSpec> checkpoint;
  if (!dir.isEmpty()) checkpoint = project::CheckpointSpec{written.toStdString(), outputs_->saveEveryBox()->value(), outputs_->keepBox()->value()};
  const auto& had = now.training.checkpoint;
  const bool sameCheckpoint = checkpoint.has_value() == had.has_value() &&
                              (!had || (QDir::cleanPath(QString::fromStdString(project::checkpoint_dir(now).string())) == dir &&
                                        had->save_every == checkpoint->save_every && had->keep == checkpoint->keep));
  // Compared as the boxes show the project's values: epochs 0 (steps decide) shows as 1 and is
  // not a change until someone changes it.
  auto differs = [](QSpinBox* box, int64_t kept) {
    return box->value() != std::clamp<int64_t>(kept, box->minimum(), box->maximum());
  };
  const bool stepsChanged = differs(form_->stepsBox(), now.training.steps);
  // Steps 0 trains by epochs, which must then be above 0 in the file too.
  const bool epochsChanged = differs(form_->epochsBox(), now.training.epochs) || (steps == 0 && now.training.epochs == 0);
  const bool batchChanged = differs(form_->batchBox(), now.training.batch_size);
  const bool seedChanged = differs(form_->seedBox(), int64_t(std::min<uint64_t>(now.training.seed, INT_MAX)));
  const bool accumulateChanged = differs(form_->accumulateBox(), now.training.accumulate);
  const bool scheduleChanged = schedule != now.training.pipeline_schedule;
  if (!stepsChanged && !epochsChanged && !batchChanged && !seedChanged && !accumulateChanged && !scheduleChanged &&
      sameCheckpoint)
    return;
  // Consecutive changes to one field merge into one undo step, as typing "250" is one edit.
  doc_->edit(
      tr("Change training %1").arg(QString(field).replace('_', ' ')),
      [&](project::Project& p) {
        graph::Json& t = p.training_json;
        if (!t.is_object()) t = graph::Json::object();
        // Only what differs is written: a file that said nothing of a default keeps saying nothing.
        if (stepsChanged) t["steps"] = steps;
        if (epochsChanged) t["epochs"] = epochs;
        if (batchChanged) t["batch_size"] = batch;
        if (seedChanged) t["seed"] = seed;
        if (accumulateChanged) t["accumulate"] = accumulate;
        if (scheduleChanged) t["pipeline_schedule"] = schedule;
        if (!sameCheckpoint) {
          if (checkpoint)
            t["checkpoint"] = {{"dir", checkpoint->dir}, {"save_every", checkpoint->save_every}, {"keep", checkpoint->keep}};
          else
            t.erase("checkpoint");
        }
      },
      QStringLiteral("training.") + field);
}

void TrainingTab::showNotStarted() {
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("Not started"));
}

void TrainingTab::projectChanged() {
  form_->setMeshDevices(meshDevices());
  showRunSettings();  // an undo or redo of a training setting
}

void TrainingTab::start() { launch(QString()); }

void TrainingTab::resumeFrom(const QString& stepDir) {
  if (running()) {
    refuse(tr("Resume: stop the current run first"));
    return;
  }
  const QFileInfo info(stepDir);
  if (stepDir.isEmpty() || !info.isDir()) {
    refuse(tr("Resume: '%1' is not a checkpoint directory (a step_NNNNNN folder)").arg(stepDir));
    return;
  }
  // Further checkpoints of the continued run go beside the one it starts from.
  if (outputs_->checkpointDir().isEmpty()) outputs_->setCheckpointDir(info.absolutePath());
  launch(info.absoluteFilePath());
}

// A fresh run into a checkpoint folder that already holds steps: continue that run, or move its
// steps aside (old-run-<id>/) and start over; never mix two runs' steps or delete any.
bool TrainingTab::askAboutExistingRun(runtime::TrainOptions& options) {
  if (options.checkpoint_dir.empty() || options.continue_run || options.start_over) return true;
  checkpoint::Occupant here;
  try {
    here = checkpoint::occupant(options.checkpoint_dir);
  } catch (const std::exception&) {
    return true;  // an unreadable run.json: the trainer refuses with the reason; nothing to ask here
  }
  if (here.steps.empty()) return true;
  QMessageBox box(QMessageBox::Question, tr("Checkpoint Folder In Use"),
                  tr("%1 already holds checkpoints of %2; the newest is step %3.")
                      .arg(QString::fromStdString(options.checkpoint_dir), QString::fromStdString(here.describe()))
                      .arg(here.steps.back().step),
                  QMessageBox::NoButton, this);
  box.setObjectName("existingRun");
  box.setInformativeText(tr("Continue that run from its newest step, or move its checkpoints into an old-run "
                            "folder beside them and start a new run. Nothing is deleted."));
  QPushButton* cont = box.addButton(tr("Continue That Run"), QMessageBox::AcceptRole);
  cont->setObjectName("continueRun");
  QPushButton* over = box.addButton(tr("Start Over"), QMessageBox::DestructiveRole);
  over->setObjectName("startOver");
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(cont);
  box.exec();
  if (box.clickedButton() == cont) options.continue_run = true;
  else if (box.clickedButton() == over) options.start_over = true;
  else {
    log(tr("Not started: %1 already holds another run's checkpoints").arg(QString::fromStdString(options.checkpoint_dir)));
    return false;
  }
  return true;
}

bool TrainingTab::fileHoldsRun(const runtime::TrainOptions& o) const {
  if (!doc_->isModified()) return true;
  try {
    const project::Project saved = project::load_project(doc_->path().toStdString(), project::Validation::Structure);
    return trainedPart(saved, o) == trainedPart(doc_->project(), o);
  } catch (const std::exception&) {
    return false;  // unreadable now: not what the window shows
  }
}

bool TrainingTab::processCommand(const RunSettings& settings, TrainCommand* out, QString* problem) const {
  if (doc_->path().isEmpty()) {
    *problem = tr("Processes: save the project to a file first (File > Save As); every process reads it from there");
    return false;
  }
  TrainCommand c;
  c.project = QFileInfo(doc_->path()).absoluteFilePath();
  try {
    const project::Project& p = doc_->project();
    const sharding::Mesh mesh = sharding::project_mesh(p);
    if (mesh.device_count() > 1) c.mesh = QString::fromStdString(mesh.str());
    c.rules = QString::fromStdString(sharding::rules_str(sharding::project_rules(p)));
  } catch (const std::exception& e) {
    *problem = tr("Processes: %1").arg(QString::fromStdString(e.what()));
    return false;
  }
  c.options = settings.options;
  c.options.learning_rate = settings.learningRate;
  *out = c;
  return true;
}

void TrainingTab::launch(const QString& resumeDir) {
  if (running()) return;
  error_->clear();
  error_->hide();
  const api::Design& design = doc_->design();
  if (!design.ok()) {
    QStringList lines;
    for (const std::string& e : design.errors) lines << QStringLiteral("• ") + QString::fromStdString(e);
    refuse(tr("The project has errors; fix them before training:\n%1").arg(lines.join('\n')));
    return;
  }
  RunSettings settings;
  QString problem;
  if (!form_->settings(&settings, &problem) || !outputs_->apply(settings.options, &problem)) {
    refuse(problem);
    return;
  }
  settings.options.resume_from = resumeDir.toStdString();
  // The run trains a copy: the learning rate set here does not touch the document, but the run
  // records it (the Trainer lays its options over the project it saves with each checkpoint).
  settings.options.learning_rate = settings.learningRate;
  project::Project copy = doc_->project();
  QString meshText;
  qint64 devices = 1;
  try {
    // The engine's own check, here where it is instant rather than after building the trainer.
    const sharding::Mesh mesh = sharding::project_mesh(copy);
    sharding::check_device_count(mesh, settings.options.devices);
    devices = mesh.device_count();
    meshText = devices > 1 ? QString::fromStdString(mesh.str()) : tr("1 device");
  } catch (const std::exception& e) {
    refuse(tr("Virtual devices: %1").arg(QString::fromStdString(e.what())));
    return;
  }
  // Over processes, shardlab-cli trains the saved file: everything it needs is checked before
  // anything starts, and before the checkpoint question.
  const int processes = settings.processes;
  TrainCommand command;
  if (processes > 1) {
    if (mpirunProgram_.isEmpty()) {
      refuse(tr("Processes: mpirun was not found; install Open MPI (sudo apt install openmpi-bin)"));
      return;
    }
    if (!processCommand(settings, &command, &problem)) {
      refuse(problem);
      return;
    }
    // Run settings typed since the last save go on the command line; any other change would not.
    if (!fileHoldsRun(settings.options)) {
      refuse(tr("Processes: the project has unsaved changes; save it first (File > Save): every process reads the "
                "file, not this window"));
      return;
    }
    if (const QString p = processCountProblem(devices, processes); !p.isEmpty()) {
      refuse(p);
      return;
    }
    if (!QFileInfo(cliProgram_).isExecutable()) {
      refuse(tr("Processes: shardlab-cli was not found at %1 (it is installed beside shardlab)").arg(cliProgram_));
      return;
    }
  }
  if (resumeDir.isEmpty() && !askAboutExistingRun(settings.options)) return;
  command.options = settings.options;  // with the checkpoint answer
  QStringList mpirunArgs;
  if (processes > 1) {
    processLogDir_ = std::make_unique<QTemporaryDir>();
    if (!processLogDir_->isValid()) {
      refuse(tr("Processes: no temporary folder for the run's log: %1").arg(processLogDir_->errorString()));
      processLogDir_.reset();
      return;
    }
    // Every process's spans, merged by process 0 at the end, for the Trace tab.
    mpirunArgs = localMpirunArguments(processes, cliProgram_, command, processLogDir_->filePath(QStringLiteral("run.jsonl")),
                                      processLogDir_->filePath(QStringLiteral("trace.json")));
  }

  runProcesses_ = processes;
  attachedTrace_.clear();
  runName_ = QString::fromStdString(copy.display_name());
  runLabel_ = tr("run %1: %2").arg(++runCount_).arg(meshText);
  // A run over processes keeps its trace in process 0, not here: the Trace tab gets none.
  trace_ = processes > 1 ? nullptr : outputs_->makeTrace();
  settings.options.trace = trace_;
  runSavesCheckpoints_ = !settings.options.checkpoint_dir.empty();
  beginRun();
  const runtime::TrainOptions& o = settings.options;
  log(tr("Starting %1: %2, batch %3, learning rate %4, seed %5, %6, %7 device(s)%8")
          .arg(runName_, o.steps > 0 ? tr("%1 steps").arg(o.steps) : tr("%1 epoch(s)").arg(o.epochs))
          .arg(o.accumulate > 1 ? tr("%1 in %2 microbatches").arg(o.batch_size).arg(o.accumulate) : QString::number(o.batch_size))
          .arg(number(settings.learningRate))
          .arg(o.seed)
          .arg(o.threads > 0 ? tr("%1 thread(s)").arg(o.threads)
                             : (processes > 1 ? tr("the cores shared by the processes") : tr("all cores")))
          .arg(o.devices)
          .arg(processes > 1 ? tr(", over %1 processes").arg(processes) : QString()));
  if (const sharding::ShardingReport& r = design.sharding; !r.stages.empty())
    log(tr("Pipeline: %1 stages over mesh axis '%2', %3 schedule")
            .arg(qlonglong(r.stages.size()))
            .arg(QString::fromStdString(r.pipeline_axis), o.pipeline_schedule == "gpipe" ? tr("GPipe") : tr("1F1B")));
  if (!resumeDir.isEmpty()) log(tr("Continuing from the checkpoint in %1").arg(resumeDir));
  if (runSavesCheckpoints_)
    log(tr("Checkpoints go to %1 (%2, keeping %3)")
            .arg(QString::fromStdString(o.checkpoint_dir),
                 o.save_every > 0 ? tr("every %1 steps and at the end").arg(o.save_every) : tr("at the end"))
            .arg(o.keep));
  clock_.start();
  if (processes > 1) {
    log(tr("Running %1").arg(shellJoin(QStringList{mpirunProgram_} + mpirunArgs)));
    processRun_->start(mpirunProgram_, mpirunArgs, processLogDir_->filePath(QStringLiteral("run.jsonl")));
  } else {
    run_->start(std::move(copy), settings.options);
  }
  doc_->message("info", tr("Training %1 started").arg(runName_));
  updateControls();
  updateStatus();
  emit runStarted();
}

bool TrainingTab::attachToRun(const QString& path) {
  if (running()) {
    showError(tr("Attach to Run: a run is going; stop it first"));
    return false;
  }
  QString logFile = path;
  if (QFileInfo(path).isDir()) {
    // A run's folder: its one JSONL log (run.jsonl where there are several).
    const QDir dir(path);
    const QStringList logs = dir.entryList({QStringLiteral("*.jsonl")}, QDir::Files, QDir::Name);
    if (logs.contains(QStringLiteral("run.jsonl")))
      logFile = dir.filePath(QStringLiteral("run.jsonl"));
    else if (logs.size() == 1)
      logFile = dir.filePath(logs.first());
    else {
      showError(logs.isEmpty() ? tr("Attach to Run: %1 holds no .jsonl log (shardlab-cli train --log FILE writes one)").arg(path)
                               : tr("Attach to Run: %1 holds %2 logs; choose one of them").arg(path).arg(logs.size()));
      return false;
    }
  }
  error_->hide();
  runProcesses_ = 0;
  processLogDir_.reset();
  trace_ = nullptr;
  runSavesCheckpoints_ = false;
  beginRun();
  // A job's merged trace (--trace trace.json beside its log) opens in the Trace tab when it lands.
  attachedTrace_ = QFileInfo(logFile).dir().filePath(QStringLiteral("trace.json"));
  runName_ = QFileInfo(logFile).fileName();
  runLabel_ = tr("run %1: attached to %2").arg(++runCount_).arg(runName_);
  log(tr("Following the run that writes %1 (Stop stops following it; the run goes on)").arg(logFile));
  clock_.start();
  processRun_->attach(logFile);
  doc_->message("info", tr("Attached to the run logged in %1").arg(logFile));
  updateControls();
  updateStatus();
  emit runStarted();
  return true;
}

void TrainingTab::showClusterCommand() {
  RunSettings settings;
  QString problem;
  TrainCommand command;
  if (!form_->settings(&settings, &problem) || !outputs_->apply(settings.options, &problem) ||
      !processCommand(settings, &command, &problem)) {
    showError(tr("Command Line for a Cluster: %1").arg(problem));
    return;
  }
  // This machine's thread count means nothing on the cluster's nodes: there the CLI takes each
  // node's cores over its processes.
  command.options.threads = 0;
  QString note;
  if (!fileHoldsRun(command.options))
    note = tr("The project has unsaved changes: the command trains %1 as it was last saved. Save it first to train "
              "what you see.")
               .arg(QFileInfo(command.project).fileName());
  // Nodes to start with: the Processes field's count, else two where the mesh splits in two, else
  // one (a one-device mesh on two nodes only opened on an error).
  const int devices = meshDevices();
  const int nodes = settings.processes > 1 && devices % settings.processes == 0 ? settings.processes : devices % 2 == 0 ? 2 : 1;
  auto* dialog = new ClusterCommandDialog(command, devices, nodes, note, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

void TrainingTab::pause() {
  if (!run_->isRunning() || run_->isPaused() || run_->isStopping()) return;
  run_->pause();
  log(tr("Pausing after the current step (step %1 reported so far).").arg(last_.step));
  updateControls();
  updateStatus();
}

void TrainingTab::resume() {
  if (!run_->isPaused()) return;
  run_->resume();
  log(tr("Resumed."));
  updateControls();
  updateStatus();
}

void TrainingTab::togglePause() {
  if (run_->isPaused())
    resume();
  else
    pause();
}

void TrainingTab::stop() {
  if (processRun_->isAttached()) {
    detached_ = true;
    processRun_->stop();
    return;
  }
  if (processRun_->isRunning() && !processRun_->isStopping()) {
    processRun_->stop();
    log(tr("Stopping every process after the current step."));
    updateControls();
    updateStatus();
    return;
  }
  if (!run_->isRunning() || run_->isStopping()) return;
  run_->stop();
  log(tr("Stopping after the current step."));
  updateControls();
  updateStatus();
}

void TrainingTab::saveCheckpointNow() {
  if (processRun_->isRunning()) {
    // The processes take no requests while they run; only their save-every schedule.
    log(tr("Save checkpoint: a run over processes saves only on its schedule (Save every) and at the end."));
    return;
  }
  if (!run_->isRunning() || run_->isStopping()) {
    log(tr("Save checkpoint: no run is going."));
    return;
  }
  if (!runSavesCheckpoints_) {
    showError(tr("Save checkpoint: this run has no checkpoint directory (set Checkpoints before starting a run)"));
    return;
  }
  if (run_->requestSave())
    log(tr("A checkpoint will be saved after the current step."));
  else
    pendingSave_ = true;  // the trainer is still being built: ask once it starts
}

void TrainingTab::onPrepared(double peakFlops) { emit traceStarted(trace_, runLabel_, peakFlops); }

void TrainingTab::onSaved(qint64 step, const QString& dir) {
  log(tr("Checkpoint of step %1 saved in %2").arg(step).arg(dir));
  emit checkpointSaved(step, dir);
}

void TrainingTab::onStarted(const runtime::StartInfo& s) {
  began_ = true;
  if (runProcesses_ > 1 && s.processes != runProcesses_) {
    // A shardlab-cli built without MPI runs alone under mpirun: K copies of the whole run.
    showError(tr("shardlab-cli trained as %1 process(es), not as one run over %2: it was built without MPI. Stopping.")
                  .arg(s.processes)
                  .arg(runProcesses_));
    processRun_->stop();
  }
  if (pendingSave_) {
    pendingSave_ = false;
    run_->requestSave();
    log(tr("A checkpoint will be saved after the first step."));
  }
  info_ = s;
  log(tr("Ready to train after %1 s (trainer built, data loaded).").arg(clock_.elapsed() / 1000.0, 0, 'f', 1));
  clock_.restart();
  // A resumed run's bar starts where its checkpoint left off.
  progress_->setRange(0, int(std::min<int64_t>(s.total_steps, INT_MAX)));
  progress_->setValue(int(std::min<int64_t>(s.first_step, INT_MAX)));
  progress_->setFormat(tr("%v / %m steps"));
  logEvery_ = std::max<int64_t>(1, s.total_steps / kLogLines);
  // A run over processes, or one followed by its log, reports what an in-process run does (the
  // log carries every field of the start: api::start_record), and where its devices are.
  const bool overProcesses = s.processes > 1 || runProcesses_ > 1 || processRun_->isAttached();
  if (s.precision != "float32") log(tr("Precision: %1").arg(QString::fromStdString(s.precision)));
  log(tr("Training %1 steps (%2 per epoch), batch %3, %4 parameters, %5 CPU thread(s)%6; %7 train / %8 test examples")
          .arg(s.total_steps)
          .arg(s.steps_per_epoch)
          .arg(s.batch)
          .arg(s.param_count)
          .arg(s.threads)
          .arg(overProcesses ? tr(" per process") : QString())
          .arg(s.train_examples)
          .arg(s.test_examples));
  if (s.devices > 1 && s.processes > 1)
    log(tr("SPMD on %1 devices, mesh %2, over %3 processes (%4 device(s) each): %5 collectives per step, %6 moved per device "
           "per step")
            .arg(s.devices)
            .arg(QString::fromStdString(s.mesh))
            .arg(s.processes)
            .arg(s.devices / std::max(1, s.processes))
            .arg(s.collectives)
            .arg(bytesText(s.comm_bytes)));
  else if (s.devices > 1)
    log(tr("SPMD on %1 virtual devices, mesh %2: %3 collectives per step, %4 moved per device per step")
            .arg(s.devices)
            .arg(QString::fromStdString(s.mesh))
            .arg(s.collectives)
            .arg(bytesText(s.comm_bytes)));
  else
    log(tr("One device (no mesh to shard over)."));
  log(tr("Memory plan%1: parameters %2, optimizer state %3, step arena %4; total %5")
          .arg(s.devices > 1 ? tr(" per device") : QString())
          .arg(bytesText(s.param_bytes), bytesText(s.opt_state_bytes), bytesText(s.arena_bytes),
               bytesText(s.total_bytes)));
  updateStatus();
}

void TrainingTab::onStep(const runtime::StepEvent& e) {
  last_ = e;
  recentStepSeconds_.push_back(e.step_time_s + e.data_wait_s);
  if (recentStepSeconds_.size() > kEtaWindow) recentStepSeconds_.pop_front();
  const double x = double(e.step);
  lossChart_->append(trainLoss_, x, e.loss);
  if (std::isfinite(e.loss_scale)) {
    lossScale_->setText(tr("Loss scale %1 · %2 step(s) skipped (float16 gradients overflowed)").arg(e.loss_scale).arg(e.skipped_steps));
    lossScale_->show();
    if (e.skipped) {
      lossChart_->append(skippedSteps_, x, e.loss);
      log(tr("step %1: gradients overflowed: update skipped, loss scale now %2").arg(e.step).arg(e.loss_scale));
    }
  }
  if (std::isfinite(e.accuracy))
    accuracyChart_->append(trainAcc_, x, e.accuracy);
  else if (e.step == 1)
    accuracyChart_->setPlaceholder(tr("No accuracy: the loss is not a classification loss"));
  stepTimeChart_->append(computeMs_, x, e.step_time_s * 1000.0);
  stepTimeChart_->append(waitMs_, x, e.data_wait_s * 1000.0);
  throughputChart_->append(examples_, x, e.examples_per_s);
  // QProgressBar repaints synchronously on every new value: at thousands of steps a second
  // that alone would stall the UI, so the bar and the status line refresh on a timer.
  if (e.step == e.total_steps)
    refreshProgress();
  else if (!refresh_.isActive())
    refresh_.start();
  if (e.step == 1 || e.step % logEvery_ == 0 || e.step == e.total_steps) {
    QString line =
        tr("step %1/%2 (epoch %3): loss %4").arg(e.step).arg(e.total_steps).arg(e.epoch + 1).arg(number(e.loss));
    if (std::isfinite(e.accuracy)) line += tr(", accuracy %1").arg(e.accuracy, 0, 'f', 4);
    line += tr(", %1 ms/step, %2 examples/s, lr %3")
                .arg(e.step_time_s * 1000.0, 0, 'f', 1)
                .arg(e.examples_per_s, 0, 'f', 0)
                .arg(number(e.learning_rate));
    log(line);
  }
  emit stepReported(e.step, e.loss);
}

void TrainingTab::onEval(const runtime::EvalEvent& e) {
  lossChart_->append(evalLoss_, double(e.step), e.loss);
  if (std::isfinite(e.accuracy)) accuracyChart_->append(evalAcc_, double(e.step), e.accuracy);
  QString line = tr("eval after step %1 (epoch %2): loss %3").arg(e.step).arg(e.epoch + 1).arg(number(e.loss));
  if (std::isfinite(e.accuracy)) line += tr(", accuracy %1").arg(e.accuracy, 0, 'f', 4);
  line += tr(" on %1 test examples").arg(e.examples);
  log(line);
  emit evalReported(e.step, e.accuracy);
}

void TrainingTab::refreshProgress() {
  refresh_.stop();
  if (began_) {
    if (progress_->maximum() < last_.total_steps)
      progress_->setMaximum(int(std::min<int64_t>(last_.total_steps, INT_MAX)));
    progress_->setValue(int(std::min<int64_t>(last_.step, INT_MAX)));
  }
  updateStatus();
}

// "Done: 24 steps in 3 s", or for a resumed run "Done: steps 201 to 300 (100) in 12 s": the steps
// this run trained, not the count its checkpoint started from.
QString TrainingTab::ranText(const QString& took) const {
  const int64_t ran = std::max<int64_t>(0, last_.step - info_.first_step);
  if (info_.first_step <= 0) return tr("Done: %1 steps in %2").arg(last_.step).arg(took);
  return tr("Done: steps %1 to %2 (%3) in %4").arg(info_.first_step + 1).arg(last_.step).arg(ran).arg(took);
}

void TrainingTab::onFinished(bool cancelled) {
  refreshProgress();
  // An attached run took what its log's own times say, not the time since the window attached.
  const double logged = sender() == processRun_ && processRun_->wasAttached() ? processRun_->loggedSeconds() : -1;
  const QString took = clockText(logged >= 0 ? logged : clock_.elapsed() / 1000.0);
  if (std::exchange(detached_, false)) {
    log(tr("Stopped following the run at step %1 of %2; it goes on where it runs.").arg(last_.step).arg(info_.total_steps));
    updateControls();
    status_->setText(tr("Not following: last read step %1 of %2").arg(last_.step).arg(info_.total_steps));
    emit runFinished(true);
    return;
  }
  if (cancelled) {
    log(tr("Cancelled after %1 of %2 steps (%3).").arg(last_.step).arg(info_.total_steps).arg(took));
    doc_->message("info", tr("Training %1 cancelled after %2 steps").arg(runName_).arg(last_.step));
  } else {
    log(ranText(took) + ".");
    doc_->message(
        "info",
        tr("Training %1 finished: %2 steps, final loss %3").arg(runName_).arg(last_.step).arg(number(last_.loss)));
  }
  updateControls();
  status_->setText(cancelled ? tr("Cancelled at step %1 of %2").arg(last_.step).arg(info_.total_steps)
                             : tr("%1, final loss %2").arg(ranText(took), number(last_.loss)));
  if (!began_) showNotStarted();
  emit runFinished(cancelled);
}

void TrainingTab::onFailed(const QString& message) {
  refreshProgress();
  log(tr("Error: %1").arg(message));
  showError(tr("Training failed: %1").arg(message));
  doc_->message("error", tr("Training %1 failed: %2").arg(runName_, message));
  if (!began_ || progress_->maximum() == 0) showNotStarted();
  updateControls();
  status_->setText(tr("Failed"));
  emit runFailed(message);
}

void TrainingTab::refuse(const QString& message) {
  showError(message);
  log(tr("Not started: %1").arg(message));
  doc_->message("error", tr("Training not started: %1").arg(message));
  emit runFailed(message);
}

void TrainingTab::showError(const QString& message) {
  error_->setText(message);
  error_->show();
}

void TrainingTab::log(const QString& line) {
  if (line.isEmpty()) {
    log_->appendPlainText(QString());
    return;
  }
  log_->appendPlainText(QStringLiteral("[%1] %2").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), line));
}

void TrainingTab::updateControls() {
  const bool running = this->running();
  const bool stopping = this->stopping();
  startButton_->setEnabled(!running);
  form_->setEnabled(!running);
  outputs_->setEnabled(!running);
  // Processes cannot be held between steps from here, only stopped.
  pauseButton_->setEnabled(running && !stopping && !processRun_->isRunning());
  stopButton_->setEnabled(running && !stopping);
  const bool paused = run_->isPaused();
  pauseButton_->setText(paused ? tr("Resume") : tr("Pause"));
  pauseButton_->setIcon(style()->standardIcon(paused ? QStyle::SP_MediaPlay : QStyle::SP_MediaPause));
}

void TrainingTab::updateStatus() {
  if (!running()) return;
  if (processRun_->isQuiet() && !quietText_.isEmpty()) return;  // a silence is news until the log grows
  if (stopping()) {
    status_->setText(tr("Stopping after step %1…").arg(last_.step));
    return;
  }
  if (!began_) {
    if (run_->isPaused())
      status_->setText(tr("Building the trainer… (will pause before the first step)"));
    else if (processRun_->isAttached())
      status_->setText(tr("Waiting for the run's log to start…"));
    else if (runProcesses_ > 1)
      status_->setText(tr("Starting %1 processes, building the trainer and loading data…").arg(runProcesses_));
    else
      status_->setText(tr("Building the trainer and loading data…"));
    return;
  }
  if (run_->isPaused()) {
    status_->setText(tr("Paused at step %1 of %2").arg(last_.step).arg(info_.total_steps));
    return;
  }
  if (last_.step == 0) {
    status_->setText(tr("Running the first step…"));
    return;
  }
  const double mean = std::accumulate(recentStepSeconds_.begin(), recentStepSeconds_.end(), 0.0) /
                      double(std::max<size_t>(1, recentStepSeconds_.size()));
  const double eta = mean * double(info_.total_steps - last_.step);
  status_->setText(tr("Step %1 / %2 · epoch %3 · loss %4 · %5 steps/s · elapsed %6 · ETA %7")
                       .arg(last_.step)
                       .arg(info_.total_steps)
                       .arg(last_.epoch + 1)
                       .arg(number(last_.loss))
                       .arg(mean > 0 ? number(1.0 / mean, 3) : QStringLiteral("-"))
                       .arg(clockText(clock_.elapsed() / 1000.0), clockText(eta)));
}

void TrainingTab::beginRun() {
  pendingSave_ = false;
  began_ = false;
  info_ = {};
  last_ = {};
  recentStepSeconds_.clear();
  resetCharts();
  progress_->setRange(0, 0);  // busy until the run reports its step count
  progress_->setValue(0);
  if (!log_->document()->isEmpty()) log(QString());
}

void TrainingTab::resetCharts() {
  for (LineChart* c : {lossChart_, accuracyChart_, stepTimeChart_, throughputChart_}) c->clear();
  lossScale_->hide();
  accuracyChart_->setPlaceholder(QString());
}

}  // namespace shardlab::ui
