// Mini-batches of a Dataset: seeded per-epoch shuffling, optional remainder dropping, and batches
// prepared ahead on a background thread so the training step does not wait on copying.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/tensor/tensor.h"

namespace shardlab::data {

struct Batch {
  Tensor features;    // [B, ...]
  Tensor targets;     // [B] labels or [B, ...]
  int64_t epoch = 0;
  int64_t index = 0;  // batch index within the epoch
};

// The loader hands out one fixed stream of batches: epoch 0 batches 0 .. batches_per_epoch()-1, then epoch 1, ...
// Epoch e visits the examples in the order seeded_permutation(N, hash64(seed, stream, e)) when shuffling, else
// in dataset order. Batch (epoch, index) therefore depends only on the dataset, batch_size, seed and flags,
// never on timing or on `prefetch`.
//
//   next()              the next batch of the stream, crossing epoch boundaries forever (training).
//   next_in_epoch(out)  the next batch, or false (consuming nothing) once the last batch of the current
//                       epoch has been taken; it stays false until reset(). Typical eval pass:
//                         loader.reset(); while (loader.next_in_epoch(b)) { ... }
//   reset()             rewinds to epoch 0, batch 0 and drops batches prepared ahead.
//
// With drop_remainder each epoch has floor(N / batch_size) full batches (a static shape for training);
// without it the last batch of an epoch holds the remaining N % batch_size examples.
//
// Lifetime: the loader keeps a reference to `ds`, which must outlive it and stay unmodified meanwhile.
// Threads: all members may be called from any thread (one mutex serialises them), but the stream has one
// position, so use one consumer. The destructor stops and joins the prefetch thread promptly.
class BatchLoader {
 public:
  // Throws shardlab::Error if batch_size <= 0, prefetch < 0, or drop_remainder and batch_size > N.
  // `rows` (batch_size flags, or empty for all): the rows of a full batch this process feeds to its
  // devices (a run over several processes); the others are left zero, never read from the dataset.
  BatchLoader(const Dataset& ds, int64_t batch_size, uint64_t seed, bool shuffle, bool drop_remainder,
              int prefetch = 2, std::vector<char> rows = {});
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t batch_size() const { return batch_size_; }

  Batch next();  // blocks until ready; throws if the dataset is empty
  bool next_in_epoch(Batch& out);
  void reset();
  // Continues the stream at `position` (epoch * batches_per_epoch() + index): a resumed run gets
  // the batches it would have had. Throws Error naming the position if it is negative or over
  // kMaxPosition (2^53), or nonzero on a loader with no batches.
  void seek(int64_t position);
  static constexpr int64_t kMaxPosition = int64_t(1) << 53;

 private:
  Batch make_batch(int64_t pos);  // only ever run by one thread at a time: the worker, or the caller if prefetch == 0
  void work();
  Batch take(std::unique_lock<std::mutex>& lock);

  const Dataset& ds_;
  const int64_t batch_size_;
  const uint64_t seed_;
  const bool shuffle_;
  const int prefetch_;
  const int64_t n_;
  const int64_t batches_per_epoch_;
  const std::vector<char> rows_;

  // The current epoch's example order, cached by make_batch.
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;  // prepared batches, positions consumed_ .. consumed_ + size - 1
  int64_t consumed_ = 0;     // stream position of the next batch handed out
  int64_t produced_ = 0;     // stream position of the next batch the worker builds
  uint64_t generation_ = 0;  // bumped by reset() so a batch built across it is discarded
  bool stop_ = false;
  std::exception_ptr error_;  // a worker failure, rethrown to the consumer
  std::thread worker_;
};

}  // namespace shardlab::data
