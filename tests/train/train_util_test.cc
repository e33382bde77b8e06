// The trainer's parts that need no libtorch: the learning-rate schedule, metrics.jsonl and the
// terminal, and the run configuration (flags, JSON, validation).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/train/metrics.h"
#include "ember/train/schedule.h"
#include "ember/train/train_config.h"
#include "test_util.h"

using namespace ember::train;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

std::string file_text(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(char(c));
  return s;
}

// The kInvalidArgument message of parsing these flags.
std::string flag_error(const std::vector<std::string>& args) {
  try {
    parse_train_flags(args);
  } catch (const ember::Error& e) {
    EXPECT_EQ(e.kind(), ember::ErrorKind::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "parsed without an error";
  return "";
}

const std::vector<std::string> kRequired = {"--dataset.root=/data/d", "--output_dir=/tmp/run"};

std::vector<std::string> with_required(std::vector<std::string> args) {
  args.insert(args.begin(), kRequired.begin(), kRequired.end());
  return args;
}

}  // namespace

// --- schedule ------------------------------------------------------------------------------

// Values worked out by hand from LeRobot's lr_lambda (W = 10, D = 100, floor 0.1).
TEST(Schedule, MatchesLeRobotCosineDecayWithWarmup) {
  const double base = 2.0;
  EXPECT_DOUBLE_EQ(lr_at(0, base, 10, 100, 0.1), base / 11);
  EXPECT_DOUBLE_EQ(lr_at(5, base, 10, 100, 0.1), base * ((1.0 / 11 - 1) * 0.5 + 1));
  // the cosine runs from step 0, so the end of warmup is already a little below the peak
  EXPECT_NEAR(lr_at(10, base, 10, 100, 0.1), base * (0.1 + 0.45 * (1 + std::cos(M_PI * 0.1))), 1e-15);
  EXPECT_NEAR(lr_at(50, base, 10, 100, 0.1), base * 0.55, 1e-15);
  EXPECT_DOUBLE_EQ(lr_at(100, base, 10, 100, 0.1), base * 0.1);
  EXPECT_DOUBLE_EQ(lr_at(1000, base, 10, 100, 0.1), base * 0.1);
  // no warmup: the peak at step 0
  EXPECT_DOUBLE_EQ(lr_at(0, base, 0, 100, 0.0), base);
  EXPECT_DOUBLE_EQ(lr_at(100, base, 0, 100, 0.0), 0.0);
  // rising through warmup, falling after
  for (int64_t s = 1; s < 10; ++s) EXPECT_GT(lr_at(s, base, 10, 100, 0.1), lr_at(s - 1, base, 10, 100, 0.1));
  for (int64_t s = 11; s <= 100; ++s) EXPECT_LT(lr_at(s, base, 10, 100, 0.1), lr_at(s - 1, base, 10, 100, 0.1));
}

TEST(Schedule, AutoScalesShortRunsLikeLeRobot) {
  // LeRobot's own example: --steps=3000 scales warmup 1000 -> 100 and decay 30000 -> 3000
  ScheduleSteps s = fit_schedule(1000, 30000, 3000);
  EXPECT_EQ(s.warmup_steps, 100);
  EXPECT_EQ(s.decay_steps, 3000);
  s = fit_schedule(1000, 30000, 30000);
  EXPECT_EQ(s.warmup_steps, 1000);
  EXPECT_EQ(s.decay_steps, 30000);
  s = fit_schedule(1000, 30000, 100000);  // longer runs keep the schedule, then stay at the floor
  EXPECT_EQ(s.decay_steps, 30000);
  s = fit_schedule(1000, 30000, 299);  // int() truncates
  EXPECT_EQ(s.warmup_steps, 9);
  LrSchedule sched{2.5e-5, 0.1, fit_schedule(1000, 30000, 3000)};
  EXPECT_DOUBLE_EQ(sched.at(3000), 2.5e-6);
}

// --- metrics -------------------------------------------------------------------------------

TEST(Metrics, WritesOneJsonObjectPerLogCall) {
  ember::test::TempDir dir("ember_metrics");
  {
    MetricsLogger::Options o;
    o.terminal = nullptr;
    MetricsLogger log(dir.path(), 1000, 0, o);
    log.log(200, 0.5, {{"lr", 2.5e-5}, {"grad_norm", 1.25}, {"samples_per_s", 80}});
    log.log(400, NAN, {{"mfu", 0.55}});
    // flushed per line: visible before the logger goes
    EXPECT_EQ(lines_of(read_text(log.path().string())).size(), 2u);
  }
  auto lines = lines_of(read_text(dir.path() + "/metrics.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"step":200,"loss":0.5,"lr":2.5e-05,"grad_norm":1.25,"samples_per_s":80})");
  EXPECT_EQ(lines[1], R"({"step":400,"loss":NaN,"mfu":0.55})");
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["step"], 200);
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 2.5e-5);
}

TEST(Metrics, ResumeDropsLinesAfterTheCheckpointAndTornLines) {
  ember::test::TempDir dir("ember_metrics");
  MetricsLogger::Options quiet;
  quiet.terminal = nullptr;
  {
    MetricsLogger log(dir.path(), 1000, 0, quiet);
    for (int64_t s = 100; s <= 500; s += 100) log.log(s, 1.0 / double(s));
  }
  {  // a run killed mid-line
    std::ofstream out(dir.path() + "/metrics.jsonl", std::ios::app);
    out << R"({"step":600,"lo)";
  }
  {
    MetricsLogger log(dir.path(), 1000, 300, quiet);
    auto lines = lines_of(read_text(log.path().string()));
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_TRUE(lines[2].starts_with(R"({"step":300,)"));
    log.log(400, 0.1);
  }
  auto lines = lines_of(read_text(dir.path() + "/metrics.jsonl"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], R"({"step":400,"loss":0.1})");
  // a fresh run (0) starts an empty file
  MetricsLogger fresh(dir.path(), 1000, 0, quiet);
  EXPECT_EQ(read_text(fresh.path().string()), "");
}

TEST(Metrics, PlainLinesWhenNotATerminal) {
  ember::test::TempDir dir("ember_metrics");
  std::FILE* out = std::tmpfile();
  MetricsLogger::Options o;
  o.terminal = out;  // a file: not a TTY
  {
    MetricsLogger log(dir.path(), 1000, 0, o);
    EXPECT_FALSE(log.showing_bar());
    log.tick(1);
    log.log(200, 0.25, {{"lr", 1e-4}, {"tokens_per_s", 5}});
    log.print("saved checkpoint 000200");
  }
  const std::string text = file_text(out);
  std::fclose(out);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("step 200/1000 loss 0.25 lr 0.0001"), std::string::npos) << text;
  EXPECT_EQ(text.find("tokens_per_s"), std::string::npos) << "only the shown keys";
  EXPECT_NE(text.find("saved checkpoint 000200\n"), std::string::npos);
}

TEST(Metrics, BarRedrawsOneLineAndEstimatesTime) {
  ember::test::TempDir dir("ember_metrics");
  std::FILE* out = std::tmpfile();
  MetricsLogger::Options o;
  o.terminal = out;
  o.progress_bar = 1;
  o.ema_weight = 0.5;
  MetricsLogger log(dir.path(), 100, 0, o);
  EXPECT_TRUE(log.showing_bar());
  EXPECT_LT(log.eta_s(), 0);
  for (int64_t s = 0; s <= 4; ++s) {
    log.tick(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  log.log(5, 0.5);
  EXPECT_GT(log.seconds_per_step(), 0.005);
  EXPECT_LT(log.seconds_per_step(), 1.0);
  EXPECT_NEAR(log.eta_s(), 95 * log.seconds_per_step(), 1e-9);
  std::string text = file_text(out);
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line until finish()";
  EXPECT_NE(text.find("\rstep 5/100 [#...................] loss 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("eta "), std::string::npos);
  log.finish();
  text = file_text(out);
  EXPECT_EQ(text.back(), '\n');
  std::fclose(out);
}

TEST(Metrics, FormatDuration) {
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(7500), "2h05m");
  EXPECT_EQ(format_duration(3 * 86400 + 4 * 3600), "3d04h");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(NAN), "?");
}

// --- config --------------------------------------------------------------------------------

TEST(TrainConfig, DefaultsFollowLeRobotPi05) {
  TrainConfig c = parse_train_flags(kRequired);
  EXPECT_EQ(c.dataset.root, "/data/d");
  EXPECT_EQ(c.output_dir, "/tmp/run");
  EXPECT_EQ(c.policy.type, "pi05");
  EXPECT_EQ(c.policy.horizon, 50);
  EXPECT_EQ(c.policy.max_action_dim, 32);
  EXPECT_EQ(c.policy.num_steps, 10);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 2.5e-5);
  EXPECT_DOUBLE_EQ(c.optimizer.betas[1], 0.95);
  EXPECT_DOUBLE_EQ(c.optimizer.weight_decay, 0.01);
  EXPECT_EQ(c.scheduler.warmup_steps, 1000);
  EXPECT_EQ(c.scheduler.decay_steps, 30000);
  EXPECT_DOUBLE_EQ(c.scheduler.min_lr_ratio * c.optimizer.lr, 2.5e-6);
  EXPECT_EQ(c.steps, 30000);
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_EQ(c.seed, 1000);
  EXPECT_EQ(c.log_freq, 200);
  EXPECT_EQ(c.save_freq, 20000);
  EXPECT_FALSE(c.num_workers);  // default_num_workers() decides
  EXPECT_FALSE(c.resume);
  EXPECT_EQ(c.device, "auto");
  EXPECT_FALSE(c.policy.tokenizer_path);
}

TEST(TrainConfig, ParsesBothFlagSyntaxes) {
  TrainConfig c = parse_train_flags(with_required(
      {"--steps=500", "--batch_size", "4", "--policy.preset=small", "--policy.attention", "padded",
       "--optimizer.lr=1e-4", "--optimizer.betas=[0.8,0.9]", "--dataset.episodes=0,2,5", "--resume",
       "--policy.tokenizer_path", "/t/tok.model", "--policy.token_budget=4096", "--device=cpu",
       "--policy.dtype=fp32", "--dist.zero=1", "--seed", "-3"}));
  EXPECT_EQ(c.steps, 500);
  EXPECT_EQ(c.batch_size, 4);
  EXPECT_EQ(c.policy.preset, "small");
  EXPECT_EQ(c.policy.attention, "padded");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(c.optimizer.betas[0], 0.8);
  EXPECT_EQ(c.dataset.episodes, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_TRUE(c.resume);
  EXPECT_EQ(c.policy.tokenizer_path, "/t/tok.model");
  EXPECT_EQ(c.policy.token_budget, 4096);
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.policy.dtype, "fp32");
  EXPECT_EQ(c.dist.zero, 1);
  EXPECT_EQ(c.seed, -3);
  // booleans: explicit values, either syntax; the last repeat wins
  EXPECT_FALSE(parse_train_flags(with_required({"--resume=true", "--resume", "false"})).resume);
  EXPECT_TRUE(parse_train_flags(with_required({"--resume", "--steps=3"})).resume);
  // null unsets an optional
  EXPECT_FALSE(parse_train_flags(with_required({"--policy.token_budget=5", "--policy.token_budget=null"}))
                   .policy.token_budget);
}

TEST(TrainConfig, ErrorsNameTheFlag) {
  EXPECT_EQ(flag_error(with_required({"--policy.prest=1"})), "unknown flag --policy.prest (did you mean --policy.preset?)");
  EXPECT_EQ(flag_error(with_required({"--stepz=1"})), "unknown flag --stepz (did you mean --steps?)");
  EXPECT_EQ(flag_error(with_required({"--steps=ten"})), "--steps: expected an integer, got 'ten'");
  EXPECT_EQ(flag_error(with_required({"--steps=1.5"})), "--steps: expected an integer, got '1.5'");
  EXPECT_EQ(flag_error(with_required({"--optimizer.lr=fast"})), "--optimizer.lr: expected a number, got 'fast'");
  EXPECT_EQ(flag_error(with_required({"--resume=maybe"})), "--resume: expected true or false, got 'maybe'");
  EXPECT_EQ(flag_error(with_required({"--policy.attention=flash"})),
            "--policy.attention: expected one of varlen|padded, got 'flash'");
  EXPECT_EQ(flag_error(with_required({"--optimizer.betas=0.9"})),
            "--optimizer.betas: expected two numbers like [0.9,0.95], got '0.9'");
  EXPECT_EQ(flag_error(with_required({"--steps"})), "--steps: missing value");
  EXPECT_EQ(flag_error(with_required({"steps=3"})), "unexpected argument 'steps=3' (flags look like --name=value)");
  EXPECT_EQ(flag_error(with_required({"--steps=0"})), "--steps: expected 1 to 1000000000000, got 0");
  EXPECT_EQ(flag_error(with_required({"--optimizer.lr=-1"})), "--optimizer.lr: expected a positive number, got -1.0");
  EXPECT_EQ(flag_error(with_required({"--log_freq=0"})), "--log_freq: expected a positive integer, got 0");
  EXPECT_EQ(flag_error(with_required({"--dist.zero=2"})), "--dist.zero: expected 0 or 1, got 2");
  EXPECT_EQ(flag_error(with_required({"--dist.reduce_dtype=fp16"})), "--dist.reduce_dtype: expected one of fp32|bf16, got 'fp16'");
  EXPECT_EQ(flag_error(with_required({"--policy.param_dtype=fp16"})), "--policy.param_dtype: expected one of fp32|bf16, got 'fp16'");
  EXPECT_EQ(flag_error(with_required({"--policy.param_dtype=bf16", "--policy.dtype=fp32"})),
            "--policy.param_dtype: expected fp32 with --policy.dtype=fp32 (bf16 parameters compute in bf16)");
  EXPECT_EQ(flag_error(with_required({"--policy.prefix_multiple=-2"})),
            "--policy.prefix_multiple: expected 0 to 4096 tokens, got -2");
  EXPECT_EQ(flag_error(with_required({"--policy.prefix_multiple=64", "--policy.attention=padded"})),
            "--policy.prefix_multiple: expected 0 with --policy.attention=padded (the padded layout has fixed shapes), got 64");
  EXPECT_EQ(flag_error({"--output_dir=/x"}), "--dataset.root: expected a dataset directory (the flag is required)");
}

TEST(TrainConfig, JsonRoundTripAndConfigPath) {
  ember::test::TempDir dir("ember_config");
  TrainConfig c = parse_train_flags(with_required(
      {"--steps=123", "--dataset.episodes=[1,2]", "--optimizer.betas=0.5,0.6", "--policy.tokenizer_path=a.model"}));
  const std::string file = dir.path() + "/train_config.json";
  save_train_config(c, file);
  auto j = nlohmann::json::parse(read_text(file));
  EXPECT_EQ(j["policy"]["type"], "pi05");
  EXPECT_EQ(j["steps"], 123);
  EXPECT_TRUE(j["policy"]["token_budget"].is_null());
  EXPECT_EQ(to_json(load_train_config(file)), to_json(c));

  // --config_path loads first wherever it sits; later flags override it
  TrainConfig d = parse_train_flags({"--steps=7", "--config_path=" + file, "--batch_size", "3"});
  EXPECT_EQ(d.steps, 7);
  EXPECT_EQ(d.batch_size, 3);
  EXPECT_EQ(d.dataset.episodes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.policy.tokenizer_path, "a.model");
  EXPECT_DOUBLE_EQ(d.optimizer.betas[1], 0.6);

  // keys not known, and badly typed values, name the file and the key
  try {
    from_json(nlohmann::json::parse(R"({"policy": {"foo": 1}})"), "cfg.json");
    FAIL();
  } catch (const ember::Error& e) {
    EXPECT_STREQ(e.what(), "cfg.json: unknown key policy.foo");
  }
  try {
    from_json(nlohmann::json::parse(R"({"policy": {"horizon": "long"}})"), "cfg.json");
    FAIL();
  } catch (const ember::Error& e) {
    EXPECT_STREQ(e.what(), "cfg.json: policy.horizon: expected an integer, got \"long\"");
  }
  // a partial file keeps the defaults for what it lacks
  EXPECT_EQ(from_json(nlohmann::json::parse(R"({"steps": 9})")).batch_size, 8);
  // a missing file is kNotFound
  try {
    parse_train_flags({"--config_path=" + dir.path() + "/none.json"});
    FAIL();
  } catch (const ember::Error& e) {
    EXPECT_EQ(e.kind(), ember::ErrorKind::kNotFound);
  }
}

TEST(TrainConfig, FlagNamesCoverEveryField) {
  auto names = train_flag_names();
  EXPECT_EQ(names.front(), "dataset.root");
  EXPECT_NE(std::find(names.begin(), names.end(), "scheduler.warmup_steps"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "config_path"), names.end());
  // every name is a key of to_json (config_path aside)
  auto j = to_json(TrainConfig{});
  for (const std::string& n : names) {
    if (n == "config_path") continue;
    std::string pointer = "/" + n;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    EXPECT_TRUE(j.contains(nlohmann::ordered_json::json_pointer(pointer))) << n;
  }
}

// The loader hint: nothing at or below 20 % of the step time; above it, one line naming the
// wait, the flag and what to do.
TEST(DataWaitHint, NamesTheWaitTheFlagAndTheRemedy) {
  EXPECT_EQ(data_wait_hint(0.0, 4, 16), "");
  EXPECT_EQ(data_wait_hint(0.2, 4, 16), "");
  EXPECT_EQ(data_wait_hint(std::nan(""), 4, 16), "");
  auto h = data_wait_hint(0.39, 12, 32);
  EXPECT_NE(h.find("39%"), std::string::npos) << h;
  EXPECT_NE(h.find("--num_workers=12 on 32 cores"), std::string::npos) << h;
  EXPECT_NE(h.find("raise --num_workers (up to 32)"), std::string::npos) << h;
  EXPECT_NE(h.find("ember bench loader"), std::string::npos) << h;
  EXPECT_EQ(h.find('\n'), std::string::npos);
  auto full = data_wait_hint(0.5, 32, 32);
  EXPECT_EQ(full.find("raise"), std::string::npos) << full;
  EXPECT_NE(full.find("--dataset.image_size"), std::string::npos) << full;
}

// --num_workers unset: 4 on CPU; on CUDA the rank's share of the host's cores less one, 2..16.
TEST(TrainConfig, DefaultNumWorkersSharesTheHostAmongItsRanks) {
  EXPECT_EQ(default_num_workers(false, 32, 1), 4);
  EXPECT_EQ(default_num_workers(true, 16, 1), 15);
  EXPECT_EQ(default_num_workers(true, 32, 2), 15);
  EXPECT_EQ(default_num_workers(true, 128, 1), 16);
  EXPECT_EQ(default_num_workers(true, 2, 1), 2);
  EXPECT_EQ(default_num_workers(true, 16, 8), 2);
  EXPECT_EQ(default_num_workers(true, 0, 0), 2);
  auto c = parse_train_flags({"--dataset.root=/d", "--output_dir=/o", "--num_workers=6"});
  EXPECT_EQ(c.num_workers, 6);
}

// The loader's pool runs a batch's per-image copies with parallel_for.
TEST(ThreadPool, ParallelForRunsEveryIndexOnceAndRethrowsAfterAllFinish) {
  ember::ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(int64_t(hits.size()), [&](int64_t i) { hits[size_t(i)]++; });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  pool.parallel_for(0, [&](int64_t) { FAIL() << "no index to run"; });

  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](int64_t i) {
                                   ran++;
                                   if (i == 7) throw ember::Error(ember::ErrorKind::kCorruption, "frame 7");
                                 }),
               ember::Error);
  // every task had returned: nothing touches `ran` any more, and the pool still works
  const int after = ran.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran.load(), after);
  std::atomic<int> again{0};
  pool.parallel_for(10, [&](int64_t) { again++; });
  EXPECT_EQ(again.load(), 10);
}
