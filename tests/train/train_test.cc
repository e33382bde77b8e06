// The training engine on the fixture dataset (CPU, tiny preset): the loss falls tenfold, a
// resumed run continues exactly, checkpoints hold everything inference needs, bad flags fail
// before any work.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/stop_signal.h"
#include "ember/model/groot.h"
#include "ember/model/pi05.h"
#include "ember/model/weights.h"
#include "ember/train/checkpoint_dir.h"
#include "ember/train/optimizer.h"
#include "ember/train/policy_checkpoint.h"
#include "ember/model/processor.h"
#include "ember/model/prompt.h"
#include "ember/model/policy_type.h"
#include "ember/data/dataset.h"
#include "ember/train/predict.h"
#include "ember/train/train_step.h"
#include "ember/train/trainer.h"
#include "test_util.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

TrainConfig tiny_config(const std::string& out, int64_t steps) {
  return parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + out, "--device=cpu", "--steps=" + std::to_string(steps),
                            "--batch_size=16", "--optimizer.lr=3e-3", "--optimizer.weight_decay=0", "--scheduler.warmup_steps=20",
                            "--policy.horizon=10", "--dataset.image_size=32", "--num_workers=1", "--log_freq=50",
                            "--save_freq=100000", "--dataset.episodes=[0]"});
}

TrainerHooks quiet() {
  TrainerHooks h;
  h.quiet = true;
  return h;
}

TEST(Train, TinyPolicyLossFallsTenfoldOnTheFixture) {
  test::TempDir dir;
  auto result = train(tiny_config(dir.path() + "/run", 500), quiet());
  ASSERT_EQ(result.losses.size(), 500u);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += result.losses[i].second / 10;
  for (int i = 490; i < 500; ++i) last += result.losses[i].second / 10;
  std::printf("loss: first 10 steps %.4f, last 10 steps %.4f (%.1fx)\n", first, last, first / last);
  EXPECT_GT(first / last, 10.0);
  // metrics.jsonl has one line per log_freq steps with step and loss
  EXPECT_TRUE(fs::exists(dir.path() + "/run/metrics.jsonl"));
}

TEST(Train, ADivergedRunIsAUserErrorNamingItsStep) {
  // --optimizer.lr=1e308: the loss is not finite within a few steps; exit 2 (not an internal
  // error) with the step and what to try
  test::TempDir dir;
  auto c = parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu", "--steps=20",
                              "--batch_size=16", "--optimizer.lr=1e308", "--scheduler.warmup_steps=0", "--dataset.image_size=32",
                              "--num_workers=1", "--log_freq=1", "--save_freq=100000", "--dataset.episodes=[0]"});
  const auto what = test::error_of([&] { train(c, quiet()); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(what.find("at step"), std::string::npos) << what;
  EXPECT_NE(what.find("--optimizer.lr"), std::string::npos) << what;
}

TEST(Train, ProfileStepsWritesATrace) {
  test::TempDir dir;
  auto c = tiny_config(dir.path() + "/run", 3);  // shorter than the 10 warm-up steps: its last 2
  c.profile_steps = 2;
  train(c, quiet());
  const std::string trace = dir.path() + "/run/profile/rank0.json";
  ASSERT_TRUE(fs::exists(trace));
  EXPECT_GT(fs::file_size(trace), 1000u);
}

TEST(Train, ResumeContinuesExactly) {
  test::TempDir dir;
  auto straight = train(tiny_config(dir.path() + "/a", 40), quiet());
  // the same run, stopped after 20 steps (a checkpoint at 20), then resumed
  auto half = tiny_config(dir.path() + "/b", 40);
  half.save_freq = 20;
  TrainerHooks stop = quiet();
  stop.keep_going = [](int64_t step) { return step < 20; };
  auto first = train(half, stop);
  ASSERT_EQ(first.steps_done, 20);
  half.resume = true;
  auto second = train(half, quiet());
  ASSERT_EQ(second.first_step, 20);
  ASSERT_EQ(second.losses.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(first.losses[i].second, straight.losses[i].second) << "step " << i + 1;
    EXPECT_EQ(second.losses[i].second, straight.losses[20 + i].second) << "step " << 21 + i;
  }
  auto wa = model::load_tensors(dir.path() + "/a/checkpoints/000040/model.safetensors");
  auto wb = model::load_tensors(dir.path() + "/b/checkpoints/000040/model.safetensors");
  ASSERT_EQ(wa.size(), wb.size());
  for (const auto& [name, t] : wa) EXPECT_TRUE(at::equal(t, wb.at(name))) << name;
}

// SIGINT / SIGTERM (core/stop_signal.h, here requested directly during step 5): the run ends
// after step 6, the step under way, saves it although no save was due, and a resume from it
// continues the uninterrupted run bit for bit.
TEST(Train, StopSignalSavesTheStepUnderWayAndResumeContinues) {
  test::TempDir dir;
  struct Clear {
    ~Clear() { clear_stop_request(); }
  } clear;
  auto straight = train(tiny_config(dir.path() + "/a", 12), quiet());
  auto c = tiny_config(dir.path() + "/b", 12);
  c.save_freq = 1000;
  TrainerHooks hooks = quiet();
  hooks.keep_going = [](int64_t step) {
    if (step == 5) request_stop(SIGTERM);
    return true;
  };
  auto first = train(c, hooks);
  clear_stop_request();
  EXPECT_EQ(first.stopped_by, SIGTERM);
  ASSERT_EQ(first.steps_done, 6);
  EXPECT_EQ(first.last_checkpoint, dir.path() + "/b/checkpoints/000006");
  EXPECT_TRUE(fs::exists(dir.path() + "/b/checkpoints/000006/COMPLETE"));
  c.resume = true;
  auto second = train(c, quiet());
  EXPECT_EQ(second.stopped_by, 0);
  ASSERT_EQ(second.first_step, 6);
  ASSERT_EQ(second.losses.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(second.losses[i].second, straight.losses[6 + i].second) << "step " << 7 + i;
}

TEST(Train, CheckpointAloneIsEnoughForInference) {
  test::TempDir dir;
  train(tiny_config(dir.path() + "/run", 5), quiet());
  auto latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(latest);
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "trainer_state.json", "train_config.json", "policy.json",
                        "features.json", "tokenizer.model", "COMPLETE"})
    EXPECT_TRUE(fs::exists(latest->dir / f)) << f;
  auto bundle = load_policy(dir.path() + "/run", at::kCPU);
  EXPECT_EQ(bundle.step, 5);
  auto p = predict_chunk(bundle, kFixture, 3, at::kCPU);
  ASSERT_EQ(p.predicted.size(), 10u);
  ASSERT_EQ(p.predicted[0].size(), 7u);
  for (const auto& row : p.predicted)
    for (float x : row) EXPECT_TRUE(std::isfinite(x));
}

// A groot checkpoint's policy.json records its training-only settings: the dropout (read back, so
// a resumed run keeps it) and whether the backbone was tuned.
TEST(Train, GrootPolicyJsonSaysHowItWasTrained) {
  test::TempDir dir;
  auto config = parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu",
                                   "--steps=2", "--batch_size=4", "--policy.type=groot", "--policy.tune_backbone=true",
                                   "--dataset.image_size=32", "--num_workers=1", "--save_freq=2", "--dataset.episodes=[0]"});
  train(config, quiet());
  auto first = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(first);
  const std::string file = (first->dir / "policy.json").string();
  auto j = read_json_file(file);
  EXPECT_DOUBLE_EQ(j["groot"]["dropout"].get<double>(), model::GrootShape{}.dropout);
  EXPECT_EQ(j["groot"]["tune_backbone"], true);
  // a resumed run trains with the recorded dropout and records it again
  j["groot"]["dropout"] = 0.1;
  EXPECT_DOUBLE_EQ(model::groot_shape_from_json(j, file).dropout, 0.1);
  write_json_file(file, j);
  write_checksums(first->dir);  // as if saved so
  config.steps = 3;
  config.resume = true;
  train(config, quiet());
  auto latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(latest);
  ASSERT_EQ(latest->step, 3);
  EXPECT_DOUBLE_EQ(read_json_file((latest->dir / "policy.json").string())["groot"]["dropout"].get<double>(), 0.1);
  j["groot"].erase("dropout");  // written before the field existed: N1.5's 0.2
  EXPECT_DOUBLE_EQ(model::groot_shape_from_json(j, file).dropout, 0.2);
  j["groot"]["dropout"] = 1.5;
  auto msg = test::error_of([&] { model::groot_shape_from_json(j, file); });
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  EXPECT_NE(msg.find("dropout"), std::string::npos) << msg;
  j["groot"]["dropout"] = "0.2";
  EXPECT_NE(test::error_of([&] { model::groot_shape_from_json(j, file); }).find(file), std::string::npos);
}

TEST(Train, GrootDefaultsAreN15sAndItsFeaturesKeepThem) {
  // N1.5's rules and optimiser unless a flag says otherwise (docs/groot.md)
  test::TempDir dir;
  const std::vector<std::string> base{"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu",
                                      "--steps=2", "--batch_size=4", "--policy.type=groot", "--dataset.image_size=32",
                                      "--num_workers=1", "--save_freq=2", "--dataset.episodes=[0]"};
  auto config = parse_train_flags(base);
  EXPECT_EQ(config.policy.normalization, "MIN_MAX");
  EXPECT_FALSE(config.policy.state_in_prompt);
  EXPECT_TRUE(config.policy.loss_on_padded_steps);
  EXPECT_DOUBLE_EQ(config.policy.dropout, 0.2);
  EXPECT_EQ(config.policy.head_init, "n15");
  EXPECT_DOUBLE_EQ(config.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(config.optimizer.betas[0], 0.95);
  EXPECT_DOUBLE_EQ(config.optimizer.betas[1], 0.999);
  EXPECT_DOUBLE_EQ(config.optimizer.weight_decay, 1e-5);
  EXPECT_EQ(config.scheduler.warmup_steps, 1500);
  auto flags = base;
  flags.push_back("--policy.state_in_prompt=true");
  flags.push_back("--policy.normalization=auto");
  EXPECT_TRUE(parse_train_flags(flags).policy.state_in_prompt);
  EXPECT_EQ(parse_train_flags(flags).policy.normalization, "auto");
  // pi05 keeps its own, and refuses groot's options
  auto pi = parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/pi", "--device=cpu"});
  EXPECT_EQ(pi.policy.normalization, "auto");
  EXPECT_TRUE(pi.policy.state_in_prompt);
  EXPECT_FALSE(pi.policy.loss_on_padded_steps);
  EXPECT_DOUBLE_EQ(pi.policy.dropout, 0);
  for (const char* bad : {"--policy.dropout=0.2", "--policy.head_init=torch"}) {
    // refused before any work (at the flags, or where the policy is made)
    auto msg = test::error_of(
        [&] { train(parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/pi_bad", "--device=cpu", bad}), quiet()); },
        ErrorKind::kInvalidArgument);
    EXPECT_FALSE(fs::exists(dir.path() + "/pi_bad/checkpoints"));
    EXPECT_NE(msg.find(std::string(bad).substr(0, std::string(bad).find('='))), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=x", "--policy.type=groot", "--policy.dropout=1"}), Error);
  EXPECT_THROW(parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=x", "--policy.normalization=minmax"}), Error);

  // the checkpoint's features hold the rules; its samples' prompt is the task alone
  train(config, quiet());
  auto latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_TRUE(latest);
  auto spec = model::FeatureSpec::from_json(read_json_file((latest->dir / "features.json").string()), "features.json");
  EXPECT_FALSE(spec.state_in_prompt);
  EXPECT_TRUE(spec.loss_on_padded_steps);
  EXPECT_EQ(spec.modes.at("action"), data::NormMode::kMinMax);
  EXPECT_EQ(spec.modes.at("observation.state"), data::NormMode::kMinMax);
  EXPECT_EQ(spec.norm_options.rule, data::EpsilonRule::kZeroRangeToZero);  // Isaac-GR00T's: a constant feature is 0
  auto tokenizer = model::Tokenizer::load((latest->dir / "tokenizer.model").string());
  auto arch = model::policy_type("groot").from_json(read_json_file((latest->dir / "policy.json").string()), "policy.json");
  model::SampleBuilder builder(spec, arch->base(), tokenizer);
  data::Dataset ds(kFixture, builder.dataset_options());
  auto item = ds.get(0);
  auto sample = builder.build(item, false);
  EXPECT_EQ(tokenizer.decode(sample.prompt), model::clean_task(item.task));
  // a resumed run keeps the recorded rules whatever its flags say
  flags = base;
  flags.push_back("--policy.state_in_prompt=true");
  flags.push_back("--steps=3");
  flags.push_back("--resume=true");
  auto resumed = parse_train_flags(flags);
  train(resumed, quiet());
  latest = find_latest_checkpoint(dir.path() + "/run");
  ASSERT_EQ(latest->step, 3);
  EXPECT_FALSE(model::FeatureSpec::from_json(read_json_file((latest->dir / "features.json").string()), "f").state_in_prompt);
}

TEST(Train, RefusesToOverwriteOrResumeNothing) {
  test::TempDir dir;
  auto c = tiny_config(dir.path() + "/run", 2);
  c.resume = true;
  EXPECT_THROW(train(c, quiet()), Error);  // nothing to resume
  c.resume = false;
  train(c, quiet());
  EXPECT_THROW(train(c, quiet()), Error);  // would overwrite checkpoints
  auto bad = tiny_config(dir.path() + "/x", 2);
  bad.dataset.root = dir.path() + "/missing";
  EXPECT_THROW(train(bad, quiet()), Error);
  bad = tiny_config(dir.path() + "/y", 2);
  bad.dataset.image_size = 30;  // not a multiple of the patch
  EXPECT_THROW(train(bad, quiet()), Error);
}

// The global gradient norm comes back as a device tensor (no host sync); gradients above
// max_norm are scaled down to it, others and non-finite ones are left alone.
TEST(Train, ClipGradNormScalesOnlyAboveTheLimit) {
  auto make = [](std::vector<float> g) {
    auto p = at::zeros({int64_t(g.size())}).set_requires_grad(true);
    p.mutable_grad() = at::tensor(g);
    return p;
  };
  std::vector<at::Tensor> big = {make({3, 0}), make({0, 4})};  // norm 5
  at::Tensor norm = clip_grad_norm(big, 1.0);
  EXPECT_EQ(norm.dim(), 0);
  EXPECT_NEAR(norm.item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(big[0].grad()[0].item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(big[1].grad()[1].item<double>(), 0.8, 1e-5);
  std::vector<at::Tensor> small = {make({0.3f, 0.4f})};
  EXPECT_NEAR(clip_grad_norm(small, 1.0).item<double>(), 0.5, 1e-6);
  EXPECT_NEAR(small[0].grad()[1].item<double>(), 0.4, 1e-7);
  std::vector<at::Tensor> bad = {make({NAN, 1.0f})};
  EXPECT_FALSE(std::isfinite(clip_grad_norm(bad, 1.0).item<double>()));
  EXPECT_EQ(bad[0].grad()[1].item<double>(), 1.0);
}

// A scale (the ranks' 1 / global count) multiplies the gradients before the norm is taken and
// in the same multiplication as the clipping.
TEST(Train, ClipGradNormAppliesTheScaleFirst) {
  auto make = [](std::vector<float> g) {
    auto p = at::zeros({int64_t(g.size())}).set_requires_grad(true);
    p.mutable_grad() = at::tensor(g);
    return p;
  };
  std::vector<at::Tensor> a = {make({30, 40})};  // norm 50, scaled 5: clipped to 1
  EXPECT_NEAR(clip_grad_norm(a, 1.0, at::full({}, 0.1)).item<double>(), 5.0, 1e-5);
  EXPECT_NEAR(a[0].grad()[0].item<double>(), 0.6, 1e-5);
  std::vector<at::Tensor> b = {make({3, 4})};  // scaled norm 0.5: below the limit
  EXPECT_NEAR(clip_grad_norm(b, 1.0, at::full({}, 0.1)).item<double>(), 0.5, 1e-6);
  EXPECT_NEAR(b[0].grad()[1].item<double>(), 0.4, 1e-6);
  std::vector<at::Tensor> c = {make({3, 4})};  // no clipping: the scale alone
  EXPECT_NEAR(clip_grad_norm(c, 0.0, at::full({}, 2.0)).item<double>(), 10.0, 1e-5);
  EXPECT_NEAR(c[0].grad()[0].item<double>(), 6.0, 1e-5);
}

// --policy.param_dtype=bf16 (LeRobot's dtype=bfloat16): the checkpoint holds bf16 weights and
// moments except the norms and the vision tower's patch and position embeddings; the loss
// falls as in fp32; a resumed run continues exactly; inference loads it.
TEST(Train, Bf16ParametersTrainResumeAndServe) {
  test::TempDir dir;
  auto config = [&](const std::string& run, int64_t steps) {
    auto c = tiny_config(dir.path() + "/" + run, steps);
    c.policy.param_dtype = "bf16";
    return c;
  };
  auto straight = train(config("a", 40), quiet());
  auto half = config("b", 40);
  half.save_freq = 20;
  TrainerHooks stop = quiet();
  stop.keep_going = [](int64_t step) { return step < 20; };
  train(half, stop);
  half.resume = true;
  auto second = train(half, quiet());
  ASSERT_EQ(second.losses.size(), 20u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(second.losses[i].second, straight.losses[20 + i].second) << "step " << 21 + i;
  auto fp32 = train(tiny_config(dir.path() + "/fp32", 40), quiet());
  double first = 0, last = 0, last32 = 0;
  for (int i = 0; i < 5; ++i) first += straight.losses[i].second / 5;
  for (int i = 35; i < 40; ++i) last += straight.losses[i].second / 5, last32 += fp32.losses[i].second / 5;
  std::printf("bf16 parameters: loss %.6f -> %.6f in 40 steps (fp32 parameters: %.6f)\n", first, last, last32);
  EXPECT_LT(last, 0.9 * first);
  EXPECT_NEAR(last, last32, 0.05 * last32);

  auto weights = model::load_tensors(dir.path() + "/a/checkpoints/000040/model.safetensors");
  auto moments = model::load_tensors(dir.path() + "/a/checkpoints/000040/optimizer.safetensors");
  auto wb = model::load_tensors(dir.path() + "/b/checkpoints/000040/model.safetensors");
  int bf16 = 0;
  for (const auto& [name, t] : weights) {
    const auto want = model::keeps_fp32(name) ? at::kFloat : at::kBFloat16;
    EXPECT_EQ(t.scalar_type(), want) << name;
    EXPECT_EQ(moments.at(name + ".exp_avg").scalar_type(), want) << name;
    EXPECT_TRUE(at::equal(t, wb.at(name))) << name;
    bf16 += want == at::kBFloat16;
  }
  EXPECT_GT(bf16, int(weights.size()) / 2);
  for (const char* kept : {"vision.patch_weight", "vision.position_embed", "lm.0.norm1.weight", "expert.0.ada1.modulation.weight"})
    EXPECT_EQ(weights.at(kept).scalar_type(), at::kFloat) << kept;
  EXPECT_EQ(weights.at("embedding").scalar_type(), at::kBFloat16);
  auto bundle = load_policy(dir.path() + "/a", at::kCPU);
  auto p = predict_chunk(bundle, kFixture, 3, at::kCPU);
  ASSERT_EQ(p.predicted.size(), 10u);
  for (const auto& row : p.predicted)
    for (float x : row) EXPECT_TRUE(std::isfinite(x));
}

// Gradients of two dtypes (bf16 parameters beside fp32 norms): one norm over all of them, in
// fp32, and every one scaled.
TEST(Train, ClipGradNormOverMixedDtypes) {
  auto make = [](std::vector<float> g, at::ScalarType dtype) {
    auto p = at::zeros({int64_t(g.size())}, dtype).set_requires_grad(true);
    p.mutable_grad() = at::tensor(g).to(dtype);
    return p;
  };
  std::vector<at::Tensor> mixed = {make({3, 0}, at::kBFloat16), make({0, 4}, at::kFloat)};  // norm 5
  at::Tensor norm = clip_grad_norm(mixed, 1.0);
  EXPECT_EQ(norm.scalar_type(), at::kFloat);
  EXPECT_NEAR(norm.item<double>(), 5.0, 1e-6);
  EXPECT_EQ(mixed[0].grad().scalar_type(), at::kBFloat16);
  EXPECT_NEAR(mixed[0].grad()[0].item<double>(), 0.6, 4e-3);  // bf16: 8 significant bits
  EXPECT_NEAR(mixed[1].grad()[1].item<double>(), 0.8, 1e-5);
}

// The optimizer applying clip_and_scale's multiplier as it reads the gradients gives the
// update of clipping them first (clip_grad_norm) and stepping after; the gradients' norm is
// the same and, with no clipping and no scale, there is no multiplier at all.
TEST(Train, MultiplierInsideTheUpdateEqualsClippingFirst) {
  auto make = [](at::ScalarType dtype) {
    std::vector<at::Tensor> ps;
    at::manual_seed(3);
    for (int64_t n : {5, 7}) {
      auto p = at::randn({n}).to(dtype).set_requires_grad(true);
      p.mutable_grad() = (at::randn({n}) * 4).to(dtype);
      ps.push_back(p);
    }
    return ps;
  };
  // Adam's step is nearly blind to a gradient's scale; a large eps makes it see it
  const AdamWOptions options{0.9, 0.95, 1.0, 0.01};
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    auto a = make(dtype), b = make(dtype), unscaled = make(dtype);
    model::NamedTensors na{{"x", a[0]}, {"y", a[1]}}, nb{{"x", b[0]}, {"y", b[1]}}, nu{{"x", unscaled[0]}, {"y", unscaled[1]}};
    AdamW oa(na, options), ob(nb, options), ou(nu, options);
    ou.step(0.5);
    const auto scale = at::full({}, 0.5);
    auto norm_a = clip_grad_norm(a, 1.0, scale);
    oa.step(0.5);
    auto r = clip_and_scale(b, 1.0, scale);
    ASSERT_TRUE(r.multiplier.defined());
    ob.step(0.5, r.multiplier);
    EXPECT_NEAR(norm_a.item<double>(), r.norm.item<double>(), 1e-6);
    const double tol = dtype == at::kFloat ? 1e-6 : 2e-2;
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(at::allclose(a[i].to(at::kFloat), b[i].to(at::kFloat), tol, tol)) << i << " " << c10::toString(dtype);
      EXPECT_GT((a[i].to(at::kFloat) - unscaled[i].to(at::kFloat)).abs().max().item<double>(), 5 * tol) << i;
    }
  }
  auto c = make(at::kFloat);
  EXPECT_FALSE(clip_and_scale(c, 0.0).multiplier.defined());
}

TEST(Train, SaveCheckpointFalseWritesNone) {
  test::TempDir dir;
  auto c = parse_train_flags({"--dataset.root=" + kFixture, "--output_dir=" + dir.path() + "/run", "--device=cpu", "--steps=3",
                              "--batch_size=4", "--dataset.image_size=32", "--num_workers=1", "--save_freq=1",
                              "--dataset.episodes=[0]", "--log_freq=1", "--save_checkpoint=false"});
  auto r = train(c, quiet());
  EXPECT_EQ(r.steps_done, 3);
  EXPECT_TRUE(r.last_checkpoint.empty());
  EXPECT_FALSE(find_latest_checkpoint(dir.path() + "/run"));
  EXPECT_TRUE(fs::exists(dir.path() + "/run/metrics.jsonl"));
}

TEST(Train, ImageShiftMovesPixelsAndReplicatesEdges) {
  auto image = at::arange(3 * 4 * 5, at::kFloat).view({3, 4, 5});
  for (auto [dx, dy] : {std::pair{2, -1}, std::pair{-1, 3}, std::pair{0, 0}}) {
    auto out = model::SampleBuilder::shifted(image, dx, dy);
    ASSERT_EQ(out.sizes(), image.sizes());
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 5; ++x) {
          int sy = std::clamp(y - dy, 0, 3), sx = std::clamp(x - dx, 0, 4);
          EXPECT_EQ(out[c][y][x].item<float>(), image[c][sy][sx].item<float>()) << dx << "," << dy << " at " << y << "," << x;
        }
  }
}

// The losses of 4 steps of the tiny run in dir/name, its config changed by `change`.
template <typename Change>
auto four_step_losses(const test::TempDir& dir, const std::string& name, Change change) {
  auto c = tiny_config(dir.path() + "/" + name, 4);
  change(c);
  return train(c, quiet()).losses;
}

// --policy.prefix_multiple rounds each packed prefix up with filler that nothing real attends to:
// the same losses as without, step after step (fp32, CPU).
TEST(Train, PrefixFillerTrainsTheSameLosses) {
  test::TempDir dir;
  auto plain = four_step_losses(dir, "a", [](TrainConfig&) {});
  auto filled = four_step_losses(dir, "b", [](TrainConfig& c) { c.policy.prefix_multiple = 64; });
  ASSERT_EQ(plain.size(), filled.size());
  ASSERT_FALSE(plain.empty());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(filled[i].first, plain[i].first);
    EXPECT_NEAR(filled[i].second, plain[i].second, 1e-5 * std::abs(plain[i].second)) << "step " << plain[i].first;
  }
}

// --gradient_accumulation_steps: 4 micro-batches of 4 samples make the step of one 16-sample batch
// (the same samples, the same divisor), step after step (fp32, CPU: the sums' order differs)
TEST(Train, GradientAccumulationTrainsTheLossesOfOneLargeBatch) {
  test::TempDir dir;
  auto large = four_step_losses(dir, "a", [](TrainConfig&) {});
  auto accumulated = four_step_losses(dir, "b", [](TrainConfig& c) {
    c.batch_size = 4;
    c.gradient_accumulation_steps = 4;
  });
  auto smaller = four_step_losses(dir, "c", [](TrainConfig& c) { c.batch_size = 4; });
  ASSERT_EQ(large.size(), accumulated.size());
  for (size_t i = 0; i < large.size(); ++i)
    EXPECT_NEAR(accumulated[i].second, large[i].second, 1e-5 * std::abs(large[i].second)) << "step " << large[i].first;
  EXPECT_GT(std::abs(smaller[1].second - large[1].second), 1e-3 * std::abs(large[1].second));  // not a trivial pass
}

// --policy.gradient_checkpointing recomputes the same activations in the backward pass: the
// same losses step after step, in both layouts
TEST(Train, GradientCheckpointingTrainsTheSameLosses) {
  test::TempDir dir;
  for (const std::string attention : {"varlen", "padded"}) {
    auto plain = four_step_losses(dir, attention + "a", [&](TrainConfig& c) { c.policy.attention = attention; });
    auto recomputed = four_step_losses(dir, attention + "b", [&](TrainConfig& c) {
      c.policy.attention = attention;
      c.policy.gradient_checkpointing = true;
    });
    ASSERT_EQ(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i)
      EXPECT_NEAR(recomputed[i].second, plain[i].second, 1e-6 * std::abs(plain[i].second)) << attention << " step " << i;
  }
}

TEST(Train, ImageTransformsTrainReproducibly) {
  test::TempDir dir;
  auto shifted = [](TrainConfig& c) { c.dataset.image_transforms_enable = true; };
  auto a = four_step_losses(dir, "a", shifted), b = four_step_losses(dir, "b", shifted);
  auto plain = four_step_losses(dir, "c", [](TrainConfig&) {});
  EXPECT_EQ(a, b);         // the same shifts for the same seed
  EXPECT_NE(a, plain);     // and they change what the model sees
}

TEST(TrainStep, Fp8WeightsAreRequantisedOncePerStepNotPerMicroBatch) {
  // a tiny policy whose language backbone has FP8-sized layers (width 512, mlp 1024)
  auto shape = model::preset_shape("tiny");
  shape.lm = {512, 2, 2, 1, 256, 1024};
  shape.expert = {128, 2, 2, 1, 256, 256};
  shape.horizon = 4;
  shape.max_action_dim = 8;
  TrainConfig config;
  config.policy.fp8 = true;
  at::manual_seed(1);
  auto state = build_policy_state(config, model::pi05_arch(shape), at::kCPU, nullptr);
  TrainStep step(state, at::kCPU, config.optimizer.grad_clip_norm, false, nullptr, 0);
  std::vector<model::PolicySample> samples(4);
  for (auto& s : samples) {
    s.images.push_back(at::rand({3, shape.vision.image_size, shape.vision.image_size}));
    s.camera_slots.push_back(0);
    s.prompt = {5, 6, 7, 8, 9};
    s.actions = at::randn({shape.horizon, 3});
    s.action_is_pad = at::zeros({shape.horizon}, at::kBool);
  }
  TrainBatch batch;  // two micro-batches of two samples
  for (int m = 0; m < 2; ++m) {
    std::vector<const model::PolicySample*> half = {&samples[2 * m], &samples[2 * m + 1]};
    batch.micro.push_back(model::collate(half, shape, model::AttentionBackend::kVarlen));
    batch.loss_count += batch.micro.back().action_mask.sum().item<double>();
  }
  batch.samples = 4;
  auto* layer = std::dynamic_pointer_cast<model::Pi05PolicyImpl>(state.module)->lm_layers[0]->as<model::TowerLayerImpl>();
  auto* up = layer->mlp->up.get();
  ASSERT_TRUE(layer->mlp->fp8);  // the MLP runs as one FP8 function with gate and up stacked
  const auto before = up->weight.clone();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(step.run(batch, 1e-3).loss.item<double>()));
  // once per step, each shared by both micro-batches
  EXPECT_EQ(layer->mlp->fp8->gate_up.refreshes(), 3);
  EXPECT_EQ(layer->mlp->fp8->down.refreshes(), 3);
  EXPECT_EQ(layer->q->fp8->refreshes(), 3);
  EXPECT_FALSE(at::equal(before, up->weight));
  EXPECT_EQ(up->weight.scalar_type(), at::kFloat);  // master weights stay as they were
}

// The loss hook (RL's learner): micro-batches backpropagated before the step's count is known
// (divisor 1) and scaled by 1 / count at finish() give the step whose divisor was known up
// front; the norm is the mean gradient's, and the state needs no policy module.
TEST(TrainStep, LossHookWithTheCountKnownLateMatchesTheCountKnownFirst) {
  at::manual_seed(3);
  const auto w0 = at::randn({4, 3}), x = at::randn({6, 3}), y = at::randn({6, 4});
  auto make_state = [&] {
    PolicyState s;
    s.params.emplace_back("w", w0.clone().set_requires_grad(true));
    s.param_list.push_back(s.params[0].second);
    s.optimizer = std::make_unique<AdamW>(s.params, AdamWOptions{0.9, 0.95, 1e-8, 0.0});
    return s;
  };
  // two micro-batches of 2 and 4 rows: the sum of squared errors over their 24 entries
  auto loss = [&](PolicyState& s, int64_t from, int64_t n) {
    return (at::matmul(x.narrow(0, from, n), s.params[0].second.t()) - y.narrow(0, from, n)).square().sum();
  };
  const double count = 24;
  auto late = make_state(), first = make_state();
  TrainStep a(late, at::kCPU, 1e9, false, nullptr, 0), b(first, at::kCPU, 1e9, false, nullptr, 0);
  for (int k = 0; k < 2; ++k) {  // the second step starts from begin()'s cleared gradients
    a.begin();
    b.begin(count);
    a.add([&] { return loss(late, 0, 2); });
    a.add([&] { return loss(late, 2, 4); });
    b.add([&] { return loss(first, 0, 2); });
    b.add([&] { return loss(first, 2, 4); });
    // the mean gradient, by hand, before either steps
    auto w = late.params[0].second.detach().clone().set_requires_grad(true);
    auto mean = (at::matmul(x, w.t()) - y).square().sum() / count;
    mean.backward();
    auto oa = a.finish(1e-2, count), ob = b.finish(1e-2, count);
    EXPECT_NEAR(oa.loss.item<double>(), mean.item<double>(), 1e-6);
    EXPECT_NEAR(ob.loss.item<double>(), mean.item<double>(), 1e-6);
    EXPECT_NEAR(oa.grad_norm.item<double>(), w.grad().norm().item<double>(), 1e-5);
    EXPECT_NEAR(ob.grad_norm.item<double>(), w.grad().norm().item<double>(), 1e-5);
    EXPECT_TRUE(at::allclose(late.params[0].second, first.params[0].second, 1e-6, 1e-7));
  }
  EXPECT_FALSE(at::allclose(late.params[0].second, w0));
}

TEST(TrainBadInput, Fp8WithNoFittingLayerNamesTheFlag) {
  test::TempDir dir;
  auto config = tiny_config(dir.path() + "/run", 1);
  config.policy.fp8 = true;  // the tiny preset's layers are 64-128 wide
  try {
    build_policy_state(config, model::pi05_arch(model::preset_shape("tiny")), at::kCPU, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--policy.fp8"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(parse_train_flags({"--dataset.root=x", "--output_dir=y", "--policy.fp8=true"}).policy.fp8);
}

}  // namespace
}  // namespace ember::train
