// The Checkpoints tab: pick a checkpoint directory, see its committed steps with their metrics,
// resume training from one, or export one (parameters as safetensors, or the inference graph as
// ONNX) on a background thread with a progress indicator; the list follows the directory as
// saves land.
#pragma once

#include <QWidget>
#include <atomic>
#include <thread>

class QFileSystemWatcher;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace shardlab::ui {

class CheckpointListModel;

class CheckpointBrowser : public QWidget {
  Q_OBJECT

 public:
  explicit CheckpointBrowser(QWidget* parent = nullptr);
  ~CheckpointBrowser() override;

  void setRoot(const QString& dir);
  QString root() const;
  CheckpointListModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  // The selected checkpoint's directory, or "" when none is selected.
  QString selectedCheckpoint() const;
  void selectStep(qint64 step);

  // Writes `checkpointDir`'s parameters ("safetensors") or inference graph ("onnx") to `out` on a
  // worker thread; exportFinished reports the outcome. Returns false if an export is already running.
  bool startExport(const QString& checkpointDir, const QString& format, const QString& out);
  bool isExporting() const { return exporting_; }

 signals:
  void resumeRequested(const QString& checkpointDir);
  void exportFinished(bool ok, const QString& message);

 private:
  void chooseRoot();
  void exportSelected();
  void showDetails();

  CheckpointListModel* model_;
  QLineEdit* rootEdit_;
  QTableView* table_;
  QLabel* details_;
  QPushButton* resume_;
  QPushButton* export_;
  QProgressBar* progress_;
  QFileSystemWatcher* watcher_;
  std::thread worker_;
  std::atomic<bool> exporting_{false};
};

}  // namespace shardlab::ui
