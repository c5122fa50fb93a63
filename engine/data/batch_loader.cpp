#include "engine/data/batch_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "engine/util/error.h"

namespace shardlab::data {
namespace {

constexpr uint64_t kStreamShuffle = 0x73687566ULL;

int64_t count_batches(int64_t n, int64_t batch_size, bool drop_remainder) {
  if (batch_size <= 0) return 0;
  return drop_remainder ? n / batch_size : (n + batch_size - 1) / batch_size;
}

int64_t validated_batch_size(const Dataset& ds, int64_t batch_size, bool drop_remainder, int prefetch) {
  if (batch_size <= 0) throw Error("BatchLoader: batch_size must be positive, got " + std::to_string(batch_size));
  if (prefetch < 0) throw Error("BatchLoader: prefetch must be 0 or more, got " + std::to_string(prefetch));
  if (drop_remainder && batch_size > ds.size())
    throw Error("BatchLoader: batch_size " + std::to_string(batch_size) + " is larger than the dataset (" +
                std::to_string(ds.size()) + " examples), so drop_remainder leaves no full batch");
  if (ds.targets.rank() < 1 || ds.targets.shape[0] != ds.size())
    throw Error("BatchLoader: dataset has " + std::to_string(ds.size()) + " examples but targets of shape " +
                shape_str(ds.targets.shape));
  return batch_size;
}

// Copies rows `rows` of src into a new [count, ...] tensor; where `wanted` is given, only the rows it
// flags (the others stay zero).
Tensor gather(const Tensor& src, const int64_t* rows, int64_t count, const std::vector<char>& wanted) {
  Shape s = src.shape;
  s[0] = count;
  Tensor out(s);
  const int64_t row = src.shape[0] ? src.size() / src.shape[0] : 0;
  const bool all = wanted.size() != size_t(count);
  for (int64_t r = 0; r < count; ++r)
    if (all || wanted[size_t(r)]) std::memcpy(out.ptr() + r * row, src.ptr() + rows[r] * row, size_t(row) * sizeof(float));
  return out;
}

}  // namespace

BatchLoader::BatchLoader(const Dataset& ds, int64_t batch_size, uint64_t seed, bool shuffle, bool drop_remainder,
                         int prefetch, std::vector<char> rows)
    : ds_(ds),
      batch_size_(validated_batch_size(ds, batch_size, drop_remainder, prefetch)),
      seed_(seed),
      shuffle_(shuffle),
      prefetch_(prefetch),
      n_(ds.size()),
      batches_per_epoch_(count_batches(n_, batch_size, drop_remainder)),
      rows_(std::move(rows)) {
  if (prefetch_ > 0 && batches_per_epoch_ > 0) worker_ = std::thread([this] { work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Batch BatchLoader::make_batch(int64_t pos) {
  Batch b;
  b.epoch = pos / batches_per_epoch_;
  b.index = pos % batches_per_epoch_;
  // Shuffled loaders draw a new order per epoch; unshuffled ones build the identity once.
  if (order_epoch_ != b.epoch && (shuffle_ || order_epoch_ < 0)) {
    if (shuffle_) {
      order_ = seeded_permutation(n_, hash64(seed_, kStreamShuffle, uint64_t(b.epoch)));
    } else {
      order_.resize(size_t(n_));
      std::iota(order_.begin(), order_.end(), int64_t(0));
    }
    order_epoch_ = b.epoch;
  }
  const int64_t start = b.index * batch_size_;
  const int64_t count = std::min(batch_size_, n_ - start);
  b.features = gather(ds_.features, order_.data() + start, count, rows_);
  b.targets = gather(ds_.targets, order_.data() + start, count, rows_);
  return b;
}

void BatchLoader::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || produced_ - consumed_ < prefetch_; });
    if (stop_) return;
    const int64_t pos = produced_++;
    const uint64_t gen = generation_;
    lock.unlock();  // build outside the lock so the consumer can take earlier batches meanwhile
    Batch b;
    std::exception_ptr err;
    try {
      b = make_batch(pos);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (gen != generation_) continue;  // reset() happened meanwhile; this batch belongs to the old stream
    if (err) {
      error_ = err;
      cv_.notify_all();
      return;
    }
    ready_.push_back(std::move(b));
    cv_.notify_all();
  }
}

Batch BatchLoader::take(std::unique_lock<std::mutex>& lock) {
  if (batches_per_epoch_ == 0) throw Error("BatchLoader: the dataset has no examples");
  if (prefetch_ == 0) {
    Batch b = make_batch(consumed_);
    ++consumed_;
    return b;
  }
  cv_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  ++consumed_;
  cv_.notify_all();  // the worker may be waiting for room
  return b;
}

Batch BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mu_);
  return take(lock);
}

bool BatchLoader::next_in_epoch(Batch& out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (batches_per_epoch_ == 0 || (consumed_ > 0 && consumed_ % batches_per_epoch_ == 0)) return false;
  out = take(lock);
  return true;
}

void BatchLoader::reset() { seek(0); }

void BatchLoader::seek(int64_t position) {
  // A position past kMaxPosition would overflow the worker's produced_ + prefetch and index the
  // order with a negative start; a negative one is no batch at all. Neither is clamped.
  if (position < 0 || position > kMaxPosition)
    throw Error("BatchLoader: cannot seek to position " + std::to_string(position) + " (positions are 0 .. " +
                std::to_string(kMaxPosition) + ")");
  if (batches_per_epoch_ == 0 && position != 0)
    throw Error("BatchLoader: cannot seek to position " + std::to_string(position) +
                ": the dataset has no batches, so only position 0 exists");
  std::lock_guard<std::mutex> lock(mu_);
  ready_.clear();
  consumed_ = produced_ = position;
  ++generation_;
  cv_.notify_all();
}

}  // namespace shardlab::data
