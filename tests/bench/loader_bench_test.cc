// `ember bench loader` on the v3.0 fixture (CPU, tiny preset).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "bench/loader_bench.h"
#include "ember/core/error.h"

namespace ember {
namespace {

const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

// `ember bench loader`: one line per thread count, full batches, both producer stages timed;
// bad options are refused naming the option.
TEST(LoaderBench, OneLinePerThreadCountWithBothStagesTimed) {
  bench::LoaderBenchOptions o;
  o.root = kFixture;
  o.preset = "tiny";
  o.batch_size = 4;
  o.workers = {1, 2};
  o.warmup = 1;
  o.steps = 2;
  auto lines = bench::run_loader_bench(o);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j.at("bench"), "loader");
    EXPECT_EQ(j.at("workers").get<int>(), o.workers[i]);
    EXPECT_GT(j.at("samples_per_s").get<double>(), 0);
    EXPECT_GT(j.at("build_s").get<double>(), 0);
    EXPECT_GT(j.at("collate_s").get<double>(), 0);
  }
  o.attention = "padded";
  o.workers = {2};
  EXPECT_EQ(bench::run_loader_bench(o).size(), 1u);

  auto message = [&](bench::LoaderBenchOptions bad) {
    try {
      bench::run_loader_bench(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  bench::LoaderBenchOptions bad = o;
  bad.workers = {2, 0};
  EXPECT_NE(message(bad).find("--workers"), std::string::npos) << message(bad);
  bad = o;
  bad.batch_size = 0;
  EXPECT_NE(message(bad).find("--batch_size"), std::string::npos) << message(bad);
  bad = o;
  bad.root = kFixture + "/no_such_dataset";
  EXPECT_NE(message(bad).find("no_such_dataset"), std::string::npos) << message(bad);
}

}  // namespace
}  // namespace ember
