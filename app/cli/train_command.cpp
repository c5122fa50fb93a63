// `shardlab-cli train`: trains a project and prints progress and the final evaluation.
#include <cctype>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits>
#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/progress.h"
#include "engine/runtime/trainer.h"
#include "engine/util/checked.h"
#include "engine/util/error.h"

namespace shardlab::cli {

namespace {
runtime::Trainer* g_trainer = nullptr;
// Ctrl-C stops between steps, so the run ends with its metrics rather than mid-step.
void on_interrupt(int) {
  if (g_trainer) g_trainer->cancel();
}

// Warnings (a continued run's changed seed or optimizer, an old run moved aside) go to stderr,
// beside the progress on stdout.
struct WarningPrinter : runtime::TrainerListener {
  void on_warning(const std::string& message) override { std::cerr << "shardlab-cli: warning: " << message << "\n"; }
};

// "2GB" -> 2'000'000'000, "500MiB" -> 524'288'000, "1.5GB", "4096": decimal (KB, MB, GB, TB) and
// binary (KiB, MiB, GiB, TiB) units, case-insensitive, B optional, as Hugging Face's max_shard_size.
// Integer arithmetic, checked: any number of digits is read without overflow or a float's rounding.
uint64_t parse_max_shard_size(const std::string& text) {
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "... (" + std::to_string(text.size()) + " characters)" : text;
  auto bad = [&](const std::string& why) {
    return Error("--max-shard-size: size '" + shown + "': " + why +
                 " (expected bytes, or a number with KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. 500MB, 2GB, 1GiB)");
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  size_t i = 0;
  int64_t whole = 0;
  bool digits = false, too_large = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    digits = true;
    auto next = util::mul<int64_t>(whole, 10);
    if (next) next = util::add<int64_t>(*next, text[i] - '0');
    if (!next) too_large = true;
    else whole = *next;
  }
  std::string fraction;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) fraction += text[i];
  if (!digits && fraction.empty()) throw bad("no number");
  std::string unit;
  for (; i < text.size(); ++i) {
    const char ch = char(std::tolower(static_cast<unsigned char>(text[i])));
    if (ch == ' ' && unit.empty()) continue;
    unit += ch;
  }
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"", 1}, {"k", 1000}, {"m", 1000'000}, {"g", 1000'000'000}, {"t", 1000'000'000'000},
      {"ki", int64_t(1) << 10}, {"mi", int64_t(1) << 20}, {"gi", int64_t(1) << 30}, {"ti", int64_t(1) << 40}};
  int64_t scale = 0;
  for (const auto& [u, f] : kUnits)
    if (unit == u) scale = f;
  if (scale == 0) throw bad("unknown unit '" + unit + "'");
  if (scale == 1 && fraction.find_first_not_of('0') != std::string::npos) throw bad("a fraction of a byte");
  // whole * scale + fraction * scale, the fraction's bytes rounded down.
  auto bytes = too_large ? std::nullopt : util::mul(whole, scale);
  int64_t part = 0, denominator = 1;
  for (char d : fraction) {
    if (denominator > kMax / 10 / scale) break;  // digits beyond a byte's resolution
    part = part * 10 + (d - '0');
    denominator *= 10;
  }
  if (bytes) bytes = util::add(*bytes, part * scale / denominator);
  if (!bytes) throw bad("too large (at most " + std::to_string(kMax) + " bytes)");
  if (*bytes < 1) throw bad("must be at least one byte");
  return uint64_t(*bytes);
}
}  // namespace

int run_train(const TrainArgs& a) {
  runtime::TrainOptions opt;
  opt.steps = a.steps;
  opt.epochs = a.epochs;
  opt.batch_size = a.batch_size;
  opt.seed = a.seed;
  opt.threads = a.threads;
  opt.devices = a.devices;
  opt.mesh = a.mesh;
  opt.rules = a.rules;
  opt.trace_detailed = !a.trace.empty();
  opt.checkpoint_dir = a.checkpoint_dir;
  opt.save_every = a.save_every;
  opt.keep = a.keep;
  opt.resume = a.resume;
  opt.continue_run = a.continue_run;
  opt.start_over = a.start_over;
  opt.resume_from = a.resume_from;
  if ((a.resume || a.continue_run || a.start_over || a.save_every > 0) && a.checkpoint_dir.empty())
    throw Error("--resume, --continue, --start-over and --save-every need --checkpoint-dir");
  if (!a.max_shard_size.empty()) {
    if (a.checkpoint_dir.empty()) throw Error("--max-shard-size needs --checkpoint-dir");
    opt.max_shard_bytes = parse_max_shard_size(a.max_shard_size);
  }
  if (!a.trace_steps.empty()) {
    long long first = 0, last = 0;
    if (std::sscanf(a.trace_steps.c_str(), "%lld:%lld", &first, &last) != 2 || first < 1 || last < first)
      throw Error("--trace-steps '" + a.trace_steps + "': expected a:b with 1 <= a <= b");
    opt.trace_first = first;
    opt.trace_last = last;
    opt.trace_keep = int(last - first + 1);
  }
  runtime::Trainer trainer(project::load_project(a.project), opt);
  ProgressPrinter printer(isatty(STDOUT_FILENO) != 0, a.quiet);
  trainer.add_listener(&printer);
  WarningPrinter warnings;
  trainer.add_listener(&warnings);
  std::unique_ptr<JsonlLog> log;
  if (!a.log.empty()) {
    log = std::make_unique<JsonlLog>(a.log);
    trainer.add_listener(log.get());
  }
  g_trainer = &trainer;
  std::signal(SIGINT, on_interrupt);
  trainer.run();
  g_trainer = nullptr;
  if (!a.trace.empty()) {
    trainer.trace().write_chrome_json(a.trace);
    if (!a.quiet) std::printf("trace written to %s\n", a.trace.c_str());
  }
  return 0;
}

}  // namespace shardlab::cli
