#pragma once
// Asks every loop of a pool for a snapshot of what it owns, and hands the
// snapshots to `done` once all are in: state stays with its loop (no locks,
// no atomics on the hot path), and a reader gets a consistent view of each
// loop's part. `take(w)` runs on slot w's executor (loop w in the
// loop-per-thread design; in the thread-pool design a strand that connections
// do not run on, so what `take` reads must then be thread-safe); `done` runs
// on whichever answered last, so it should be short (post elsewhere for
// more). A loop that has stopped never answers, and `done` is then never called.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include <volley/net/loop_pool.hpp>

namespace volley::net {

template <class Snapshot>
void gather(LoopPool& loops, std::function<Snapshot(std::size_t)> take,
            std::function<void(std::vector<Snapshot>)> done) {
  struct Round {
    std::vector<Snapshot> parts;
    std::atomic<std::size_t> left;
    std::function<Snapshot(std::size_t)> take;
    std::function<void(std::vector<Snapshot>)> done;
  };
  auto round = std::make_shared<Round>();
  round->parts.resize(loops.size());
  round->left.store(loops.size());
  round->take = std::move(take);
  round->done = std::move(done);
  for (std::size_t w = 0; w < loops.size(); ++w)
    boost::asio::post(loops.slot_executor(w), [round, w] {
      round->parts[w] = round->take(w);
      // The last to finish sees every part (acquire pairs with the others' release).
      if (round->left.fetch_sub(1, std::memory_order_acq_rel) == 1) round->done(std::move(round->parts));
    });
}

}  // namespace volley::net
