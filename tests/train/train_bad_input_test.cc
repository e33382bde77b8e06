// Bad input to the trainer fails before any work, naming the flag or the checkpoint file and
// field: absurd sizes, an output_dir that is a file, a checkpoint whose trainer_state.json,
// policy.json or tensor bytes were damaged (issue 26).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/train/trainer.h"
#include "test_util.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

std::vector<std::string> tiny_flags(const std::string& out, int64_t steps) {
  return {"--dataset.root=" + kFixture, "--output_dir=" + out, "--device=cpu", "--steps=" + std::to_string(steps),
          "--batch_size=4", "--policy.horizon=4", "--dataset.image_size=32", "--num_workers=1", "--log_freq=50",
          "--save_freq=100000", "--dataset.episodes=[0]"};
}

TrainerHooks quiet() {
  TrainerHooks h;
  h.quiet = true;
  return h;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error()) << e.what();
    return e.what();
  }
  return "no error";
}

void expect_has(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(TrainBadInput, AbsurdSizesAreRefusedNamingTheFlag) {
  test::TempDir dir;
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"batch_size", "1000000000"}, {"batch_size", "9223372036854775807"}, {"policy.horizon", "1000000000"},
           {"policy.horizon", "100000"}, {"dataset.image_size", "100000"}, {"num_workers", "1000000"},
           {"gradient_accumulation_steps", "0"}, {"gradient_accumulation_steps", "100000"}}) {
    auto flags = tiny_flags(dir.path() + "/run", 1);
    flags.push_back("--" + flag + "=" + value);
    expect_has(error_of([&] { validate(parse_train_flags(flags)); }), "--" + flag);
  }
}

TEST(TrainBadInput, DeeplyNestedConfigFileIsRefusedNamingIt) {
  test::TempDir dir;
  const std::string path = dir.path() + "/config.json";
  std::ofstream(path) << std::string(100000, '[') << std::string(100000, ']');
  auto flags = tiny_flags(dir.path() + "/run", 1);
  flags.push_back("--config_path=" + path);
  auto message = error_of([&] { parse_train_flags(flags); });
  expect_has(message, path);
  expect_has(message, "nested deeper");
}

TEST(TrainBadInput, TokenBudgetTooSmallNamesTheFlag) {
  test::TempDir dir;
  auto flags = tiny_flags(dir.path() + "/run", 1);
  flags.push_back("--policy.token_budget=8");
  expect_has(error_of([&] { train(parse_train_flags(flags), quiet()); }), "--policy.token_budget=8");
}

TEST(TrainBadInput, OutputDirThatIsAFileIsRefused) {
  test::TempDir dir;
  std::ofstream(dir.path() + "/file") << "x";
  expect_has(error_of([&] { train(parse_train_flags(tiny_flags(dir.path() + "/file", 1)), quiet()); }), "--output_dir");
}

// A run of 2 steps with its checkpoint; `damage` edits it, then resuming must fail with a message
// naming `expected`.
void expect_resume_fails(const std::function<void(const fs::path&)>& damage, const std::string& expected) {
  test::TempDir dir;
  const std::string out = dir.path() + "/run";
  train(parse_train_flags(tiny_flags(out, 2)), quiet());
  auto latest = find_latest_checkpoint(out);
  ASSERT_TRUE(latest);
  damage(latest->dir);
  auto flags = tiny_flags(out, 4);
  flags.push_back("--resume=true");
  expect_has(error_of([&] { train(parse_train_flags(flags), quiet()); }), expected);
}

void edit_state(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  const std::string path = (dir / "trainer_state.json").string();
  auto j = read_json_file(path);
  edit(j);
  std::ofstream(path) << j.dump();
  write_checksums(dir);  // the edit is not what the checksums catch
}

TEST(TrainBadInput, TrainerStateWithAnotherStepIsRefused) {
  expect_resume_fails([](const fs::path& d) { edit_state(d, [](auto& j) { j["step"] = -5; }); }, "\"step\" is -5");
  expect_resume_fails([](const fs::path& d) { edit_state(d, [](auto& j) { j["step"] = INT64_MAX; }); }, "trainer_state.json");
}

TEST(TrainBadInput, TrainerStateWithABadRngOrLoaderPositionNamesTheFile) {
  expect_resume_fails([](const fs::path& d) { edit_state(d, [](auto& j) { j["rng"]["cpu"] = "zz"; }); }, "\"rng\"[\"cpu\"]: not a hex");
  expect_resume_fails([](const fs::path& d) { edit_state(d, [](auto& j) { j["rng"]["cpu"] = "00ff"; }); }, "\"rng\"");
  expect_resume_fails([](const fs::path& d) { edit_state(d, [](auto& j) { j["loader"]["epoch"] = -1; }); },
                      "trainer_state.json: \"loader\"");
}

TEST(TrainBadInput, DamagedTensorBytesAreCaughtAtLoad) {
  auto flip = [](const fs::path& d) {
    const auto path = d / "model.safetensors";
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(int64_t(fs::file_size(path)) / 2);
    char c;
    f.read(&c, 1);
    f.seekp(int64_t(fs::file_size(path)) / 2);
    c = char(c ^ 0x5a);
    f.write(&c, 1);
  };
  expect_resume_fails(flip, "model.safetensors: damaged since it was saved");
  test::TempDir dir;
  train(parse_train_flags(tiny_flags(dir.path() + "/run", 2)), quiet());
  auto latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(latest);
  EXPECT_TRUE(fs::exists(latest->dir / "checksums.json"));
  flip(latest->dir);
  expect_has(error_of([&] { load_policy(latest->dir, at::kCPU); }), "damaged since it was saved");
}

TEST(TrainBadInput, PolicyJsonWithAnAbsurdWidthIsRefused) {
  test::TempDir dir;
  train(parse_train_flags(tiny_flags(dir.path() + "/run", 2)), quiet());
  auto latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(latest);
  const std::string path = (latest->dir / "policy.json").string();
  auto j = read_json_file(path);
  j["lm"]["width"] = 1000000000;
  std::ofstream(path) << j.dump();
  write_checksums(latest->dir);
  expect_has(error_of([&] { load_policy(latest->dir, at::kCPU); }), "policy.json");
}

}  // namespace
}  // namespace ember::train
