#include "engine/runtime/spmd_session.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/backends/processes.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

// An evaluation step at one batch size, partitioned like training, sharing its parameters.
struct SpmdSession::EvalStep {
  StepProgram global;
  sharding::PartitionedStep part;
  std::unique_ptr<backends::Executable> exe;
};

namespace {

// Examples [begin, begin + count) of a batch, repeated `times` times.
Tensor examples(const Tensor& t, int64_t begin, int64_t count, int64_t times = 1) {
  const int64_t n = t.shape.at(0), row = n > 0 ? t.size() / n : 0;
  Shape s = t.shape;
  s[0] = count * times;
  Tensor out(s);
  for (int64_t r = 0; r < times; ++r)
    std::copy_n(t.ptr() + begin * row, count * row, out.ptr() + r * count * row);
  return out;
}

// A global value's block for each of this process's devices, written into local value `local`:
// the value itself where the block is all of it (replicated), else the device's own block.
void write_blocks(backends::Executable& exe, int local, const Shape& local_shape, const Tensor& global,
                  const sharding::Sharding& s, const sharding::Mesh& mesh) {
  for (int d : exe.local_devices()) {
    if (local_shape == global.shape) exe.write(d, local, global.ptr());
    else exe.write(d, local, sharding::local_block(global, s, mesh, d).ptr());
  }
}

}  // namespace

SpmdSession::SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules,
                         int64_t batch, std::shared_ptr<backends::Backend> backend, sharding::WeightUpdate update,
                         const Compiled& compiled)
    : project_(p), mesh_(mesh), rules_(rules), backend_(std::move(backend)), update_(update) {
  // The design check partitions with the sharded weight update, at the project's batch.
  if (compiled.global && compiled.part && update_ == sharding::WeightUpdate::Sharded && compiled.global->batch == batch) {
    global_ = *compiled.global;
    step_ = *compiled.part;
  } else {
    const graph::GraphReport report = project::analyze_project(project_);
    global_ = build_step(project_, report, batch, true);
    step_ = sharding::partition(global_, mesh_, rules_,
                                sharding::parse_fallback(project_.constraint_fallback, project_.display_name() + ": constraint_fallback"),
                                update_, schedule());
  }
  backends::LoadOptions lo;
  lo.what = "the training step";
  exe_ = backend_->load(step_.program, step_.memory, mesh_, lo);
  if (project_.precision.loss_scale) loss_scale_.scale = project_.precision.loss_scale->initial;
  // Initialise each parameter once, globally, and hand every device its block.
  for (const ModelParam& mp : global_.params) {
    Tensor full(mp.info.shape);
    initialize_param(mp, project_.training.seed, full.ptr());
    set_parameter(mp.path, full);
  }
}

SpmdSession::SpmdSession(const project::Project& p, const sharding::Mesh& mesh, const sharding::LogicalRules& rules,
                         int64_t batch, int threads_per_device)
    : SpmdSession(p, mesh, rules, batch,
                  std::shared_ptr<backends::Backend>(backends::make_backend(
                      "cpu", backends::BackendOptions{.threads = threads_per_device > 0 ? threads_per_device * int(mesh.device_count()) : 0}))) {}

SpmdSession::~SpmdSession() = default;

sharding::PipelineSchedule SpmdSession::schedule() const {
  return sharding::parse_pipeline_schedule(project_.training.pipeline_schedule, project_.display_name() + ": training.pipeline_schedule");
}

uint64_t SpmdSession::bytes_per_device() const {
  uint64_t b = exe_->bytes_per_device();
  for (const auto& [n, e] : eval_) b += e->exe->bytes_per_device();
  return b;
}

const ModelParam& SpmdSession::param(const std::string& path) const { return find_param(global_, path); }

std::vector<std::string> SpmdSession::parameter_paths() const { return param_paths(global_); }

Tensor SpmdSession::parameter(const std::string& path) const { return value(param(path).value); }

Tensor SpmdSession::value(int v) const {
  const sharding::Sharding& s = step_.sharding[size_t(v)];
  const int local = step_.local[size_t(v)];
  const Shape& global_shape = global_.program.shape(v);
  const std::vector<int> mine = exe_->local_devices();
  Tensor block(step_.program.shape(local));
  if (block.shape == global_shape) {  // replicated: any device holds all of it (in a pipeline, its stage's)
    read_held(*exe_, step_, local, block.ptr());
    return block;
  }
  // Every device's block, this process's read here and the others' gathered from their processes
  // (each holds the same number of devices, in device order).
  const size_t elems = size_t(block.size());
  std::vector<float> blocks(elems * size_t(exe_->num_devices()));
  for (int d : mine) exe_->read(d, local, blocks.data() + size_t(d) * elems);
  if (backends::Processes* p = backend_->processes(); p && mine.size() < size_t(exe_->num_devices())) {
    const size_t bytes = elems * mine.size() * sizeof(float);
    std::vector<float> here(blocks.begin() + ptrdiff_t(size_t(mine.front()) * elems),
                            blocks.begin() + ptrdiff_t(size_t(mine.front()) * elems + elems * mine.size()));
    p->all_gather(here.data(), blocks.data(), bytes);
  }
  Tensor full(global_shape);
  // In a pipeline, a parameter outside the Repeats is current only on the stage that updates it.
  const int64_t home = size_t(local) < step_.stage.size() ? step_.stage[size_t(local)] : -1;
  const int axis = home >= 0 ? mesh_.axis_index(step_.pipeline.axis) : -1;
  for (int d = 0; d < exe_->num_devices(); ++d) {
    if (axis >= 0 && mesh_.coords(d)[size_t(axis)] != home) continue;
    std::copy_n(blocks.data() + size_t(d) * elems, elems, block.ptr());
    sharding::place_block(full, block, s, mesh_, d);
  }
  return full;
}

void SpmdSession::read_held(const backends::Executable& exe, const sharding::PartitionedStep& part, int local, float* out) const {
  const std::vector<int> mine = exe.local_devices();
  const int64_t st = size_t(local) < part.stage.size() ? part.stage[size_t(local)] : sharding::kEveryStage;
  backends::Processes* p = backend_->processes();
  if (st < 0 || !p || p->size() <= 1) return exe.read(part.device_holding(local, mesh_, mine), local, out);
  const int k = mesh_.axis_index(part.pipeline.axis);
  // Every process decides alike, from the mesh: a broadcast only where some process holds none of
  // the stage's devices (the stage axis crosses processes).
  std::vector<char> holds(size_t(p->size()), 0);
  int root = -1;
  for (int d = 0; d < mesh_.device_count(); ++d)
    if (mesh_.coords(d)[size_t(k)] == st) {
      holds[size_t(process_of(d))] = 1;
      if (root < 0) root = process_of(d);
    }
  if (std::all_of(holds.begin(), holds.end(), [](char h) { return h != 0; }))
    return exe.read(part.device_holding(local, mesh_, mine), local, out);
  if (root == p->rank()) exe.read(part.device_holding(local, mesh_, mine), local, out);
  const size_t bytes = size_t(numel(part.program.shape(local))) * sizeof(float);  // read() widens to float32
  p->broadcast(out, bytes, root);
}

std::vector<SpmdSession::BlockPlace> SpmdSession::blocks_of(int v) const {
  const int local = step_.local[size_t(v)];
  const int64_t home = size_t(local) < step_.stage.size() ? step_.stage[size_t(local)] : -1;
  const int axis = home >= 0 ? mesh_.axis_index(step_.pipeline.axis) : -1;
  std::vector<BlockPlace> out;
  for (int d = 0; d < exe_->num_devices(); ++d) {
    if (axis >= 0 && mesh_.coords(d)[size_t(axis)] != home) continue;
    BlockPlace b;
    sharding::block_bounds(global_.program.shape(v), step_.sharding[size_t(v)], mesh_, d, b.start, b.size);
    b.device = d;
    if (std::none_of(out.begin(), out.end(), [&](const BlockPlace& o) { return o.start == b.start; })) out.push_back(std::move(b));
  }
  return out;
}

std::vector<SpmdSession::BlockPlace> SpmdSession::local_blocks(int v) const {
  std::vector<BlockPlace> out;
  for (int d : exe_->local_devices()) {
    BlockPlace b;
    sharding::block_bounds(global_.program.shape(v), step_.sharding[size_t(v)], mesh_, d, b.start, b.size);
    b.device = d;
    out.push_back(std::move(b));
  }
  return out;
}

Tensor SpmdSession::read_block(int v, int device) const {
  const int local = step_.local[size_t(v)];
  Tensor block(step_.program.shape(local));
  exe_->read(device, local, block.ptr());
  return block;
}

void SpmdSession::set_value_by_region(int v, const std::function<Tensor(const Shape& start, const Shape& size)>& region) {
  const int local = step_.local[size_t(v)];
  for (const BlockPlace& b : local_blocks(v)) {
    const int d = b.device;
    const Tensor part = region(b.start, b.size);
    if (part.shape != step_.program.shape(local))
      throw Error("'" + global_.program.values[size_t(v)].name + "': a part of shape " + shape_str(part.shape) + " for a block of " +
                  shape_str(step_.program.shape(local)));
    exe_->write(d, local, part.ptr());
  }
}

int SpmdSession::process_of(int device) const {
  const backends::Processes* p = backend_->processes();
  if (!p || p->size() <= 1) return 0;
  return device / std::max(1, exe_->num_devices() / p->size());
}

void SpmdSession::set_parameter(const std::string& path, const Tensor& value) { set_value(param(path).value, value); }

void SpmdSession::set_value(int v, const Tensor& value) {
  const Shape& shape = global_.program.shape(v);
  if (value.shape != shape)
    throw Error("'" + global_.program.values[size_t(v)].name + "' has shape " + shape_str(shape) + ", the value has " +
                shape_str(value.shape));
  const int local = step_.local[size_t(v)];
  write_blocks(*exe_, local, step_.program.shape(local), value, step_.sharding[size_t(v)], mesh_);
}

void SpmdSession::feed(backends::Executable& exe, const sharding::PartitionedStep& s, const StepProgram& g, const Tensor& x,
                       const Tensor& y) {
  // With gradient accumulation the batch is fed as M microbatches, examples [m*B/M, (m+1)*B/M)
  // into microbatch m's input and target.
  const int64_t m_count = std::max<int64_t>(int64_t(g.inputs.size()), 1);
  Shape xs = g.program.shape(g.input), ys = g.program.shape(g.target);
  const int64_t micro = xs.empty() ? 0 : xs[0];
  if (!xs.empty()) xs[0] *= m_count;
  if (!ys.empty()) ys[0] *= m_count;
  if (x.shape != xs || y.size() != numel(ys))
    throw Error("batch of " + shape_str(x.shape) + " / " + shape_str(y.shape) + " does not fit the step's " + shape_str(xs) +
                " / " + shape_str(ys));
  Tensor yy = y;
  yy.shape = ys;
  if (m_count == 1) {
    write_blocks(exe, s.input, s.program.shape(s.input), x, s.sharding[size_t(g.input)], mesh_);
    write_blocks(exe, s.target, s.program.shape(s.target), yy, s.sharding[size_t(g.target)], mesh_);
    return;
  }
  for (int64_t m = 0; m < m_count; ++m) {
    const size_t i = size_t(m);
    write_blocks(exe, s.inputs[i], s.program.shape(s.inputs[i]), examples(x, m * micro, micro), s.sharding[size_t(g.inputs[i])], mesh_);
    write_blocks(exe, s.targets[i], s.program.shape(s.targets[i]), examples(yy, m * micro, micro), s.sharding[size_t(g.targets[i])],
                 mesh_);
  }
}

std::vector<char> SpmdSession::batch_rows_fed() const {
  const size_t m_count = std::max<size_t>(global_.inputs.size(), 1);
  const int64_t micro = global_.program.shape(global_.input).at(0);
  std::vector<char> fed(size_t(micro) * m_count, 0);
  for (size_t m = 0; m < m_count; ++m)
    for (int v : {m_count > 1 ? global_.inputs[m] : global_.input, m_count > 1 ? global_.targets[m] : global_.target})
      for (int d : exe_->local_devices()) {
        Shape start, size;
        sharding::block_bounds(global_.program.shape(v), step_.sharding[size_t(v)], mesh_, d, start, size);
        std::fill_n(fed.begin() + ptrdiff_t(int64_t(m) * micro + start.at(0)), size.at(0), char(1));
      }
  if (std::all_of(fed.begin(), fed.end(), [](char c) { return c != 0; })) return {};
  return fed;
}

double SpmdSession::train_step(const Tensor& features, const Tensor& targets, double learning_rate, profiler::Trace* trace,
                               double data_wait_us) {
  feed(*exe_, step_, global_, features, targets);
  backends::RunContext ctx;
  ctx.step = updates_applied();
  ctx.learning_rate = learning_rate;
  ctx.loss_scale = loss_scaling() ? loss_scale_.scale : 1.0;
  ctx.trace = trace;
  ctx.data_wait_us = data_wait_us;
  exe_->run(ctx);
  ++step_count_;
  comm_seconds_ = exe_->last_comm_seconds();
  // The loss and accuracy are reduced over the mesh: every device holds them (in a pipeline, every
  // device of the last stage), and so is the non-finite count.
  const std::vector<int> mine = exe_->local_devices();
  float v = 0;
  if (loss_scaling()) {
    exe_->read(mine.front(), step_.nonfinite, &v);
    // flax.training.dynamic_scale: back off at once on an overflow, grow after a run of finite steps.
    const project::LossScaleSpec& spec = *project_.precision.loss_scale;
    LossScale& s = loss_scale_;
    s.last_skipped = v != 0;
    if (s.last_skipped) {
      ++s.skipped;
      s.good_steps = 0;
      s.scale = std::max(s.scale * spec.backoff_factor, double(std::numeric_limits<float>::min()));
    } else if (++s.good_steps >= spec.growth_interval) {
      s.good_steps = 0;
      s.scale = std::min(s.scale * spec.growth_factor, double(std::numeric_limits<float>::max()));
    }
  }
  if (step_.accuracy >= 0) {
    read_held(*exe_, step_, step_.accuracy, &v);
    accuracy_ = double(v);
  }
  read_held(*exe_, step_, step_.loss, &v);
  return double(v);
}

SpmdSession::EvalStep& SpmdSession::eval_step(int64_t batch) {
  auto& slot = eval_[batch];
  if (slot) return *slot;
  auto e = std::make_unique<EvalStep>();
  e->global = build_step(project_, project::analyze_project(project_), batch, false);
  e->part = sharding::partition(e->global, mesh_, rules_,
                                sharding::parse_fallback(project_.constraint_fallback, project_.display_name() + ": constraint_fallback"),
                                update_, schedule());
  // Both steps must keep every parameter and optimizer-state block at the same place, since the
  // evaluation step reads the training step's storage.
  for (const ModelParam& mp : e->global.params) {
    const ModelParam& tp = param(mp.path);
    std::vector<std::pair<int, int>> pairs = {{mp.value, tp.value}};
    for (size_t i = 0; i < mp.state.size() && i < tp.state.size(); ++i) pairs.push_back({mp.state[i], tp.state[i]});
    for (auto [ev, tv] : pairs) {
      const int el = e->part.local[size_t(ev)], tl = step_.local[size_t(tv)];
      if (el < 0 || tl < 0 || e->part.memory.persistent_offset[size_t(el)] != step_.memory.persistent_offset[size_t(tl)] ||
          e->part.program.shape(el) != step_.program.shape(tl))
        throw Error("internal: the evaluation step lays out '" + mp.path + "' unlike the training step");
    }
  }
  backends::LoadOptions lo;
  lo.share_persistent_with = exe_.get();
  lo.what = "evaluation at batch " + std::to_string(batch);
  e->exe = backend_->load(e->part.program, e->part.memory, mesh_, lo);
  slot = std::move(e);
  return *slot;
}

SpmdSession::Eval SpmdSession::evaluate_divisible(const Tensor& features, const Tensor& targets) {
  EvalStep& e = eval_step(features.shape.at(0));
  feed(*e.exe, e.part, e.global, features, targets);
  backends::RunContext ctx;
  ctx.step = step_count_;
  e.exe->run(ctx);
  Eval out;
  float v = 0;
  read_held(*e.exe, e.part, e.part.loss, &v);
  out.loss = double(v);
  out.accuracy = NAN;
  if (e.part.accuracy >= 0) {
    read_held(*e.exe, e.part, e.part.accuracy, &v);
    out.accuracy = double(v);
  }
  return out;
}

SpmdSession::Eval SpmdSession::evaluate(const Tensor& features, const Tensor& targets) {
  const int64_t n = features.shape.at(0), d = mesh_.device_count();
  if (n <= 0) throw Error("evaluate: an empty batch");
  if (n % d == 0) return evaluate_divisible(features, targets);
  // A part every split divides, and the remainder repeated until it divides too: each of its
  // examples then counts the same, so its mean is the remainder's own mean.
  const int64_t whole = n / d * d, rest = n - whole, times = d / std::gcd(rest, d);
  Eval a{0, 0};
  if (whole > 0) a = evaluate_divisible(examples(features, 0, whole), examples(targets, 0, whole));
  const Eval b = evaluate_divisible(examples(features, whole, rest, times), examples(targets, whole, rest, times));
  Eval out;
  out.loss = (a.loss * double(whole) + b.loss * double(rest)) / double(n);
  out.accuracy = (a.accuracy * double(whole) + b.accuracy * double(rest)) / double(n);
  return out;
}

}  // namespace shardlab::runtime
