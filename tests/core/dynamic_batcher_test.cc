// core::DynamicBatcher: a batch at max_batch requests or when the oldest has waited the timeout;
// close() drains what is left (RL's rollout and ember serve's engine both stand on it).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "ember/core/dynamic_batcher.h"

namespace ember::core {
namespace {

TEST(Batcher, RunsAtMaxBatchOrAfterTheTimeout) {
  using namespace std::chrono;
  DynamicBatcher<int> b(3, milliseconds(50));
  for (int i = 0; i < 4; ++i) b.push(i);
  auto t0 = steady_clock::now();
  auto full = b.take();  // 3 waiting: at once
  EXPECT_LT(duration<double>(steady_clock::now() - t0).count(), 0.04);
  EXPECT_EQ(full, (std::vector<int>{0, 1, 2}));
  auto partial = b.take();  // one left: after the oldest waited 50 ms
  EXPECT_GE(duration<double>(steady_clock::now() - t0).count(), 0.045);
  EXPECT_EQ(partial, (std::vector<int>{3}));
  // a request arriving from another thread while the consumer waits
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    b.push(7), b.push(8), b.push(9);
  });
  EXPECT_EQ(b.take(), (std::vector<int>{7, 8, 9}));
  producer.join();
  b.push(5);
  b.close();
  EXPECT_EQ(b.take(), (std::vector<int>{5}));  // drained after close
  EXPECT_TRUE(b.take().empty());
}

}  // namespace
}  // namespace ember::core
