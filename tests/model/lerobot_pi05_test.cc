// LeRobot's pi0.5 in and out (model/lerobot_pi05.h), on tests/fixtures/lerobot_pi05_tiny (made by
// tests/python/lerobot_pi05_reference.py with LeRobot 0.6.1): the import gives ember's shape and
// weights, ember computes LeRobot's loss and sample_actions on the stored inputs (fp32, CPU, both
// attention layouts), the processor's statistics and prompt rules are LeRobot's, the export
// writes every key LeRobot loads and round-trips bit for bit, and bad input is refused by name.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/lerobot_pi05.h"
#include "ember/model/pi05.h"
#include "ember/model/processor.h"
#include "ember/model/prompt.h"
#include "ember/model/weights.h"
#include "model/lerobot_reference.h"
#include "test_util.h"

namespace ember::model {
namespace {

namespace fs = std::filesystem;
const fs::path kFixture = fs::path(EMBER_TEST_DATA) / "lerobot_pi05_tiny";
constexpr double kRtol = 1e-4;  // issue 21: fp32 on CPU

const test::LeRobotReference& reference() {
  static const test::LeRobotReference r(kFixture);
  return r;
}
// (name by value: a reference to the stored reference tensor, never to an argument)
const at::Tensor& ref(std::string_view name) { return reference()(std::string(name)); }
double rel(const at::Tensor& a, const at::Tensor& b) { return test::lerobot_rel(a, b); }
std::vector<PolicySample> reference_samples() { return reference().samples(); }

Pi05Policy imported_policy(const LeRobotImport& im) {
  at::set_num_threads(1);
  return test::imported_policy(im);
}

PolicyInputs reference_inputs(const PolicyShape& shape, AttentionBackend backend, std::vector<PolicySample>& samples) {
  samples = reference_samples();
  std::vector<const PolicySample*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  return collate(ptrs, shape, backend);
}

TEST(LeRobotPi05, ImportsTheFixturesShapeFeaturesAndSkipList) {
  auto im = import_lerobot_pi05(kFixture);
  EXPECT_EQ(im.kind, ForeignPolicy::kLeRobot);
  // the shape the reference script wrote in ember's own JSON
  auto want = read_json_file((kFixture / "ember_policy.json").string());
  const auto& s = im.shape;
  EXPECT_EQ(s.vision.image_size, want["vision"]["image_size"]);
  EXPECT_EQ(s.vision.patch, want["vision"]["patch"]);
  EXPECT_EQ(s.vision.width, want["vision"]["width"]);
  EXPECT_EQ(s.vision.layers, want["vision"]["layers"]);
  EXPECT_EQ(s.vision.heads, want["vision"]["heads"]);
  EXPECT_EQ(s.vision.mlp, want["vision"]["mlp"]);
  for (const auto& [t, key] : {std::pair{&s.lm, "lm"}, std::pair{&s.expert, "expert"}}) {
    EXPECT_EQ(t->width, want[key]["width"]) << key;
    EXPECT_EQ(t->layers, want[key]["layers"]) << key;
    EXPECT_EQ(t->heads, want[key]["heads"]) << key;
    EXPECT_EQ(t->kv_heads, want[key]["kv_heads"]) << key;
    EXPECT_EQ(t->head_dim, want[key]["head_dim"]) << key;
    EXPECT_EQ(t->mlp, want[key]["mlp"]) << key;
  }
  EXPECT_EQ(s.vocab, want["vocab"]);
  EXPECT_EQ(s.horizon, want["horizon"]);
  EXPECT_EQ(s.max_action_dim, want["max_action_dim"]);
  EXPECT_EQ(s.max_cameras, want["max_cameras"]);
  EXPECT_EQ(s.max_prompt, want["max_prompt"]);
  EXPECT_EQ(s.flow_steps, want["flow_steps"]);
  // features: cameras in config order with the empty slot, LeRobot's rules on
  EXPECT_EQ(im.spec.cameras, (std::vector<std::string>{"observation.images.base", "observation.images.wrist",
                                                       "observation.images.empty_camera_0"}));
  EXPECT_EQ(im.spec.state_dim, 6);
  EXPECT_EQ(im.spec.action_dim, 6);
  EXPECT_TRUE(im.has_stats);
  EXPECT_TRUE(im.spec.lerobot_state_bins);
  EXPECT_TRUE(im.spec.loss_on_padded_steps);
  EXPECT_EQ(im.spec.modes.at("observation.state"), data::NormMode::kQuantiles);
  EXPECT_EQ(im.spec.stats.at("action").at("q99").size(), 6u);
  // the tensors pi0.5 never reads: two lm_heads, the final norm, the last layer's unused half
  const std::string pg = "model.paligemma_with_expert.paligemma.", last = pg + "model.language_model.layers.2.";
  std::vector<std::string> skipped{pg + "lm_head.weight",
                                   pg + "model.language_model.norm.weight",
                                   last + "mlp.down_proj.weight",
                                   last + "mlp.gate_proj.weight",
                                   last + "mlp.up_proj.weight",
                                   last + "post_attention_layernorm.weight",
                                   last + "self_attn.o_proj.weight",
                                   last + "self_attn.q_proj.weight",
                                   "model.paligemma_with_expert.gemma_expert.lm_head.weight"};
  std::sort(skipped.begin(), skipped.end());
  EXPECT_EQ(im.skipped, skipped);
  // every ember parameter, nothing else
  Pi05Policy p(im.shape);
  EXPECT_EQ(p->named_parameters().size(), im.params.size());
  // 1 + w: the Gemma norm of layer 0
  auto w = load_tensors((kFixture / "model.safetensors").string()).at(pg + "model.language_model.layers.0.input_layernorm.weight");
  EXPECT_TRUE(at::equal(im.params.at("lm.0.norm1.weight"), w + 1.0));
}

class LeRobotParity : public ::testing::TestWithParam<AttentionBackend> {};

// The same function as LeRobot 0.6.1's PI05Policy: training forward (velocity, per-element,
// per-sample and reduced loss) and sample_actions on the stored noise.
TEST_P(LeRobotParity, LossAndSampleActionsMatchLeRobot) {
  auto im = import_lerobot_pi05(kFixture);
  auto policy = imported_policy(im);
  std::vector<PolicySample> samples;
  auto in = reference_inputs(im.shape, GetParam(), samples);
  const auto& noise = ref("noise");
  const auto& time = ref("time");
  at::NoGradGuard no_grad;
  auto actions = in.actions;  // [B, H, max_action_dim], zero-padded as LeRobot's prepare_action
  ASSERT_TRUE(at::equal(actions, ref("model.actions")));
  auto tt = time.view({-1, 1, 1});
  auto x_t = tt * noise + (1 - tt) * actions;
  auto v = policy->velocity(in, x_t, time);
  auto per_element = (noise - actions - v).square();
  const int64_t ad = im.spec.action_dim;
  auto per_sample = per_element.narrow(2, 0, ad).mean({1, 2});
  auto loss = policy->loss(in, noise, time).loss;
  auto sampled = policy->sample_actions(in, ref("sample_noise"));
  const double e_v = rel(v, ref("velocity")), e_pe = rel(per_element, ref("loss.per_element")),
               e_ps = rel(per_sample, ref("loss.per_sample")), e_l = rel(loss, ref("loss")),
               e_s = rel(sampled, ref("sample_actions"));
  std::printf("parity (%s): velocity %.3e, loss.per_element %.3e, loss.per_sample %.3e, loss %.3e, sample_actions %.3e\n",
              GetParam() == AttentionBackend::kVarlen ? "varlen" : "padded", e_v, e_pe, e_ps, e_l, e_s);
  EXPECT_LT(e_v, kRtol);
  EXPECT_LT(e_pe, kRtol);
  EXPECT_LT(e_ps, kRtol);
  EXPECT_LT(e_l, kRtol);
  EXPECT_LT(e_s, kRtol);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LeRobotParity, ::testing::Values(AttentionBackend::kVarlen, AttentionBackend::kPadded),
                         [](const auto& info) { return info.param == AttentionBackend::kVarlen ? "Varlen" : "Padded"; });

// The preprocessor's statistics (QUANTILES, eps on a zero range) and the postprocessor, bit for
// bit or to float32 rounding; the prompt text with LeRobot's bin -1, and where ember's own rule
// (bin 0) differs.
TEST(LeRobotPi05, ProcessorStatisticsAndPromptAreLeRobots) {
  auto im = import_lerobot_pi05(kFixture);
  data::Normalizer norm(im.spec.stats, im.spec.modes, im.spec.norm_options);
  auto vec = [](const at::Tensor& t) {
    auto c = t.to(at::kFloat).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  auto state = vec(ref("processor.raw_state"));
  norm.normalize("observation.state", state);
  EXPECT_LT(rel(at::tensor(state).view(ref("processor.state").sizes()), ref("processor.state")), 1e-6);
  auto action = vec(ref("processor.raw_action"));
  norm.normalize("action", action);
  EXPECT_LT(rel(at::tensor(action).view(ref("processor.action").sizes()), ref("processor.action")), 1e-6);
  auto sampled = vec(ref("sample_actions").narrow(2, 0, im.spec.action_dim));
  norm.unnormalize("action", sampled);
  EXPECT_LT(rel(at::tensor(sampled).view(ref("processor.unnormalized_sample_actions").sizes()),
                ref("processor.unnormalized_sample_actions")),
            1e-6);
  // prompts: LeRobot's state bins (the second sample has states below q01: bin -1)
  const auto& prompts = reference().meta.at("prompts");
  const auto& tasks = reference().meta.at("tasks");
  const auto normed = ref("processor.state");
  int differ = 0;
  for (int64_t i = 0; i < normed.size(0); ++i) {
    auto s = vec(normed[i]);
    const std::string task = tasks[size_t(i)].get<std::string>();
    EXPECT_EQ(pi05_prompt_text(task, s, /*lerobot_bins=*/true), prompts[size_t(i)].get<std::string>()) << "sample " << i;
    // ember's own rule clamps them to bin 0: the one difference, stated
    std::string own = pi05_prompt_text(task, s, /*lerobot_bins=*/false), theirs = prompts[size_t(i)].get<std::string>();
    if (own != theirs) {
      ++differ;
      size_t pos;
      while ((pos = theirs.find(" -1")) != std::string::npos) theirs.replace(pos, 3, " 0");
      if (theirs.starts_with("-1")) theirs.replace(0, 2, "0");
      EXPECT_EQ(own, theirs) << "sample " << i << ": only the -1 bins may differ";
    }
  }
  EXPECT_EQ(differ, 1);  // sample 1 has values below -1
}

// Section 4, step 8: LeRobot's resize_with_pad then x2 - 1 of a non-square camera image, and an
// imported policy's images take that path (decoded at their stored size).
TEST(LeRobotPi05, ImagesAreResizedWithPadAsLeRobots) {
  auto in = ref("resize.input")[0], expected = ref("resize.output")[0];  // [3, 24, 40] in [0, 1]; [3, S, S]
  auto out = resize_with_pad(in, expected.size(1)) * 2 - 1;
  ASSERT_EQ(out.sizes(), expected.sizes());
  EXPECT_LT(rel(out, expected), 1e-6);
  // a square image of the policy's size is left alone
  EXPECT_TRUE(at::equal(resize_with_pad(expected, expected.size(1)), expected));
  auto im = import_lerobot_pi05(kFixture);
  EXPECT_TRUE(im.spec.lerobot_images);
  EXPECT_TRUE(FeatureSpec::from_json(im.spec.to_json(), "spec").lerobot_images);
  const std::vector<std::string> texts{"pick the cube", "place it in the bowl"};
  Tokenizer tokenizer = train_tokenizer(texts, {.vocab_size = 400});
  SampleBuilder builder(im.spec, im.shape, tokenizer);
  EXPECT_EQ(builder.dataset_options().image_width, 0);  // frames decoded as stored
}

// Row 17: an imported policy's loss counts the steps past an episode's end as LeRobot's does;
// ember's own rule leaves them out.
TEST(LeRobotPi05, ImportedLossCountsPaddedSteps) {
  auto im = import_lerobot_pi05(kFixture);
  auto policy = imported_policy(im);
  std::vector<PolicySample> samples;
  reference_inputs(im.shape, AttentionBackend::kVarlen, samples);
  const int64_t h = im.shape.horizon;
  auto pad = at::zeros({h}, at::kBool);
  pad.narrow(0, h - 2, 2).fill_(true);
  std::vector<const PolicySample*> ptrs;
  for (auto& s : samples) ptrs.push_back(&s);
  at::NoGradGuard no_grad;
  auto all = policy->loss(collate(ptrs, im.shape, AttentionBackend::kVarlen), ref("noise"), ref("time"));
  for (auto& s : samples) s.action_is_pad = pad;  // what ember's SampleBuilder sets without the LeRobot rule
  auto masked = policy->loss(collate(ptrs, im.shape, AttentionBackend::kVarlen), ref("noise"), ref("time"));
  EXPECT_EQ(all.count.item<double>(), double(samples.size() * h * im.spec.action_dim));
  EXPECT_EQ(masked.count.item<double>(), double(samples.size() * (h - 2) * im.spec.action_dim));
  EXPECT_LT(rel(all.loss, ref("loss")), kRtol);  // LeRobot's reduction: every step
  EXPECT_GT(rel(masked.loss, ref("loss")), 1e-3);
}

// Export: every key of LeRobot's state dict, equal to the original file's (the norms' original
// weights kept), a config LeRobot reads; the re-import gives the same parameters and outputs bit
// for bit.
TEST(LeRobotPi05, ExportRoundTripsBitForBit) {
  ::ember::test::TempDir tmp("lerobot_export");
  auto im = import_lerobot_pi05(kFixture);
  const fs::path out = fs::path(tmp.path()) / "out";
  write_lerobot_pi05(out, im.shape, im.spec, im.params, im.kept, im.config);
  for (const char* f : {"config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json",
                        "policy_preprocessor_step_3_normalizer_processor.safetensors",
                        "policy_postprocessor_step_0_unnormalizer_processor.safetensors", "ember_shrink.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  auto original = load_tensors((kFixture / "model.safetensors").string());
  auto written = load_tensors((out / "model.safetensors").string());
  ASSERT_EQ(written.size(), original.size());
  for (const auto& [k, t] : original) {
    ASSERT_TRUE(written.count(k)) << k;
    EXPECT_TRUE(at::equal(written.at(k), t)) << k;
  }
  auto config = read_ordered_json(out / "config.json");
  auto want = read_ordered_json(kFixture / "config.json");
  EXPECT_EQ(config["input_features"].dump(), want["input_features"].dump());  // the camera order
  EXPECT_EQ(config["chunk_size"], want["chunk_size"]);
  EXPECT_EQ(config["tokenizer_max_length"], want["tokenizer_max_length"]);
  EXPECT_EQ(config["empty_cameras"], 1);
  auto stats = load_tensors((out / "policy_preprocessor_step_3_normalizer_processor.safetensors").string());
  auto stats0 = load_tensors((kFixture / "policy_preprocessor_step_3_normalizer_processor.safetensors").string());
  for (const auto& [k, t] : stats) EXPECT_TRUE(at::equal(t, stats0.at(k))) << k;
  EXPECT_EQ(read_json_file((out / "ember_shrink.json").string()), read_json_file((kFixture / "ember_shrink.json").string()));
  // re-import
  auto again = import_lerobot_pi05(out);
  ASSERT_EQ(again.params.size(), im.params.size());
  for (const auto& [k, t] : im.params) EXPECT_TRUE(at::equal(again.params.at(k), t)) << k;
  EXPECT_EQ(again.spec.to_json(), im.spec.to_json());
  auto a = imported_policy(im), b = imported_policy(again);
  std::vector<PolicySample> samples;
  auto in = reference_inputs(im.shape, AttentionBackend::kVarlen, samples);
  EXPECT_TRUE(at::equal(a->sample_actions(in, ref("sample_noise")), b->sample_actions(in, ref("sample_noise"))));
  // after a change the norms are written as scale - 1
  TensorMap changed = im.params;
  changed["lm.0.norm1.weight"] = changed["lm.0.norm1.weight"] * 2;
  const fs::path out2 = fs::path(tmp.path()) / "out2";
  write_lerobot_pi05(out2, im.shape, im.spec, changed, im.kept, im.config);
  auto w2 = load_tensors((out2 / "model.safetensors").string());
  const std::string norm = "model.paligemma_with_expert.paligemma.model.language_model.layers.0.input_layernorm.weight";
  EXPECT_TRUE(at::equal(w2.at(norm), changed["lm.0.norm1.weight"] - 1.0));
}

// A from-scratch ember shape LeRobot cannot build (2 query heads) is refused, naming why.
TEST(LeRobotPi05, ExportRefusesShapesLeRobotCannotBuild) {
  ::ember::test::TempDir tmp("lerobot_export_bad");
  auto shape = preset_shape("tiny");
  Pi05Policy p(shape);
  TensorMap params;
  for (const auto& q : p->named_parameters()) params[q.key()] = q.value();
  auto im = import_lerobot_pi05(kFixture);
  try {
    write_lerobot_pi05(fs::path(tmp.path()) / "out", shape, im.spec, params, {}, nullptr);
    FAIL() << "exported a 2-head policy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hard-codes 8"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(fs::path(tmp.path()) / "out"));
}

// openpi's layout: no "model." prefix, lm_head the only copy of the embedding, its own config.
TEST(LeRobotPi05, ReadsOpenpisPytorchLayout) {
  ::ember::test::TempDir tmp("openpi");
  const fs::path dir = tmp.path();
  auto sd = load_tensors((kFixture / "model.safetensors").string());
  NamedTensors openpi;
  for (const auto& [k, t] : sd) {
    if (k.ends_with("embed_tokens.weight")) continue;
    openpi.emplace_back(k.substr(std::string("model.").size()), t);
  }
  save_tensors((dir / "model.safetensors").string(), openpi);
  fs::copy_file(kFixture / "ember_shrink.json", dir / "ember_shrink.json");
  {
    std::ofstream(dir / "config.json") << R"({"action_dim": 8, "action_horizon": 6, "paligemma_variant": "gemma_2b",
                                              "action_expert_variant": "gemma_300m", "precision": "float32", "max_token_len": 12})";
  }
  auto im = import_lerobot_pi05(dir);
  EXPECT_EQ(im.kind, ForeignPolicy::kOpenpi);
  auto le = import_lerobot_pi05(kFixture);
  ASSERT_EQ(im.params.size(), le.params.size());
  for (const auto& [k, t] : le.params) {
    // LeRobot 0.6.1's lm_head is a separate tensor (and random in the fixture): openpi's embedding
    if (k == "embedding") EXPECT_TRUE(at::equal(im.params.at(k), sd.at("model.paligemma_with_expert.paligemma.lm_head.weight")));
    else EXPECT_TRUE(at::equal(im.params.at(k), t)) << k;
  }
  EXPECT_EQ(im.shape.horizon, 6);
  EXPECT_EQ(im.spec.norm_options.rule, data::EpsilonRule::kAddToRange);
  // its export carries both copies of the embedding
  auto lerobot = to_lerobot_state_dict(im.shape, im.params, im.kept);
  EXPECT_TRUE(lerobot.count("model.paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight"));
  EXPECT_TRUE(lerobot.count("model.paligemma_with_expert.paligemma.lm_head.weight"));
}

// ---------------------------------------------------------------------------------------------
// bad input: one line naming the file and the field or tensor, a user error

// A copy of the fixture with `edit` applied to its config and `tensors` to its weights.
fs::path broken_copy(const ::ember::test::TempDir& tmp, const std::function<void(nlohmann::ordered_json&)>& edit,
                     const std::function<void(TensorMap&)>& tensors = nullptr) {
  const fs::path dir = fs::path(tmp.path()) / "policy";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kFixture)) fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  if (edit) {
    auto c = read_ordered_json(dir / "config.json");
    edit(c);
    std::ofstream(dir / "config.json") << c.dump(2);
  }
  if (tensors) {
    auto sd = load_tensors((dir / "model.safetensors").string());
    tensors(sd);
    save_tensors((dir / "model.safetensors").string(), NamedTensors(sd.begin(), sd.end()));
  }
  return dir;
}

void expect_refused(const fs::path& dir, const std::vector<std::string>& words) {
  try {
    import_lerobot_pi05(dir);
    ADD_FAILURE() << "imported " << dir << " (expected: " << words[0] << ")";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(e.is_user_error()) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const auto& w : words) EXPECT_NE(what.find(w), std::string::npos) << "'" << w << "' not in: " << what;
  }
}

TEST(LeRobotPi05, RefusesMissingUnexpectedAndMisshapedTensors) {
  const std::string q = "model.paligemma_with_expert.gemma_expert.model.layers.1.self_attn.q_proj.weight";
  {
    ::ember::test::TempDir tmp("lr_missing");
    expect_refused(broken_copy(tmp, nullptr, [&](TensorMap& sd) { sd.erase(q); }), {"model.safetensors", q, "missing"});
  }
  {
    ::ember::test::TempDir tmp("lr_unexpected");
    expect_refused(broken_copy(tmp, nullptr, [&](TensorMap& sd) { sd["model.extra.weight"] = at::zeros({2}); }),
                   {"model.safetensors", "model.extra.weight", "unexpected"});
  }
  {
    ::ember::test::TempDir tmp("lr_shape");
    expect_refused(broken_copy(tmp, nullptr, [&](TensorMap& sd) { sd[q] = at::zeros({128, 47}); }), {"model.safetensors", q, "shape"});
  }
  {
    ::ember::test::TempDir tmp("lr_pi0");
    const std::string n = "model.paligemma_with_expert.gemma_expert.model.layers.0.input_layernorm.weight";
    expect_refused(broken_copy(tmp, nullptr, [&](TensorMap& sd) { sd[n] = at::zeros({48}); }), {"model.safetensors", "pi0"});
  }
  {  // without the "model." prefix it is the same policy
    ::ember::test::TempDir tmp("lr_prefix");
    auto dir = broken_copy(tmp, nullptr, [](TensorMap& sd) {
      TensorMap bare;
      for (auto& [k, t] : sd) bare[k.substr(6)] = t;
      sd = bare;
    });
    auto im = import_lerobot_pi05(dir);
    EXPECT_EQ(im.params.size(), import_lerobot_pi05(kFixture).params.size());
  }
}

// issue 42: a damaged imported directory was read as another policy, exported unusable, or
// crashed; each is refused in one line naming the file
TEST(LeRobotPi05, RefusesATowerOfAnotherDepthThanItsSizesSay) {
  const std::string vt = "model.paligemma_with_expert.paligemma.model.vision_tower.vision_model.encoder.layers.";
  {
    ::ember::test::TempDir tmp("lr_vision_less");
    expect_refused(broken_copy(tmp, nullptr,
                               [&](TensorMap& sd) {
                                 for (auto it = sd.begin(); it != sd.end();) it = it->first.starts_with(vt + "1.") ? sd.erase(it) : std::next(it);
                               }),
                   {"model.safetensors", "vision tower", "1 layers", "ember_shrink.json"});
  }
  {
    ::ember::test::TempDir tmp("lr_vision_more");
    expect_refused(broken_copy(tmp, nullptr,
                               [&](TensorMap& sd) {
                                 TensorMap extra;
                                 for (const auto& [k, t] : sd)
                                   if (k.starts_with(vt + "1.")) extra[vt + "2." + k.substr(vt.size() + 2)] = t.clone();
                                 sd.insert(extra.begin(), extra.end());
                               }),
                   {"model.safetensors", "vision tower", "3 layers"});
  }
  {  // without ember_shrink.json the sizes must be the variants' (here they are a shrunken model's)
    ::ember::test::TempDir tmp("lr_no_shrink");
    auto dir = broken_copy(tmp, nullptr);
    fs::remove(dir / "ember_shrink.json");
    expect_refused(dir, {"model.safetensors", "gemma_2b"});
  }
}

TEST(LeRobotPi05, RefusesDamagedConfigStatisticsAndWeights) {
  using J = nlohmann::ordered_json;
  const std::vector<std::pair<std::function<void(J&)>, std::string>> configs = {
      {[](J& c) { c["n_action_steps"] = -1; }, "n_action_steps"},
      {[](J& c) { c["max_state_dim"] = 1e9; }, "max_state_dim"},
      {[](J& c) { c["max_state_dim"] = "32"; }, "max_state_dim"},
      {[](J& c) { c["normalization_mapping"] = "x"; }, "normalization_mapping"},
      {[](J& c) { c["normalization_mapping"]["ACTION"] = 5; }, "normalization_mapping.ACTION"},
      {[](J& c) { c["empty_cameras"] = 1000000; }, "empty_cameras"},
  };
  for (const auto& [edit, word] : configs) {
    ::ember::test::TempDir tmp("lr_config42");
    auto t = std::chrono::steady_clock::now();
    expect_refused(broken_copy(tmp, edit), {"config.json", word});
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 10.0) << word;
  }
  auto edit_pre = [](const fs::path& dir, const std::function<void(J&)>& edit) {
    auto j = read_ordered_json(dir / "policy_preprocessor.json");
    edit(j);
    std::ofstream(dir / "policy_preprocessor.json") << j.dump(2);
  };
  for (const auto& [edit, word] : std::vector<std::pair<std::function<void(J&)>, std::string>>{
           {[](J& j) { j["steps"] = J::array({5, nullptr}); }, "steps[0]"},
           {[](J& j) {
              for (auto& st : j["steps"])
                if (st.value("registry_name", "") == "normalizer_processor") st["state_file"] = 5;
            },
            "state_file"}}) {
    ::ember::test::TempDir tmp("lr_pre");
    auto dir = broken_copy(tmp, nullptr);
    edit_pre(dir, edit);
    expect_refused(dir, {"policy_preprocessor.json", word});
  }
  {  // a NaN statistic made NaN actions
    ::ember::test::TempDir tmp("lr_nan_stat");
    auto dir = broken_copy(tmp, nullptr);
    const auto file = (dir / "policy_preprocessor_step_3_normalizer_processor.safetensors").string();
    auto stats = load_tensors(file);
    auto q = stats.at("action.q01").clone();
    q[0] = std::nan("");
    stats["action.q01"] = q;
    save_tensors(file, NamedTensors(stats.begin(), stats.end()));
    expect_refused(dir, {"normalizer_processor.safetensors", "action", "q01", "not finite"});
  }
  {  // a missing q01 was passed on to the export
    ::ember::test::TempDir tmp("lr_no_q01");
    auto dir = broken_copy(tmp, nullptr);
    const auto file = (dir / "policy_preprocessor_step_3_normalizer_processor.safetensors").string();
    auto stats = load_tensors(file);
    stats.erase("action.q01");
    save_tensors(file, NamedTensors(stats.begin(), stats.end()));
    expect_refused(dir, {"normalizer_processor.safetensors", "action", "q01"});
  }
  {
    ::ember::test::TempDir tmp("lr_nan_weight");
    const std::string q = "model.paligemma_with_expert.gemma_expert.model.layers.1.self_attn.q_proj.weight";
    expect_refused(broken_copy(tmp, nullptr,
                               [&](TensorMap& sd) {
                                 auto t = sd.at(q).clone();
                                 t.view(-1)[3] = std::numeric_limits<float>::quiet_NaN();
                                 sd[q] = t;
                               }),
                   {"model.safetensors", "NaN"});
  }
}

TEST(LeRobotPi05, ExportRefusesAPolicyWithoutStatistics) {
  ::ember::test::TempDir tmp("lr_export_nostats");
  auto dir = broken_copy(tmp, nullptr);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("policy_")) fs::remove(e.path());
  auto im = import_lerobot_pi05(dir);
  EXPECT_FALSE(im.has_stats);
  const fs::path out = fs::path(tmp.path()) / "out";
  try {
    write_lerobot_pi05(out, im.shape, im.spec, im.params, im.kept, im.config);
    ADD_FAILURE() << "exported a policy without statistics";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error()) << e.what();
    EXPECT_NE(std::string(e.what()).find("no normalisation statistics"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(LeRobotPi05, RefusesConfigValuesEmberDoesNotImplement) {
  using J = nlohmann::ordered_json;
  const std::vector<std::pair<std::function<void(J&)>, std::string>> cases = {
      {[](J& c) { c["use_relative_actions"] = true; }, "use_relative_actions"},
      {[](J& c) { c["min_period"] = 0.01; }, "min_period"},
      {[](J& c) { c["max_period"] = 2.0; }, "max_period"},
      {[](J& c) { c["time_sampling_beta_beta"] = 2.0; }, "time_sampling_beta_beta"},
      {[](J& c) { c["time_sampling_offset"] = 0.0; }, "time_sampling_offset"},
      {[](J& c) { c["rtc_config"] = J{{"enabled", true}}; }, "rtc_config"},
      {[](J& c) { c["train_expert_only"] = true; }, "train_expert_only"},
      {[](J& c) { c["image_resolution"] = J::array({32, 48}); }, "image_resolution"},
      {[](J& c) { c["chunk_size"] = "six"; }, "chunk_size"},
      {[](J& c) { c["max_action_dim"] = 16; }, "max_action_dim"},
      {[](J& c) { c["paligemma_variant"] = "gemma_7b"; }, "paligemma_variant"},
      {[](J& c) { c["normalization_mapping"]["VISUAL"] = "MEAN_STD"; }, "VISUAL"},
      {[](J& c) { c["type"] = "pi0"; }, "pi0"},
  };
  for (const auto& [edit, word] : cases) {
    ::ember::test::TempDir tmp("lr_config");
    expect_refused(broken_copy(tmp, edit), {"config.json", word});
  }
  ::ember::test::TempDir tmp("lr_orbax");
  fs::create_directories(fs::path(tmp.path()) / "params");
  expect_refused(tmp.path(), {"JAX/orbax"});
}

}  // namespace
}  // namespace ember::model
