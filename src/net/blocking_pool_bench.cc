// Handing a blocking handler to a thread: BlockingPool beside asio::thread_pool (what the
// server used before) in the same run. Each iteration posts a task and waits until it has run,
// which is what a blocking route costs on top of its handler. A second pair posts 64 at a time.
#include <benchmark/benchmark.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <latch>

#include "net/blocking_pool.h"

namespace warren::net {
namespace {

template <typename PostFn>
void PostAndWait(benchmark::State& state, PostFn post) {
  const int batch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    std::latch done(batch);
    for (int i = 0; i < batch; ++i) post([&done] { done.count_down(); });
    done.wait();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_BlockingPool(benchmark::State& state) {
  BlockingPool pool(16);
  PostAndWait(state, [&](auto task) { pool.Post(task); });
}
BENCHMARK(BM_BlockingPool)->Arg(1)->Arg(64)->UseRealTime();

void BM_AsioThreadPool(benchmark::State& state) {
  boost::asio::thread_pool pool(16);
  PostAndWait(state, [&](auto task) { boost::asio::post(pool, task); });
  pool.join();
}
BENCHMARK(BM_AsioThreadPool)->Arg(1)->Arg(64)->UseRealTime();

}  // namespace
}  // namespace warren::net
