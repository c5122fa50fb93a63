#include "engine/plan/first_fit.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "engine/util/checked.h"

namespace shardlab::plan {

namespace {

using Extent = std::pair<int64_t, int64_t>;  // [offset, offset + size)

// Time buckets of placed short-lived buffers: a buffer is in each bucket its live range touches.
constexpr int kBucket = 64;
// A live range over more buckets than this is long (a deep model's stashed activations, live from
// the forward to the backward pass): in every bucket it would make each placement look at all of
// them, so long ones are kept by offset instead (LongLived).
constexpr size_t kLongBuckets = 4;
size_t bucket(int t) { return size_t(t + 1) / kBucket; }  // t >= -1

bool overlap(const std::vector<LiveSpan>& a, const std::vector<LiveSpan>& b) {
  for (const LiveSpan& x : a)
    for (const LiveSpan& y : b)
      if (x.stage == y.stage && x.first <= y.last && y.first <= x.last) return true;
  return false;
}

bool is_long(const Buffer& b) {
  for (const LiveSpan& s : b.live)
    if (bucket(std::max(s.last, s.first)) - bucket(s.first) + 1 > kLongBuckets) return true;
  return false;
}

// Placed long-lived buffers by extent, in chunks that summarise their items' live ranges, so a
// placement passes a chunk whose every item is in its way, or none is, without reading the items.
class LongLived {
 public:
  explicit LongLived(const std::vector<Buffer>& bufs) : bufs_(bufs) {}

  void insert(size_t buf, int64_t offset) {
    const Buffer& b = bufs_[buf];
    const Item it{{offset, offset + b.size}, b.live.front(), b.live.size() == 1, buf};
    if (chunks_.empty()) chunks_.emplace_back();
    size_t c = 0;
    while (c + 1 < chunks_.size() && !(it.at < chunks_[c].items.back().at)) ++c;
    std::vector<Item>& items = chunks_[c].items;
    items.insert(std::upper_bound(items.begin(), items.end(), it.at, [](const Extent& x, const Item& y) { return x < y.at; }), it);
    if (items.size() > 2 * kChunk) {
      Chunk upper;
      upper.items.assign(items.begin() + kChunk, items.end());
      items.resize(kChunk);
      chunks_.insert(chunks_.begin() + std::ptrdiff_t(c) + 1, std::move(upper));
      summarise(chunks_[c + 1]);
    }
    summarise(chunks_[c]);
  }

  // A walk up the list for one buffer: advance(off) moves past every long-lived buffer in b's way
  // that starts below off + b's size, and returns the new off. Monotone: off only grows, and each
  // call resumes where the last stopped.
  class Walk {
   public:
    Walk(const LongLived& list, const Buffer& b) : list_(list), b_(b), simple_(b.live.size() == 1) {}

    int64_t advance(int64_t off) {
      const LiveSpan& q = b_.live.front();
      for (; c_ < list_.chunks_.size(); ++c_, k_ = 0) {
        const Chunk& c = list_.chunks_[c_];
        if (k_ == 0 && simple_ && c.one_stage) {
          if (c.stage != q.stage || c.max_last < q.first || c.min_first > q.last) continue;  // none in the way
          if (c.items.front().at.first >= off + b_.size) return off;
          if (c.max_first <= q.last && q.first <= c.min_last && c.widest_gap < b_.size) {
            // Every item is in the way and none leaves a gap b fits in: the walk passes them all.
            off = std::max(off, c.max_end);
            continue;
          }
        }
        for (; k_ < c.items.size(); ++k_) {
          const Item& it = c.items[k_];
          if (it.at.first >= off + b_.size) return off;
          const bool in_way = simple_ && it.one_span ? it.span.stage == q.stage && it.span.first <= q.last && q.first <= it.span.last
                                                     : overlap(b_.live, list_.bufs_[it.buf].live);
          if (in_way) off = std::max(off, it.at.second);
        }
      }
      return off;
    }

   private:
    const LongLived& list_;
    const Buffer& b_;
    const bool simple_;
    size_t c_ = 0, k_ = 0;  // the next chunk and item to look at
  };

 private:
  static constexpr size_t kChunk = 64;
  struct Item {
    Extent at;
    LiveSpan span;  // its only span where one_span
    bool one_span;
    size_t buf;
  };
  struct Chunk {
    std::vector<Item> items;
    bool one_stage = false;  // every item has one span, all on `stage`
    int64_t stage = 0;
    int min_first = 0, max_first = 0, min_last = 0, max_last = 0;
    int64_t max_end = 0;
    // The widest gap between an item's offset and the highest end below it in the chunk: a
    // buffer narrower than every gap cannot fit between the chunk's items.
    int64_t widest_gap = INT64_MIN;
  };

  static void summarise(Chunk& c) {
    const Item& f = c.items.front();
    c.one_stage = true;
    c.stage = f.span.stage;
    c.min_first = c.max_first = f.span.first;
    c.min_last = c.max_last = f.span.last;
    c.max_end = f.at.second;
    c.widest_gap = INT64_MIN;
    for (size_t k = 1; k < c.items.size(); ++k) {
      const Item& it = c.items[k];
      c.widest_gap = std::max(c.widest_gap, it.at.first - c.max_end);
      c.max_end = std::max(c.max_end, it.at.second);
      c.min_first = std::min(c.min_first, it.span.first);
      c.max_first = std::max(c.max_first, it.span.first);
      c.min_last = std::min(c.min_last, it.span.last);
      c.max_last = std::max(c.max_last, it.span.last);
    }
    for (const Item& it : c.items) c.one_stage = c.one_stage && it.one_span && it.span.stage == c.stage;
  }

  const std::vector<Buffer>& bufs_;
  std::vector<Chunk> chunks_;
};

// Placed short-lived buffers, per stage, by time bucket: each leaf lists the buffers touching its
// bucket, and each node of a tree over the buckets keeps the union of those buffers' extents (as
// disjoint segments, by offset). A buffer's live span in the way is found in the leaves at its two
// ends, where a buffer there may or may not be live with it; every buffer touching a bucket
// strictly between is, so there the union of a few nodes stands for them all, however many.
class ShortLived {
 public:
  ShortLived(int64_t stages, size_t buckets) : leaves_(1) {
    while (leaves_ < buckets) leaves_ *= 2;
    items_.resize(size_t(stages) * leaves_);
    cover_.resize(size_t(stages) * 2 * leaves_);
  }

  void insert(size_t buf, const Buffer& b, int64_t offset) {
    const Extent e{offset, offset + b.size};
    for (const LiveSpan& s : b.live)
      for (size_t k = bucket(s.first); k <= bucket(std::max(s.last, s.first)); ++k) {
        items_[size_t(s.stage) * leaves_ + k].push_back(buf);
        for (size_t n = leaves_ + k; n >= 1; n /= 2) add(cover_[size_t(s.stage) * 2 * leaves_ + n], e);
      }
  }

  // What is in b's way: the extents of the buffers at its spans' end buckets that are live with it
  // (into busy, sorted), and the unions standing for the buckets in between (into covers).
  void gather(size_t bi, const std::vector<Buffer>& bufs, const std::vector<int64_t>& offset, std::vector<size_t>& seen,
              std::vector<Extent>& busy, std::vector<const std::vector<Extent>*>& covers) const {
    const Buffer& b = bufs[bi];
    busy.clear();
    covers.clear();
    for (const LiveSpan& s : b.live) {
      const size_t kf = bucket(s.first), kl = bucket(std::max(s.last, s.first));
      for (size_t k : {kf, kl})
        for (size_t pj : items_[size_t(s.stage) * leaves_ + k]) {
          if (seen[pj] == bi || !overlap(b.live, bufs[pj].live)) continue;
          seen[pj] = bi;
          busy.push_back({offset[pj], offset[pj] + bufs[pj].size});
        }
      // The tree's nodes covering leaves kf + 1 .. kl - 1 exactly.
      const std::vector<Extent>* tree = &cover_[size_t(s.stage) * 2 * leaves_];
      for (size_t lo = leaves_ + kf + 1, hi = leaves_ + kl; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) covers.push_back(&tree[lo++]);
        if (hi & 1) covers.push_back(&tree[--hi]);
      }
    }
    std::sort(busy.begin(), busy.end());
  }

 private:
  // Adds [e.first, e.second) to disjoint sorted segments, merging those it overlaps or touches.
  static void add(std::vector<Extent>& segs, Extent e) {
    auto lo = std::lower_bound(segs.begin(), segs.end(), e.first, [](const Extent& s, int64_t x) { return s.second < x; });
    auto hi = lo;
    while (hi != segs.end() && hi->first <= e.second) {
      e.first = std::min(e.first, hi->first);
      e.second = std::max(e.second, hi->second);
      ++hi;
    }
    if (lo == hi) {
      segs.insert(lo, e);
      return;
    }
    *lo = e;
    segs.erase(lo + 1, hi);
  }

  size_t leaves_;
  std::vector<std::vector<size_t>> items_;        // per stage and leaf
  std::vector<std::vector<Extent>> cover_;        // per stage, a tree: node n's children 2n, 2n + 1
};

// Moves past a sorted list of extents in the way that start below off + size; resumable.
struct SortedWalk {
  const std::vector<Extent>* list;
  size_t next = 0;
  int64_t advance(int64_t off, int64_t size) {
    for (; next < list->size() && (*list)[next].first < off + size; ++next) off = std::max(off, (*list)[next].second);
    return off;
  }
};

}  // namespace

std::vector<int64_t> place_first_fit(const std::vector<Buffer>& bufs, const std::vector<size_t>& order, int steps) {
  std::vector<int64_t> offset(bufs.size(), -1);
  int64_t stages = 1;
  for (const Buffer& b : bufs)
    for (const LiveSpan& s : b.live) stages = std::max(stages, s.stage + 1);
  ShortLived short_lived(stages, bucket(steps) + 1);
  LongLived long_lived(bufs);
  std::vector<size_t> seen(bufs.size(), SIZE_MAX);
  std::vector<Extent> busy;
  std::vector<const std::vector<Extent>*> covers;
  std::vector<SortedWalk> walks;
  for (size_t bi : order) {
    const Buffer& b = bufs[bi];
    short_lived.gather(bi, bufs, offset, seen, busy, covers);
    walks.assign(1, SortedWalk{&busy});
    for (const std::vector<Extent>* c : covers) walks.push_back(SortedWalk{c});
    LongLived::Walk long_walk(long_lived, b);
    // Move past whatever is in the way until nothing is: the lowest offset where b fits, as a walk
    // over every buffer in its way sorted by offset would find it.
    int64_t off = 0;
    for (bool moved = true; moved;) {
      const int64_t was = off;
      for (SortedWalk& w : walks) off = w.advance(off, b.size);
      off = long_walk.advance(off);
      moved = off != was;
    }
    offset[bi] = off;
    util::add_or_throw(off, b.size, "memory plan: arena bytes");
    if (is_long(b)) long_lived.insert(bi, off);
    else short_lived.insert(bi, b, off);
  }
  return offset;
}

}  // namespace shardlab::plan
