// `ember bench inference` on the CPU: a fresh tiny policy of each registered type, eagerly, through
// the engine and through a loopback ember serve; bad options refused naming the flag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "bench/inference_bench.h"
#include "ember/core/error.h"
#include "ember/model/policy_type.h"
#include "test_util.h"

namespace ember {
namespace {

TEST(InferenceBench, OneLinePerModeAndBatchSizeForEveryType) {
  for (const auto& type : model::policy_types()) {
    bench::InferenceBenchOptions o;
    o.policy_type = type.name;
    o.preset = "tiny";
    o.batch_sizes = {1, 2};
    o.warmup = 1;
    o.iters = 2;
    o.device = "cpu";
    o.socket = true;
    o.image_size = 32;
    auto lines = bench::run_inference_bench(o, "test");
    ASSERT_EQ(lines.size(), 6u) << type.name;
    for (size_t i = 0; i < lines.size(); ++i) {
      auto j = nlohmann::json::parse(lines[i]);
      EXPECT_EQ(j.at("bench"), "inference");
      EXPECT_EQ(j.at("mode"), i < 2 ? "eager" : i < 4 ? "engine" : "socket");
      // the engine samples the eager chunks (on the CPU it runs eagerly: the same numbers)
      if (i >= 2 && i < 4) {
        EXPECT_LT(j.at("max_abs_diff_to_eager").get<double>(), 1e-5) << type.name;
      }
      EXPECT_EQ(j.at("policy"), type.name);
      EXPECT_EQ(j.at("batch_size").get<int>(), i % 2 ? 2 : 1);
      EXPECT_GT(j.at("latency_ms_p50").get<double>(), 0);
      EXPECT_GE(j.at("latency_ms_p99").get<double>(), j.at("latency_ms_p50").get<double>());
      EXPECT_GT(j.at("chunks_per_s").get<double>(), 0);
    }
  }
}

TEST(InferenceBench, BadOptionsNameTheFlag) {
  auto message = [](auto change) {
    bench::InferenceBenchOptions o;
    o.device = "cpu";
    change(o);
    return test::error_of([&] { bench::run_inference_bench(o, "test"); }, ErrorKind::kInvalidArgument);
  };
  EXPECT_NE(message([](auto& o) { o.batch_sizes = {0}; }).find("--batch_size 0"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.iters = 0; }).find("--iters"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.preset = "huge"; }).find("--preset"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.policy_type = "nope"; }).find("--policy.type"), std::string::npos);
}

}  // namespace
}  // namespace ember
