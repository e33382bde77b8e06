#include "ember/model/lerobot_pi05.h"
#include "ember/model/lerobot_pi05_common.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/core/output_dir.h"
#include "ember/model/weights.h"


// An ember pi0.5 written as a LeRobot pi05 policy directory: config.json, model.safetensors and
// the processor files LeRobot 0.6.1 reads (docs/lerobot_pi05.md).
namespace ember::model {

namespace fs = std::filesystem;
using namespace pi05_io;

namespace {

// ---------------------------------------------------------------------------------------------
// export helpers

ojson default_pi05_config() {
  // PI05Config's fields as LeRobot 0.6.1 saves them (configuration_pi05.py), the ones ember
  // determines filled in by write_lerobot_pi05
  return ojson::parse(R"({
    "type": "pi05", "n_obs_steps": 1, "input_features": {}, "output_features": {}, "device": "cpu",
    "use_amp": false, "use_peft": false, "push_to_hub": false, "repo_id": null, "private": null, "tags": null,
    "license": null, "pretrained_path": null, "pretrained_revision": null,
    "paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m", "dtype": "float32",
    "chunk_size": 50, "n_action_steps": 50, "max_state_dim": 32, "max_action_dim": 32, "num_inference_steps": 10,
    "time_sampling_beta_alpha": 1.5, "time_sampling_beta_beta": 1.0, "time_sampling_scale": 0.999,
    "time_sampling_offset": 0.001, "min_period": 0.004, "max_period": 4.0, "use_relative_actions": false,
    "relative_exclude_joints": ["gripper"], "action_feature_names": null, "rtc_config": null,
    "image_resolution": [224, 224], "empty_cameras": 0, "tokenizer_max_length": 200,
    "normalization_mapping": {"VISUAL": "IDENTITY", "STATE": "QUANTILES", "ACTION": "QUANTILES"},
    "gradient_checkpointing": false, "compile_model": false, "compile_mode": "max-autotune",
    "freeze_vision_encoder": false, "train_expert_only": false, "optimizer_lr": 2.5e-05,
    "optimizer_betas": [0.9, 0.95], "optimizer_eps": 1e-08, "optimizer_weight_decay": 0.01,
    "optimizer_grad_clip_norm": 1.0, "scheduler_warmup_steps": 1000, "scheduler_decay_steps": 30000,
    "scheduler_decay_lr": 2.5e-06})");
}

bool is_pi05_size(const PolicyShape& s) {
  const PolicyShape real = preset_shape("pi05");
  auto same = [](const TowerShape& a, const TowerShape& b) {
    return a.width == b.width && a.layers == b.layers && a.heads == b.heads && a.kv_heads == b.kv_heads &&
           a.head_dim == b.head_dim && a.mlp == b.mlp;
  };
  return same(s.lm, real.lm) && same(s.expert, real.expert) && s.vision.width == real.vision.width &&
         s.vision.layers == real.vision.layers && s.vision.heads == real.vision.heads && s.vision.mlp == real.vision.mlp &&
         s.vision.patch == real.vision.patch && s.vocab == real.vocab;
}

ojson shrink_json(const PolicyShape& s) {
  auto tower = [](const TowerShape& t) {
    return ojson{{"depth", t.layers}, {"head_dim", t.head_dim}, {"mlp_dim", t.mlp}, {"num_heads", t.heads},
                 {"num_kv_heads", t.kv_heads}, {"width", t.width}};
  };
  return ojson{{"action_expert", tower(s.expert)},
               {"paligemma", tower(s.lm)},
               {"vision", {{"hidden_size", s.vision.width}, {"intermediate_size", s.vision.mlp}, {"num_attention_heads", s.vision.heads},
                           {"num_hidden_layers", s.vision.layers}, {"patch_size", s.vision.patch}}},
               {"vocab_size", s.vocab}};
}

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile f(path.string());
  f.write(text.data(), text.size());
  f.commit();
}

NamedTensors stats_tensors(const FeatureSpec& spec) {
  NamedTensors out;
  for (const auto& [key, stats] : spec.stats)
    for (const auto& [stat, values] : stats) {
      auto t = at::tensor(values, at::kDouble).to(at::kFloat);
      out.emplace_back(key + "." + stat, t);
    }
  return out;
}

ojson processor_features(const FeatureSpec& spec, int image, bool with_inputs) {
  ojson f = ojson::object();
  if (with_inputs) {
    for (const auto& cam : spec.cameras) f[cam] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
    f[spec.state_key] = {{"type", "STATE"}, {"shape", ojson::array({spec.state_dim})}};
  }
  f[spec.action_key] = {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}};
  return f;
}

ojson norm_map(const FeatureSpec& spec) {
  return {{"VISUAL", "IDENTITY"},
          {"STATE", data::norm_mode_name(spec.modes.at(spec.state_key))},
          {"ACTION", data::norm_mode_name(spec.modes.at(spec.action_key))}};
}

}  // namespace

void write_lerobot_pi05(const fs::path& out, const PolicyShape& shape, const FeatureSpec& spec, const TensorMap& ember,
                        const TensorMap& kept, const nlohmann::ordered_json& base_in) {
  check_output_dir(out.string(), "--to lerobot OUT");
  const TensorMap sd = to_lerobot_state_dict(shape, ember, kept);
  if (!spec.modes.count(spec.state_key) || !spec.modes.count(spec.action_key))
    bad(out.string(), "the policy has no normalisation modes for its state and action", ErrorKind::kInvalidArgument);
  // LeRobot normalises with what the processor files hold: a policy without statistics (a
  // directory imported without its processor files) cannot be written as one it could use
  for (const auto& key : {spec.state_key, spec.action_key}) {
    const data::NormMode mode = spec.modes.at(key);
    if (mode == data::NormMode::kIdentity) continue;
    auto it = spec.stats.find(key);
    if (it == spec.stats.end())
      bad(out.string(), "the policy has no normalisation statistics for '" + key + "' (" + data::norm_mode_name(mode) +
                            "): LeRobot could not use the directory (import one with its policy_preprocessor.json)", ErrorKind::kInvalidArgument);
    try {
      data::FeatureNormalizer(mode, it->second, key, spec.norm_options);
    } catch (const Error& e) {
      bad(out.string(), e.what(), ErrorKind::kInvalidArgument);
    }
  }
  // config.json: the base with what ember's shape and features fix replaced
  ojson c = base_in.is_object() ? base_in : default_pi05_config();
  const int image = shape.vision.image_size;
  ojson inputs = ojson::object();
  int empty = 0;
  for (const auto& cam : spec.cameras) {
    if (cam.starts_with("observation.images.empty_camera_")) continue;  // listed after the state
    inputs[cam] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
  }
  inputs[spec.state_key] = {{"type", "STATE"}, {"shape", ojson::array({spec.state_dim})}};
  // ember's unnamed camera slots become LeRobot's empty cameras
  for (int slot = int(inputs.size()) - 1; slot < shape.max_cameras; ++slot, ++empty)
    inputs["observation.images.empty_camera_" + std::to_string(empty)] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
  c["type"] = "pi05";
  c["input_features"] = inputs;
  c["output_features"] = {{spec.action_key, {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}}}};
  c["dtype"] = "float32";
  c["chunk_size"] = shape.horizon;
  const std::string base_file = "the configuration exported";
  c["n_action_steps"] = std::clamp(get<int>(c, "n_action_steps", shape.horizon, base_file), 1, shape.horizon);
  c["max_action_dim"] = shape.max_action_dim;
  c["max_state_dim"] = std::clamp<int64_t>(get<int64_t>(c, "max_state_dim", 32, base_file), spec.state_dim, std::max<int64_t>(4096, spec.state_dim));
  c["num_inference_steps"] = shape.flow_steps;
  c["image_resolution"] = ojson::array({image, image});
  c["empty_cameras"] = empty;
  c["tokenizer_max_length"] = shape.max_prompt;
  c["normalization_mapping"] = norm_map(spec);
  if (!is_pi05_size(shape)) {  // ember_shrink.json holds the sizes; the variants stay LeRobot's names
    c["paligemma_variant"] = "gemma_2b";
    c["action_expert_variant"] = "gemma_300m";
  }
  // the processors (lerobot/policies/pi05/processor_pi05.py's pipeline, as lerobot-train saves it)
  ojson all_features = ojson::object();
  for (const auto& [k, v] : inputs.items()) all_features[k] = v;
  all_features[spec.action_key] = {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}};
  const double eps = spec.norm_options.eps;
  ojson pre = {{"name", "policy_preprocessor"},
               {"steps",
                ojson::array({{{"registry_name", "rename_observations_processor"}, {"config", {{"rename_map", ojson::object()}}}},
                 {{"registry_name", "to_batch_processor"}, {"config", ojson::object()}},
                 {{"registry_name", "relative_actions_processor"},
                  {"config", {{"enabled", false}, {"exclude_joints", ojson::array({"gripper"})}, {"action_names", nullptr}}}},
                 {{"registry_name", "normalizer_processor"},
                  {"config", {{"eps", eps}, {"features", all_features}, {"norm_map", norm_map(spec)}}},
                  {"state_file", "policy_preprocessor_step_3_normalizer_processor.safetensors"}},
                 {{"registry_name", "pi05_prepare_state_tokenizer_processor_step"}, {"config", ojson::object()}},
                 {{"registry_name", "tokenizer_processor"},
                  {"config", {{"max_length", shape.max_prompt}, {"task_key", "task"}, {"padding_side", "right"}, {"padding", "max_length"},
                              {"truncation", true}, {"tokenizer_name", "google/paligemma-3b-pt-224"}}}},
                 {{"registry_name", "device_processor"}, {"config", {{"device", "cpu"}, {"float_dtype", nullptr}}}}})}};
  ojson post = {{"name", "policy_postprocessor"},
                {"steps",
                 ojson::array({{{"registry_name", "unnormalizer_processor"},
                   {"config", {{"eps", eps}, {"features", processor_features(spec, image, false)}, {"norm_map", norm_map(spec)}}},
                   {"state_file", "policy_postprocessor_step_0_unnormalizer_processor.safetensors"}},
                  {{"registry_name", "absolute_actions_processor"}, {"config", {{"enabled", false}}}},
                  {{"registry_name", "device_processor"}, {"config", {{"device", "cpu"}, {"float_dtype", nullptr}}}}})}};
  // into a temporary directory beside `out`, renamed at the end
  fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  fs::path tmp = parent / ("." + out.filename().string() + ".tmp-" + std::to_string(std::random_device{}()));
  fs::create_directories(tmp);
  try {
    write_text(tmp / "config.json", c.dump(4) + "\n");
    NamedTensors tensors(sd.begin(), sd.end());
    save_tensors((tmp / "model.safetensors").string(), tensors, {{"format", "pt"}});
    write_text(tmp / "policy_preprocessor.json", pre.dump(2) + "\n");
    write_text(tmp / "policy_postprocessor.json", post.dump(2) + "\n");
    const auto stats = stats_tensors(spec);
    save_tensors((tmp / "policy_preprocessor_step_3_normalizer_processor.safetensors").string(), stats);
    save_tensors((tmp / "policy_postprocessor_step_0_unnormalizer_processor.safetensors").string(), stats);
    if (!is_pi05_size(shape)) write_text(tmp / "ember_shrink.json", shrink_json(shape).dump(2) + "\n");
    std::error_code ec;
    if (fs::exists(out)) fs::remove(out, ec);  // an empty directory (check_output_dir)
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace ember::model
