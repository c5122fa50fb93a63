#include "engine/backends/mpi/mpi_mailbox.h"

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "engine/util/error.h"

namespace shardlab::backends::mpi {

namespace {

// What travels before the data, so a receiver can tell which of its messages arrived.
struct Header {
  int64_t magic, from, to, tag, count, type;
};
constexpr int64_t kMagic = 0x53484d41494cll;

std::string message_str(int from, int to, int64_t tag) {
  return "pipeline message " + std::to_string(tag) + " from device " + std::to_string(from) + " to device " + std::to_string(to);
}

}  // namespace

MpiMailbox::MpiMailbox(std::shared_ptr<MpiWorld> world, Hooks hooks) : world_(std::move(world)), hooks_(std::move(hooks)) {}

MpiMailbox::~MpiMailbox() {
  // A finished run's sends have all been received; give MPI a moment to say so before their
  // buffers go. A stopped run leaves them to the dying process.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  try {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(out_mu_);
        reclaim_locked();
        if (outgoing_.empty() || hooks_.stop()) break;
      }
      if (std::chrono::steady_clock::now() > until) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(out_mu_);
  for (auto& o : outgoing_)
    if (o->request != MPI_REQUEST_NULL) world_->locked([&] { MPI_Request_free(&o->request); });
  // Buffers of requests MPI still holds are leaked on purpose: freeing them under a live send or
  // receive is worse, and the process is ending.
  for (auto& o : outgoing_) (void)o.release();
  std::lock_guard<std::mutex> kept(kept_mu_);
  if (!abandoned_.empty()) (void)new std::vector<std::vector<std::byte>>(std::move(abandoned_));
}

void MpiMailbox::reclaim_locked() {
  world_->locked([&] {
    for (auto& o : outgoing_) {
      int done = 0;
      MpiWorld::check(MPI_Test(&o->request, &done, MPI_STATUS_IGNORE), "MPI_Test (pipeline send)");
    }
  });
  std::erase_if(outgoing_, [](const std::unique_ptr<Outgoing>& o) { return o->request == MPI_REQUEST_NULL; });
}

void MpiMailbox::post(int device, int peer, int64_t tag, const void* buf, int64_t count, DType t) {
  if (hooks_.stop()) throw Error(hooks_.why());
  if (peer > world_->tag_limit())
    throw Error("pipeline: device " + std::to_string(peer) + " is past the " + std::to_string(world_->tag_limit()) +
                " devices this MPI can address by tag");
  const size_t data = size_t(count) * dtype_size(t);
  if (sizeof(Header) + data > size_t(INT_MAX))
    throw Error(message_str(device, peer, tag) + ": " + std::to_string(data) + " bytes in one message; the limit is 2 GiB");
  auto o = std::make_unique<Outgoing>();
  o->bytes.resize(sizeof(Header) + data);
  const Header h{kMagic, device, peer, tag, count, int64_t(t)};
  std::memcpy(o->bytes.data(), &h, sizeof h);
  if (data) std::memcpy(o->bytes.data() + sizeof h, buf, data);
  std::lock_guard<std::mutex> lock(out_mu_);
  reclaim_locked();
  world_->locked([&] {
    MpiWorld::check(MPI_Isend(o->bytes.data(), int(o->bytes.size()), MPI_BYTE, hooks_.process_of(peer), peer,
                              world_->pipeline_comm(), &o->request),
                    "MPI_Isend (" + message_str(device, peer, tag) + ")");
  });
  outgoing_.push_back(std::move(o));
}

bool MpiMailbox::receive_one(int device, int process, std::vector<std::byte>& got) {
  bool found = false;
  try {
    world_->complete(
        [&](std::vector<MPI_Request>& reqs) {
          int flag = 0;
          MPI_Message msg;
          MPI_Status st;
          MpiWorld::check(MPI_Improbe(process, device, world_->pipeline_comm(), &flag, &msg, &st), "MPI_Improbe (pipeline)");
          if (!flag) return;
          int bytes = 0;
          MPI_Get_count(&st, MPI_BYTE, &bytes);
          got.resize(size_t(bytes));
          reqs.emplace_back();
          MpiWorld::check(MPI_Imrecv(got.data(), bytes, MPI_BYTE, &msg, &reqs.back()), "MPI_Imrecv (pipeline)");
          found = true;
        },
        hooks_.stop, hooks_.why);
  } catch (...) {
    // A stop mid-receive leaves the receive to the dying process, with the buffer it names: kept,
    // not freed under it.
    if (found) {
      std::lock_guard<std::mutex> lock(kept_mu_);
      abandoned_.push_back(std::move(got));
    }
    throw;
  }
  return found;
}

void MpiMailbox::take(int device, int peer, int64_t tag, void* buf, int64_t count, DType t) {
  const auto key = std::make_tuple(device, peer, tag);
  std::vector<std::byte> msg;
  bool idle = false;
  auto wake = [&] {
    if (idle && hooks_.busy) hooks_.busy();
    idle = false;
  };
  try {
    for (int polls = 0;; ++polls) {
      {
        std::lock_guard<std::mutex> lock(kept_mu_);
        if (auto it = kept_.find(key); it != kept_.end()) {
          msg = std::move(it->second);
          kept_.erase(it);
          break;
        }
      }
      std::vector<std::byte> got;
      if (receive_one(device, hooks_.process_of(peer), got)) {
        Header h{};
        if (got.size() < sizeof h) throw Error(message_str(peer, device, tag) + ": a message of " + std::to_string(got.size()) + " bytes");
        std::memcpy(&h, got.data(), sizeof h);
        if (h.magic != kMagic || h.to != device)
          throw Error(message_str(peer, device, tag) + ": a message that is not a pipeline transfer to this device arrived");
        if (std::make_tuple(int(h.to), int(h.from), h.tag) == key) {
          msg = std::move(got);
          break;
        }
        std::lock_guard<std::mutex> lock(kept_mu_);
        if (!kept_.emplace(std::make_tuple(int(h.to), int(h.from), h.tag), std::move(got)).second)
          throw Error(message_str(int(h.from), device, h.tag) + " arrived twice before it was taken");
        polls = 0;
        continue;
      }
      if (hooks_.stop()) throw Error(hooks_.why());
      {
        std::lock_guard<std::mutex> lock(out_mu_);
        reclaim_locked();  // keeps this process's own sends moving while it waits
      }
      // A stage waiting for its neighbour is the pipeline's bubble: lend the core, spin briefly, then sleep.
      if (!idle && hooks_.idle) hooks_.idle();
      idle = true;
      if (polls < 2000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(polls < 20000 ? 20 : 200));
    }
  } catch (...) {
    wake();
    throw;
  }
  wake();
  Header h{};
  std::memcpy(&h, msg.data(), sizeof h);
  if (h.count != count || h.type != int64_t(t))
    throw Error(message_str(peer, device, tag) + " has " + std::to_string(h.count) + " " + dtype_name(DType(h.type)) +
                " elements; the receiver expects " + std::to_string(count) + " " + dtype_name(t));
  if (msg.size() != sizeof h + size_t(count) * dtype_size(t))
    throw Error(message_str(peer, device, tag) + ": its length does not match its header");
  if (count) std::memcpy(buf, msg.data() + sizeof h, msg.size() - sizeof h);
}

}  // namespace shardlab::backends::mpi
