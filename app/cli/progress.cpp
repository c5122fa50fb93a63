#include "app/cli/progress.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/api/run_log.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {

std::string clock_str(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

ProgressPrinter::ProgressPrinter(bool tty, bool quiet) : tty_(tty), quiet_(quiet) {}

void ProgressPrinter::on_start(const runtime::StartInfo& s) {
  total_ = s.total_steps;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (quiet_) return;
  const std::string batch = s.microbatches > 1 ? std::to_string(s.batch) + " in " + std::to_string(s.microbatches) + " microbatches"
                                               : std::to_string(s.batch);
  std::printf("training %lld steps (%lld per epoch), batch %s, %lld parameters, %d threads\n", (long long)s.total_steps,
              (long long)s.steps_per_epoch, batch.c_str(), (long long)s.param_count, s.threads);
  if (s.devices > 1)
    std::printf("SPMD on %d virtual devices%s, mesh %s: %lld collectives per step, %s moved per device\n", s.devices,
                s.processes > 1 ? (" in " + std::to_string(s.processes) + " processes").c_str() : "", s.mesh.c_str(),
                (long long)s.collectives, runtime::format_bytes(s.comm_bytes).c_str());
  if (s.precision != "float32") std::printf("precision: %s\n", s.precision.c_str());
  std::printf("memory plan%s: parameters %s, optimizer state %s, step arena %s; total %s\n",
              s.devices > 1 ? " per device" : "",
              runtime::format_bytes(s.param_bytes).c_str(), runtime::format_bytes(s.opt_state_bytes).c_str(),
              runtime::format_bytes(s.arena_bytes).c_str(), runtime::format_bytes(s.total_bytes).c_str());
  std::fflush(stdout);
}

void ProgressPrinter::on_step(const runtime::StepEvent& e) {
  smoothed_step_s_ = smoothed_step_s_ == 0 ? e.step_time_s + e.data_wait_s
                                           : 0.9 * smoothed_step_s_ + 0.1 * (e.step_time_s + e.data_wait_s);
  if (quiet_) return;
  const double eta = smoothed_step_s_ * double(total_ - e.step);
  const double rate = smoothed_step_s_ > 0 ? 1.0 / smoothed_step_s_ : 0;
  char acc[32] = "";
  if (std::isfinite(e.accuracy)) std::snprintf(acc, sizeof acc, " acc %.3f", e.accuracy);
  // A step dynamic loss scaling skipped is always printed, with the scale it backed off to.
  if (e.skipped && !tty_)
    std::printf("step %lld: gradients overflowed in float16: update skipped, loss scale now %g (%lld skipped so far)\n",
                (long long)e.step, e.loss_scale, (long long)e.skipped_steps);
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    // Redraw at most 10 times a second, always on the last step.
    if (e.step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const int width = 30;
    int filled = total_ ? int(double(width) * double(e.step) / double(total_)) : width;
    std::printf("\r[%s%s] %lld/%lld loss %.4f%s %.1f steps/s ETA %s\x1b[K", std::string(size_t(filled), '#').c_str(),
                std::string(size_t(width - filled), '.').c_str(), (long long)e.step, (long long)total_, e.loss, acc, rate,
                clock_str(eta).c_str());
    bar_open_ = true;
  } else {
    const int64_t every = std::max<int64_t>(1, total_ / 20);
    if (e.step != 1 && e.step % every != 0 && e.step != total_) return;
    std::printf("step %lld/%lld epoch %lld loss %.4f%s %.1f steps/s %.0f examples/s ETA %s\n", (long long)e.step,
                (long long)total_, (long long)e.epoch + 1, e.loss, acc, rate, e.examples_per_s, clock_str(eta).c_str());
  }
  std::fflush(stdout);
}

void ProgressPrinter::on_eval(const runtime::EvalEvent& e) {
  if (bar_open_) std::printf("\n"), bar_open_ = false;
  std::printf("eval after step %lld: loss %.4f", (long long)e.step, e.loss);
  if (std::isfinite(e.accuracy)) std::printf(", accuracy %.4f", e.accuracy);
  std::printf(" (%lld test examples)\n", (long long)e.examples);
  std::fflush(stdout);
}

void ProgressPrinter::on_finish(bool cancelled) {
  if (bar_open_) std::printf("\n"), bar_open_ = false;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::printf("%s in %s\n", cancelled ? "cancelled" : "done", clock_str(s).c_str());
}

JsonlLog::JsonlLog(const std::string& path) : out_(path, "--log") {}

void JsonlLog::on_start(const runtime::StartInfo& s) { write(api::start_record(s)); }
void JsonlLog::on_step(const runtime::StepEvent& e) { write(api::step_record(e)); }
void JsonlLog::on_eval(const runtime::EvalEvent& e) { write(api::eval_record(e)); }
void JsonlLog::on_warning(const std::string& message) { write(api::warning_record(message)); }

void JsonlLog::on_saved(int64_t step, const std::string& dir) {
  // On the save's own thread: an error here must not escape it.
  try {
    write(api::saved_record(step, dir));
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.empty()) failed_ = e.what();
  }
}

void JsonlLog::on_finish(bool cancelled) { write(api::end_record(cancelled)); }

void JsonlLog::write(const nlohmann::ordered_json& record) {
  const std::string line = api::timed_line(record);
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_.empty()) throw Error(failed_);
  out_.write_line(line);
}

}  // namespace shardlab::cli
