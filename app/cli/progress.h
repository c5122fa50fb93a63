// Terminal reporting of a training run: a redrawn progress bar on a terminal, plain lines
// otherwise, and an optional JSONL log of every step and evaluation.
#pragma once

#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/runtime/trainer.h"
#include "engine/util/output_file.h"

namespace shardlab::cli {

class ProgressPrinter : public runtime::TrainerListener {
 public:
  ProgressPrinter(bool tty, bool quiet);
  void on_start(const runtime::StartInfo& s) override;
  void on_step(const runtime::StepEvent& e) override;
  void on_eval(const runtime::EvalEvent& e) override;
  void on_finish(bool cancelled) override;

 private:
  bool tty_, quiet_;
  int64_t total_ = 0;
  double smoothed_step_s_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool bar_open_ = false;
};

// Each record is written as it happens (util::LineFile: a write error ends the run, naming the
// file); one that fails on a background save's thread is raised at the next step instead.
class JsonlLog : public runtime::TrainerListener {
 public:
  explicit JsonlLog(const std::string& path);
  void on_start(const runtime::StartInfo& s) override;
  void on_step(const runtime::StepEvent& e) override;
  void on_eval(const runtime::EvalEvent& e) override;
  // {"event": "warning", "message": ...}: what stderr also says, for a window attached to the log.
  void on_warning(const std::string& message) override;
  // {"event": "saved", "step": N, "dir": ...}: a checkpoint committed (from a background save's
  // thread, hence the lock), so a window following the log can list it.
  void on_saved(int64_t step, const std::string& dir) override;
  // {"event": "end", "cancelled": ...}: the run is over, for a window attached to the log, which
  // has no process to watch end.
  void on_finish(bool cancelled) override;

 private:
  void write(const nlohmann::ordered_json& record);
  std::mutex mu_;
  util::LineFile out_;
  std::string failed_;  // a background write's error, not yet raised
};

}  // namespace shardlab::cli
