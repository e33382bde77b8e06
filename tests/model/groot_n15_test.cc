// GR00T-N1.5 directories in and out (model/groot_n15.h), on tests/fixtures/groot_n15_tiny (made by
// tests/python/groot_n15_reference.py from LeRobot 0.5.1's N1.5 modules: Eagle 2.5 with SigLIP and
// Qwen3, FlowmatchingActionHead): the import gives ember's shape and weights; ember's backbone
// features, training loss and sample_actions equal the reference's on the stored inputs (fp32,
// CPU, 1e-4 relative; both attention layouts); the export writes the reference's state dict back
// bit for bit; bad directories are refused by name.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/groot.h"
#include "ember/model/groot_n15.h"
#include "ember/model/groot_lerobot.h"
#include "ember/model/groot_n15_metadata.h"
#include "ember/model/policy_type.h"
#include "ember/model/weights.h"
#include "model/lerobot_reference.h"
#include "test_util.h"

namespace ember::model {
namespace {

namespace fs = std::filesystem;
// N1.5's own Eagle layout (no pixel shuffle, one Linear), and the pixel shuffle with the
// two-layer connector
const fs::path kFixture = fs::path(EMBER_TEST_DATA) / "groot_n15_tiny";
const fs::path kShuffle = fs::path(EMBER_TEST_DATA) / "groot_n15_shuffle_tiny";
constexpr double kRtol = 1e-4;  // issue 41: fp32 on the CPU

struct Reference {
  std::map<std::string, at::Tensor> t;
  nlohmann::json meta;
  explicit Reference(const fs::path& dir) {
    std::map<std::string, std::string> md;
    t = load_tensors((dir / "reference.safetensors").string(), &md);
    meta = nlohmann::json::parse(md.at("reference"));
  }
  const at::Tensor& operator()(const std::string& name) const { return t.at(name); }
};

double rel(const at::Tensor& a, const at::Tensor& b) { return test::lerobot_rel(a, b); }

GrootPolicy imported_policy(const GrootN15Import& im) {
  at::set_num_threads(1);
  return test::with_weights(GrootPolicy(im.shape), im.params);
}

// The stored batch as ember's samples: each sample's cameras, its prompt, its real state and
// action widths (N1.5 zero-pads them; ember pads them to the policy's widths), its embodiment.
std::vector<PolicySample> reference_samples(const Reference& ref) {
  const auto& m = ref.meta;
  const int64_t batch = m["batch"].get<int64_t>(), cameras = m["cameras"].get<int64_t>();
  const int64_t state_dim = m["state_dim"].get<int64_t>(), action_dim = m["action_dim"].get<int64_t>();
  std::vector<PolicySample> out(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    auto& s = out[size_t(i)];
    for (int64_t c = 0; c < cameras; ++c) {
      s.images.push_back(ref("pixel_values")[i * cameras + c].contiguous());
      s.camera_slots.push_back(int(c));
    }
    for (const auto& id : m["prompts"][size_t(i)]) s.prompt.push_back(id.get<int>());
    s.state = ref("state")[i][0].narrow(0, 0, state_dim).contiguous();
    s.actions = ref("actions")[i].narrow(1, 0, action_dim).contiguous();
    s.embodiment = m["embodiments"][size_t(i)].get<int>();
  }
  return out;
}

PolicyInputs reference_inputs(const Reference& ref, const GrootShape& shape, AttentionBackend backend,
                              std::vector<PolicySample>& samples) {
  samples = reference_samples(ref);
  std::vector<const PolicySample*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  return collate(ptrs, shape.base, backend);
}

TEST(GrootN15, ImportsTheFixturesShapeAndSkipList) {
  ASSERT_TRUE(is_groot_n15_dir(kFixture));
  EXPECT_FALSE(is_groot_n15_dir(fs::path(EMBER_TEST_DATA) / "lerobot_pi05_tiny"));
  auto im = import_groot_n15(kFixture);
  const auto& s = im.shape;
  const auto& v = s.base.vision;
  EXPECT_EQ(v.image_size, 28);
  EXPECT_EQ(v.patch, 7);
  EXPECT_EQ(v.width, 32);
  EXPECT_EQ(v.layers, 2);
  EXPECT_EQ(v.heads, 2);  // ember_shrink.json (no tensor shows it)
  EXPECT_EQ(v.mlp, 64);
  EXPECT_EQ(v.merge, 1);  // N1.5's Eagle: no pixel shuffle, one Linear
  EXPECT_EQ(s.connector_layers, 1);
  EXPECT_EQ(v.out_tokens(), 16);
  auto shuffled = import_groot_n15(kShuffle).shape;  // the other layout
  EXPECT_EQ(shuffled.base.vision.merge, 2);
  EXPECT_EQ(shuffled.connector_layers, 2);
  EXPECT_EQ(shuffled.base.vision.out_tokens(), 4);
  const auto& t = s.base.lm;
  EXPECT_EQ(t.width, 64);
  EXPECT_EQ(t.layers, 2);  // select_layer
  EXPECT_EQ(t.heads, 4);
  EXPECT_EQ(t.kv_heads, 2);
  EXPECT_EQ(t.head_dim, 16);
  EXPECT_EQ(t.mlp, 96);
  EXPECT_EQ(s.base.vocab, 512);
  EXPECT_EQ(s.base.horizon, 4);
  EXPECT_EQ(s.base.max_action_dim, 8);
  EXPECT_EQ(s.base.flow_steps, 4);
  EXPECT_EQ(s.backbone_dim, 64);
  EXPECT_EQ(s.vl_layers, 1);
  EXPECT_EQ(s.vl_heads * s.vl_head_dim, 64);
  EXPECT_EQ(s.dit_layers, 4);
  EXPECT_EQ(s.inner(), 48);
  EXPECT_EQ(s.dit_output, 32);
  EXPECT_EQ(s.hidden, 32);
  EXPECT_EQ(s.future_tokens, 4);
  EXPECT_EQ(s.max_seq_len, 16);
  EXPECT_DOUBLE_EQ(s.dropout, 0.2);
  ASSERT_EQ(s.embodiments.size(), 3u);
  for (const auto& e : s.embodiments) EXPECT_EQ(std::pair(e.state_dim, e.action_dim), std::pair(8, 8));
  // SigLIP's pooling head and the language model's lm_head: kept for export, never read
  EXPECT_EQ(im.skipped.size(), 12u);  // 11 of the pooling head, lm_head
  for (const auto& k : im.skipped)
    EXPECT_TRUE(k.find(".vision_model.vision_model.head.") != std::string::npos || k.ends_with("language_model.lm_head.weight")) << k;
  // every ember parameter, nothing else; embodiment 1's action encoder is W1[1] transposed
  GrootPolicy p(s);
  EXPECT_EQ(p->named_parameters().size(), im.params.size());
  auto sd = load_tensors((kFixture / "model.safetensors").string());
  EXPECT_TRUE(at::equal(im.params.at("heads.1.act1.weight"), sd.at("action_head.action_encoder.W1.W")[1].t()));
  EXPECT_TRUE(at::equal(im.params.at("heads.2.dec2.bias"), sd.at("action_head.action_decoder.layer2.b")[2]));
}

class GrootN15Features : public ::testing::TestWithParam<fs::path> {};

TEST_P(GrootN15Features, BackboneFeaturesAreEagles) {
  const Reference ref(GetParam());
  auto im = import_groot_n15(GetParam());
  auto policy = imported_policy(im);
  std::vector<PolicySample> samples;
  auto in = reference_inputs(ref, im.shape, AttentionBackend::kVarlen, samples);
  at::NoGradGuard no_grad;
  auto features = policy->backbone->forward(in, make_groot_layout(in, im.shape));  // [Tp, D], samples back to back
  const auto& want = ref("backbone_features");                                        // [B, L, D], no padding
  ASSERT_EQ(features.sizes(), want.reshape({-1, want.size(2)}).sizes());
  const double e = rel(features, want.reshape({-1, want.size(2)}));
  std::printf("parity (%s): backbone features %.3e\n", GetParam().filename().c_str(), e);
  EXPECT_LT(e, kRtol);
}

std::string fixture_name(const ::testing::TestParamInfo<fs::path>& info) {
  return info.param.filename() == "groot_n15_tiny" ? "N15" : "Shuffle";
}
INSTANTIATE_TEST_SUITE_P(Fixtures, GrootN15Features, ::testing::Values(kFixture, kShuffle), fixture_name);

using ParityCase = std::tuple<fs::path, AttentionBackend>;
class GrootN15Parity : public ::testing::TestWithParam<ParityCase> {};

// N1.5's FlowmatchingActionHead.forward (the loss on the stored noise and time) and get_action
// (on the stored initial noise), after EagleBackbone
TEST_P(GrootN15Parity, LossAndSampleActionsMatchTheReference) {
  const auto& [dir, backend] = GetParam();
  const Reference ref(dir);
  auto im = import_groot_n15(dir);
  auto policy = imported_policy(im);
  std::vector<PolicySample> samples;
  auto in = reference_inputs(ref, im.shape, backend, samples);
  ASSERT_TRUE(at::equal(in.actions, ref("actions")));
  ASSERT_TRUE(at::equal(in.action_mask, ref("action_mask")));
  at::NoGradGuard no_grad;
  auto loss = policy->loss(in, ref("noise"), ref("time")).loss;
  const auto noise = ref("sample_noise").clone();
  auto sampled = policy->sample_actions(in, ref("sample_noise"));
  ASSERT_TRUE(at::equal(ref("sample_noise"), noise));  // the caller's noise is left as it was
  const double e_l = rel(loss.reshape({1}), ref("loss")), e_s = rel(sampled, ref("sample_actions"));
  std::printf("parity (%s, %s): loss %.3e (%.6f), sample_actions %.3e\n", dir.filename().c_str(),
              backend == AttentionBackend::kVarlen ? "varlen" : "padded", e_l, loss.item<double>(), e_s);
  EXPECT_LT(e_l, kRtol);
  EXPECT_LT(e_s, kRtol);
}

INSTANTIATE_TEST_SUITE_P(Layouts, GrootN15Parity,
                         ::testing::Combine(::testing::Values(kFixture, kShuffle),
                                            ::testing::Values(AttentionBackend::kVarlen, AttentionBackend::kPadded)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).filename() == "groot_n15_tiny" ? "N15" : "Shuffle") +
                                  (std::get<1>(info.param) == AttentionBackend::kVarlen ? "Varlen" : "Padded");
                         });

// The export writes the reference's state dict back: every key, bit for bit; a directory it
// writes imports to the same weights and shape.
TEST_P(GrootN15Features, ExportRoundTripsBitForBit) {
  auto im = import_groot_n15(GetParam());
  auto sd = to_groot_n15_state_dict(im.shape, im.params, im.kept);
  auto want = load_tensors((GetParam() / "model.safetensors").string());
  ASSERT_EQ(sd.size(), want.size());
  for (const auto& [k, t] : want) {
    ASSERT_TRUE(sd.count(k)) << k;
    EXPECT_TRUE(at::equal(sd.at(k), t)) << k;
  }
  ember::test::TempDir tmp("groot_n15_export");
  const fs::path out = fs::path(tmp.path()) / "out";
  write_groot_n15(out, im.shape, im.params, im.kept, im.config);
  auto again = import_groot_n15(out);
  EXPECT_EQ(again.params.size(), im.params.size());
  for (const auto& [k, t] : im.params) EXPECT_TRUE(at::equal(again.params.at(k), t)) << k;
  EXPECT_EQ(again.shape.base.vision.heads, 2);
  EXPECT_EQ(again.shape.connector_layers, im.shape.connector_layers);
  EXPECT_EQ(again.shape.base.vision.merge, im.shape.base.vision.merge);
  EXPECT_EQ(again.config["action_head_cfg"], im.config["action_head_cfg"]);
  EXPECT_THROW(write_groot_n15(out, im.shape, im.params, im.kept, im.config), Error);  // not empty
}

// A copy of the fixture with one change, imported: the error names the file and the field or tensor
struct Broken {
  ember::test::TempDir tmp{"groot_n15_bad"};
  fs::path dir = fs::path(tmp.path()) / "n15";
  Broken() {
    fs::create_directories(dir);
    for (const char* f : {"config.json", "ember_shrink.json", "model.safetensors"}) fs::copy_file(kFixture / f, dir / f);
  }
  void set_config(const std::function<void(nlohmann::json&)>& edit) {
    auto j = read_json_file((dir / "config.json").string());
    edit(j);
    std::ofstream((dir / "config.json").string()) << j.dump(2);
  }
  void set_tensors(const std::function<void(std::map<std::string, at::Tensor>&)>& edit) {
    auto t = load_tensors((dir / "model.safetensors").string());
    edit(t);
    save_tensors((dir / "model.safetensors").string(), NamedTensors(t.begin(), t.end()));
  }
  std::string error() {
    try {
      auto im = import_groot_n15(dir);
      GrootPolicy p(im.shape);
      NamedTensors params;
      for (const auto& q : p->named_parameters()) params.emplace_back(q.key(), q.value());
      load_into(params, im.params, (dir / "model.safetensors").string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(GrootN15, BadDirectoriesAreRefusedByName) {
  {
    Broken b;
    b.set_tensors([](auto& t) { t.erase("action_head.model.proj_out_2.weight"); });
    EXPECT_NE(b.error().find("model.safetensors: tensor 'action_head.model.proj_out_2.weight' is missing"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_tensors([](auto& t) { t["action_head.extra.weight"] = at::zeros({2}); });
    EXPECT_NE(b.error().find("unexpected tensor 'action_head.extra.weight'"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_tensors([](auto& t) { t["action_head.action_encoder.W2.W"] = at::zeros({3, 96, 40}); });
    EXPECT_NE(b.error().find("has shape"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_tensors([](auto& t) { t["action_head.action_encoder.W2.W"] = at::zeros({2, 96, 48}); });
    EXPECT_NE(b.error().find("'action_head.action_encoder.W2.W' has shape [2, 96, 48]: 2 embodiments"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_config([](auto& j) { j["action_head_cfg"]["diffusion_model_cfg"]["positional_embeddings"] = "sinusoidal"; });
    EXPECT_NE(b.error().find("diffusion_model_cfg: field 'positional_embeddings'"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_config([](auto& j) { j["action_head_cfg"].erase("action_horizon"); });
    EXPECT_NE(b.error().find("config.json action_head_cfg: field 'action_horizon' is missing"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_config([](auto& j) { j["action_head_cfg"]["noise_s"] = 0.99; });
    EXPECT_NE(b.error().find("noise_s"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_tensors([](auto& t) { t["backbone.eagle_model.mlp1.1.weight"] = at::zeros({64, 64}); });
    EXPECT_NE(b.error().find("unexpected tensor 'backbone.eagle_model.mlp1.1.weight' after a Linear mlp1.0"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_tensors([](auto& t) { t["backbone.eagle_model.mlp1.0.weight"] = at::zeros({64, 40}); });
    EXPECT_NE(b.error().find("'backbone.eagle_model.mlp1.0.weight' reads 40 values per token"), std::string::npos) << b.error();
  }
  {
    Broken b;
    b.set_config([](auto& j) { j["model_type"] = "gr00t_n1_7"; });
    EXPECT_FALSE(is_groot_n15_dir(b.dir));
    EXPECT_NE(b.error().find("config.json: field 'model_type' is not \"gr00t_n1_5\""), std::string::npos) << b.error();
  }
}

// The registry: the groot type reads the directory (train --policy.path, predict, export) with
// N1.5's padded widths kept for a narrower dataset
TEST(GrootN15, TheGrootTypeImportsIt) {
  const PolicyType* type = foreign_policy_type(kFixture);
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->name, "groot");
  EXPECT_EQ(type->export_format, "groot_n15");
  auto imported = type->import_dir(kFixture);
  EXPECT_EQ(imported.spec.modes.at("action"), data::NormMode::kMinMax);
  // Isaac-GR00T's min-max: a constant feature is 0, not LeRobot 0.4's -1; kept through features.json
  EXPECT_EQ(imported.spec.norm_options.rule, data::EpsilonRule::kZeroRangeToZero);
  EXPECT_EQ(FeatureSpec::from_json(imported.spec.to_json(), "features.json").norm_options.rule, data::EpsilonRule::kZeroRangeToZero);
  auto odd = imported.spec.to_json();
  odd["norm_eps_rule"] = "sometimes";
  EXPECT_THROW(FeatureSpec::from_json(odd, "features.json"), Error);
  EXPECT_FALSE(imported.spec.state_in_prompt);
  EXPECT_TRUE(imported.spec.loss_on_padded_steps);
  FeatureSpec narrower = imported.spec;
  narrower.state_dim = 5, narrower.action_dim = 6;
  EXPECT_EQ(imported.arch->fit_features(narrower, "data", false), nullptr);  // kept as it is
  narrower.action_dim = 9;
  EXPECT_THROW(imported.arch->fit_features(narrower, "data", false), Error);
  narrower.action_dim = 6;
  narrower.embodiment = 2;  // --policy.embodiment: another head reads the data
  EXPECT_EQ(imported.arch->fit_features(narrower, "data", false), nullptr);
  narrower.embodiment = 3;
  EXPECT_THROW(imported.arch->fit_features(narrower, "data", false), Error);
  narrower.embodiment = 0;
  // policy.json keeps the padded widths
  auto again = arch_from_json(imported.arch->to_json(), "policy.json");
  narrower.action_dim = 6;
  EXPECT_EQ(again->fit_features(narrower, "data", true), nullptr);
}


// Isaac-GR00T's experiment_cfg/metadata.json (groot_n15_metadata.h): the embodiment tag's
// statistics, widths, cameras and heads become the imported policy's; the export writes them
// back; a malformed file is refused naming the file and field.
nlohmann::ordered_json metadata_entry(const std::string& tag) {
  using oj = nlohmann::ordered_json;
  auto part = [](std::vector<double> lo, std::vector<double> hi) {
    oj v{{"max", hi}, {"min", lo}, {"mean", lo}, {"std", hi}, {"q01", lo}, {"q99", hi}};
    return v;
  };
  oj e;
  e["statistics"]["state"]["arm"] = part({-1, -2, -3}, {1, 2, 3});
  e["statistics"]["state"]["gripper"] = part({0}, {0.5});
  e["statistics"]["action"]["arm"] = part({-4, -5, -6}, {4, 5, 6});
  e["statistics"]["action"]["gripper"] = part({-1}, {1});
  e["modalities"]["video"]["front"] = oj{{"resolution", {64, 48}}, {"channels", 3}, {"fps", 15.0}};
  e["modalities"]["video"]["wrist"] = oj{{"resolution", {64, 48}}, {"channels", 3}, {"fps", 15.0}};
  for (const char* kind : {"state", "action"}) {
    e["modalities"][kind]["arm"] = oj{{"absolute", true}, {"rotation_type", nullptr}, {"shape", {3}}, {"continuous", true}};
    e["modalities"][kind]["gripper"] = oj{{"absolute", true}, {"rotation_type", nullptr}, {"shape", {1}}, {"continuous", true}};
  }
  e["embodiment_tag"] = tag;
  return e;
}

// The registered type's import of dir: its error, or "" when it reads
std::string type_import_error(const fs::path& dir) {
  try {
    foreign_policy_type(dir)->import_dir(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct WithMetadata : Broken {
  void write(const nlohmann::ordered_json& j) {
    fs::create_directories(dir / "experiment_cfg");
    std::ofstream((dir / "experiment_cfg" / "metadata.json").string()) << j.dump(2);
  }
  std::string import_error() { return type_import_error(dir); }
};

TEST(GrootN15, ExperimentMetadataGivesTheRobot) {
  WithMetadata w;
  w.write({{"so100", metadata_entry("so100")}});  // N1.5's projector 2 (the fixture has 3 embodiments)
  const PolicyType* type = foreign_policy_type(w.dir);
  ASSERT_NE(type, nullptr);
  auto im = type->import_dir(w.dir);
  EXPECT_TRUE(im.has_stats);
  EXPECT_EQ(im.spec.embodiment, 2);
  EXPECT_EQ(im.spec.state_dim, 4);
  EXPECT_EQ(im.spec.action_dim, 4);
  EXPECT_EQ(im.spec.cameras, (std::vector<std::string>{"observation.images.front", "observation.images.wrist"}));
  EXPECT_EQ(im.spec.fps, 15.0);
  EXPECT_EQ(im.spec.stats.at("observation.state").at("min"), (std::vector<double>{-1, -2, -3, 0}));
  EXPECT_EQ(im.spec.stats.at("action").at("max"), (std::vector<double>{4, 5, 6, 1}));
  EXPECT_EQ(im.spec.stats.at("action").at("q01"), (std::vector<double>{-4, -5, -6, -1}));
  EXPECT_EQ(im.spec.modes.at("action"), data::NormMode::kMinMax);
  EXPECT_EQ(im.arch->fit_features(im.spec, "metadata", false), nullptr);  // N1.5's padded heads read it as it is

  // the export writes the robot back (one part each), and the import reads the same again
  ember::test::TempDir out("groot_n15_meta_out");
  EXPECT_TRUE(type->export_dir(fs::path(out.path()) / "x", *im.arch, im.spec, im.params, im.kept, im.config).empty());  // all six
  const auto written = read_ordered_json(fs::path(out.path()) / "x" / "experiment_cfg" / "metadata.json");
  ASSERT_TRUE(written.contains("so100")) << written.dump();
  EXPECT_EQ(written["so100"]["embodiment_tag"], "so100");
  EXPECT_EQ(written["so100"]["modalities"]["state"]["state"]["shape"], nlohmann::ordered_json({4}));
  auto again = type->import_dir(fs::path(out.path()) / "x");
  EXPECT_EQ(again.spec.stats, im.spec.stats);
  EXPECT_EQ(again.spec.embodiment, 2);
  EXPECT_EQ(again.spec.cameras, im.spec.cameras);
  // what Isaac-GR00T's loader will miss is said, one line each: quantiles the statistics lack, an
  // embodiment without an N1.5 tag (no file)
  auto lacking = im.spec;
  for (auto& [key, stats] : lacking.stats) stats.erase("q01"), stats.erase("q99");
  auto notes = type->export_dir(fs::path(out.path()) / "y", *im.arch, lacking, im.params, im.kept, im.config);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("has no q01, q99"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("ember data stats"), std::string::npos) << notes[0];
  auto untagged = im.spec;
  untagged.embodiment = 5;
  notes = type->export_dir(fs::path(out.path()) / "z", *im.arch, untagged, im.params, im.kept, im.config);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("embodiment 5 has no GR00T-N1.5 embodiment tag"), std::string::npos) << notes[0];
  EXPECT_FALSE(fs::exists(fs::path(out.path()) / "z" / "experiment_cfg" / "metadata.json"));

  // several embodiments: new_embodiment's entry, none without it
  w.write({{"gr1", metadata_entry("gr1")}, {"so100", metadata_entry("so100")}});
  auto several = type->import_dir(w.dir);
  EXPECT_FALSE(several.has_stats);
  EXPECT_EQ(several.spec.embodiment, 0);
  bool noted = false;
  for (const auto& n : several.notes) noted |= n.find("several embodiments (gr1, so100)") != std::string::npos;
  EXPECT_TRUE(noted);
  // a tag N1.5 does not name: left with a note
  w.write({{"my_robot", metadata_entry("my_robot")}});
  EXPECT_FALSE(type->import_dir(w.dir).has_stats);
}

TEST(GrootN15, BadExperimentMetadataIsRefusedByName) {
  WithMetadata w;
  auto broken = [&](const std::function<void(nlohmann::ordered_json&)>& edit) {
    auto e = metadata_entry("so100");
    edit(e);
    w.write({{"so100", e}});
    return w.import_error();
  };
  std::string err = broken([](auto& e) { e["statistics"]["state"]["arm"]["max"] = {1, 2}; });
  EXPECT_NE(err.find("metadata.json so100 statistics.state.arm: field 'min' has 3 values, the others 2"), std::string::npos) << err;
  err = broken([](auto& e) { e["modalities"]["action"]["gripper"]["shape"] = {2}; });
  EXPECT_NE(err.find("statistics.action.gripper: has 1 values per statistic, modalities.action.gripper.shape 2"), std::string::npos) << err;
  err = broken([](auto& e) { e["statistics"]["action"]["arm"].erase("min"); });
  EXPECT_NE(err.find("statistics.action.arm: field 'min' is missing"), std::string::npos) << err;
  err = broken([](auto& e) { e["statistics"]["state"]["arm"]["mean"] = {1, "x", 3}; });
  EXPECT_NE(err.find("field 'mean' is not a list of numbers"), std::string::npos) << err;
  err = broken([](auto& e) { e.erase("statistics"); });
  EXPECT_NE(err.find("field 'statistics' is missing or not an object"), std::string::npos) << err;
  w.write({{"new_embodiment", metadata_entry("new_embodiment")}});  // projector 31: the fixture has 3
  err = w.import_error();
  EXPECT_NE(err.find("metadata.json: embodiment tag 'new_embodiment' is N1.5's projector 31, but model.safetensors has 3 embodiments"),
            std::string::npos) << err;
  std::ofstream((w.dir / "experiment_cfg" / "metadata.json").string()) << "[1, 2]";
  err = w.import_error();
  EXPECT_NE(err.find("metadata.json: not an object of embodiment tags"), std::string::npos) << err;
}

// LeRobot 0.5.1's GrootPolicy directory (groot_lerobot.h; tests/fixtures/groot_lerobot_tiny,
// written by LeRobot's own GrootConfig and processors: tests/python/groot_lerobot_fixture.py):
// groot_n15_tiny's weights under "_groot_model.", the model's configuration from
// base_model_path, the robot from input_features / output_features and the pack step.
const fs::path kLeRobot = fs::path(EMBER_TEST_DATA) / "groot_lerobot_tiny";

TEST(GrootN15, LeRobotGrootPolicyDirectoriesAreRead) {
  const PolicyType* type = foreign_policy_type(kLeRobot);
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->name, "groot");
  auto im = type->import_dir(kLeRobot);
  EXPECT_EQ(im.spec.cameras, (std::vector<std::string>{"observation.images.front", "observation.images.wrist"}));
  EXPECT_EQ(im.spec.state_dim, 5);
  EXPECT_EQ(im.spec.action_dim, 6);
  EXPECT_EQ(im.spec.embodiment, 2);  // so100, the pack step's embodiment_mapping
  EXPECT_TRUE(im.has_stats);
  EXPECT_EQ(im.spec.stats.at("observation.state").at("min"), (std::vector<double>{-1, -2, -3, -4, -5}));
  EXPECT_EQ(im.spec.stats.at("action").at("max"), (std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3}));
  EXPECT_EQ(im.spec.modes.at("observation.state"), data::NormMode::kMinMax);
  EXPECT_EQ(im.spec.norm_options.rule, data::EpsilonRule::kZeroRangeToZero);  // the pack step's: max == min gives 0
  EXPECT_FALSE(im.spec.state_in_prompt);
  EXPECT_EQ(im.arch->fit_features(im.spec, "lerobot", false), nullptr);
  // the same model as the Isaac-GR00T directory it was made from, weight for weight
  auto n15 = type->import_dir(kFixture);
  EXPECT_EQ(im.arch->to_json(), n15.arch->to_json());
  ASSERT_EQ(im.params.size(), n15.params.size());
  for (const auto& [name, t] : n15.params) EXPECT_TRUE(at::equal(im.params.at(name), t)) << name;
  EXPECT_EQ(im.kept.size(), n15.kept.size());
}

TEST(GrootN15, BadLeRobotGrootDirectoriesAreRefusedByName) {
  struct Copy {
    ember::test::TempDir tmp{"groot_lerobot_bad"};
    fs::path dir = fs::path(tmp.path()) / "policy";
    Copy() {
      fs::copy(kLeRobot, dir);
      config([](auto& c) { c["base_model_path"] = kFixture.string(); });
    }
    void config(const std::function<void(nlohmann::ordered_json&)>& edit) {
      auto c = read_ordered_json(dir / "config.json");
      edit(c);
      std::ofstream((dir / "config.json").string()) << c.dump(2);
    }
    std::string error() { return type_import_error(dir); }
  };
  {
    Copy c;  // an absolute base_model_path reads as well
    EXPECT_EQ(c.error(), "");
  }
  {
    Copy c;
    auto t = load_tensors((c.dir / "model.safetensors").string());
    t["action_head.stray"] = at::zeros({2});
    save_tensors((c.dir / "model.safetensors").string(), NamedTensors(t.begin(), t.end()));
    EXPECT_NE(c.error().find("model.safetensors: tensor 'action_head.stray' is not under '_groot_model.'"), std::string::npos) << c.error();
  }
  {
    Copy c;
    c.config([](auto& j) { j["base_model_path"] = (fs::path(EMBER_TEST_DATA) / "lerobot_pi05_tiny").string(); });
    EXPECT_NE(c.error().find("config.json: base_model_path '"), std::string::npos) << c.error();
    EXPECT_NE(c.error().find("is not a GR00T-N1.5 directory"), std::string::npos) << c.error();
  }
  {
    Copy c;
    c.config([](auto& j) { j["output_features"]["action"]["shape"] = {9}; });
    EXPECT_NE(c.error().find("the state has 5 values and the action 9"), std::string::npos) << c.error();
  }
  {
    Copy c;
    c.config([](auto& j) { j["embodiment_tag"] = "new_embodiment"; });  // projector 31 of 3
    EXPECT_NE(c.error().find("embodiment_tag 'new_embodiment' is projector 31, but the model has 3 embodiments"), std::string::npos) << c.error();
  }
  {
    Copy c;
    const auto file = c.dir / "policy_preprocessor_step_2_groot_pack_inputs_v3.safetensors";
    auto t = load_tensors(file.string());
    t["action.min"] = at::zeros({4});
    save_tensors(file.string(), NamedTensors(t.begin(), t.end()));
    EXPECT_NE(c.error().find("statistic 'action.min' has 4 values, the feature 6"), std::string::npos) << c.error();
  }
}

// GR00T-N1.5-3B itself, by name and shape (tests/fixtures/groot_n15_inventory.json: every tensor
// the reference's modules hold at N1.5's real sizes, listed on the meta device; no weights): the
// import reads exactly the n15 preset, every tensor but SigLIP's pooling head maps to one of
// ember's parameters, the counts agree with parameter_count, and the export gives back the
// same names and shapes.
TEST(GrootN15, TheRealCheckpointsNamesAndShapesMapToTheN15Preset) {
  const auto inv = read_ordered_json(fs::path(EMBER_TEST_DATA) / "groot_n15_inventory.json");
  std::map<std::string, at::Tensor> sd;
  for (const auto& [key, shape] : inv["tensors"].items())
    sd[key] = at::empty(shape.get<std::vector<int64_t>>(), at::TensorOptions().device(at::kMeta));
  auto im = import_groot_n15(inv["config"], sd, nlohmann::ordered_json::object(), "config.json", "model.safetensors");
  auto want = groot_preset_shape("n15");
  EXPECT_EQ(groot_shape_to_json(im.shape).dump(), [&] {
    auto j = groot_shape_to_json(want);
    j["preset"] = "gr00t_n1_5";
    return j.dump();
  }());
  EXPECT_TRUE(im.notes.empty()) << im.notes.front();  // nothing differs from N1.5's sizes
  EXPECT_EQ(im.skipped.size(), 11u);                  // SigLIP's pooling head (the embedding is tied: no lm_head)
  int64_t values = 0;
  for (const auto& [k, t] : im.params) values += t.numel();
  EXPECT_EQ(values, parameter_count(want).total());
  auto back = to_groot_n15_state_dict(im.shape, im.params, im.kept);
  ASSERT_EQ(back.size(), sd.size());
  for (const auto& [k, t] : sd) {
    ASSERT_TRUE(back.count(k)) << k;
    EXPECT_EQ(back.at(k).sizes(), t.sizes()) << k;
  }
}

}  // namespace
}  // namespace ember::model
