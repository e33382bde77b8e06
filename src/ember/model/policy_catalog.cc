#include "ember/model/policy_catalog.h"

#include <algorithm>

#include "ember/core/error.h"

namespace ember::model {

namespace {

PolicyTypeInfo pi05_info() {
  PolicyTypeInfo t;
  t.name = "pi05";
  t.presets = {"tiny", "small", "pi05"};
  t.description = "pi0.5: vision tower + Gemma-like language model, an action expert sharing its attention";
  t.imports = true;  // LeRobot's and openpi's pi0.5 directories
  t.check_options = [](const BuildOptions& o) {
    if (o.tune_backbone)
      throw Error(ErrorKind::kInvalidArgument, "--policy.tune_backbone: false with --policy.type=pi05 (pi0.5 trains every weight)");
    if (o.torch_head_init)
      throw Error(ErrorKind::kInvalidArgument, "--policy.head_init: n15 with --policy.type=pi05 (groot's embodiment heads only)");
  };
  return t;
}

PolicyTypeInfo groot_info() {
  PolicyTypeInfo t;
  t.name = "groot";
  t.presets = {"tiny", "small", "n15"};
  t.imports = true;  // GR00T-N1.5 directories (Isaac-GR00T's GR00TN15 layout, model/groot_n15.h)
  t.description = "GR00T-N1.5: an Eagle-like backbone (frozen by default), a DiT action head per embodiment";
  // N1.5's chunk of 16 actions and 4 Euler steps (pi0.5's are the flags' own defaults); its
  // min-max normalisation, task-only prompt and loss over every chunk step; its AdamW (lr 1e-4,
  // betas 0.95 / 0.999, weight decay 1e-5) and its 5 % warm-up (the warm-up scales with --steps:
  // 1500 of the 30000 decay steps is 5 % of any run up to 30000 steps). The cosine keeps ember's
  // floor of 10 % (N1.5's ends at 0: a run longer than the decay would stop learning). Sources:
  // docs/groot.md.
  t.flag_defaults = {{"policy.horizon", "16"},
                     {"policy.num_steps", "4"},
                     {"policy.normalization", "MIN_MAX"},
                     {"policy.state_in_prompt", "false"},
                     {"policy.loss_on_padded_steps", "true"},
                     {"optimizer.lr", "1e-4"},
                     {"optimizer.betas", "[0.95,0.999]"},
                     {"optimizer.weight_decay", "1e-5"},
                     {"scheduler.warmup_steps", "1500"},
                     {"policy.dropout", "0.2"}};
  t.check_options = [](const BuildOptions& o) {
    if (o.fp8) throw Error(ErrorKind::kInvalidArgument, "--policy.fp8: only --policy.type=pi05 has FP8 layers (not groot)");
    if (o.gradient_checkpointing)
      throw Error(ErrorKind::kInvalidArgument, "--policy.gradient_checkpointing: false with --policy.type=groot (pi05 only for now)");
    if (o.bf16_params)
      throw Error(ErrorKind::kInvalidArgument, "--policy.param_dtype: fp32 with --policy.type=groot (bf16 compute under autocast)");
  };
  return t;
}

}  // namespace

const std::vector<PolicyTypeInfo>& policy_type_infos() {
  // the registration: one line per type (policy_type.cc pairs each with its builders)
  static const std::vector<PolicyTypeInfo> types{pi05_info(), groot_info()};
  return types;
}

std::string policy_type_names() {
  std::string names;
  for (const auto& t : policy_type_infos()) names += (names.empty() ? "" : " | ") + t.name;
  return names;
}

const PolicyTypeInfo& policy_type_info(std::string_view name) {
  for (const auto& t : policy_type_infos())
    if (t.name == name) return t;
  throw Error(ErrorKind::kInvalidArgument, "--policy.type: expected " + policy_type_names() + ", got '" + std::string(name) + "'");
}

void check_preset(const PolicyTypeInfo& type, const std::string& preset, const std::string& flag) {
  if (std::find(type.presets.begin(), type.presets.end(), preset) != type.presets.end()) return;
  std::string list;
  for (size_t i = 0; i < type.presets.size(); ++i)
    list += (i == 0 ? "" : i + 1 == type.presets.size() ? " or " : ", ") + type.presets[i];
  throw Error(ErrorKind::kInvalidArgument, flag + ": expected " + list + " with --policy.type=" + type.name + ", got '" + preset + "'");
}

}  // namespace ember::model
