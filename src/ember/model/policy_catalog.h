// What each registered policy type is called and offers, without libtorch: its presets, its
// flag defaults, the build options it has. The run's configuration (train/train_config.cc)
// validates flags against this; policy_type.h adds the builders on libtorch, one per entry here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::model {

// How a policy computes (not what it is: checkpoints are the same whatever these say).
struct BuildOptions {
  bool fp8 = false;                     // --policy.fp8
  bool gradient_checkpointing = false;  // --policy.gradient_checkpointing
  bool tune_backbone = false;           // --policy.tune_backbone
  bool bf16_params = false;             // --policy.param_dtype=bf16
  // --policy.head_init=torch (groot): the embodiment MLPs start as PyTorch's Linear does instead
  // of N1.5's N(0, 0.02^2), for training from scratch (docs/groot.md)
  bool torch_head_init = false;
};

struct PolicyTypeInfo {
  std::string name;                  // --policy.type
  std::vector<std::string> presets;  // --policy.preset's choices
  std::string description;           // one line, for --help
  // flag defaults of its own where a run's flags and config file set nothing ("policy.horizon")
  std::vector<std::pair<std::string, std::string>> flag_defaults;
  bool imports = false;  // reads reference policy directories (--policy.path)
  // Throws kInvalidArgument, one line naming the flag and the type, for a build option the type
  // does not have.
  std::function<void(const BuildOptions&)> check_options;
};

// Every registered type, in registration order (the first is the default).
const std::vector<PolicyTypeInfo>& policy_type_infos();
// The type named `name`; throws kInvalidArgument "--policy.type: expected pi05 | groot, got 'x'".
const PolicyTypeInfo& policy_type_info(std::string_view name);
// "pi05 | groot"
std::string policy_type_names();
// Throws kInvalidArgument "FLAG: expected tiny, small or n15 with --policy.type=groot, got 'x'"
// unless `preset` is one of the type's.
void check_preset(const PolicyTypeInfo& type, const std::string& preset, const std::string& flag);

}  // namespace ember::model
