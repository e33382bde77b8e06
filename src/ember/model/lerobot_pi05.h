// LeRobot's (and openpi's PyTorch) pi0.5 policy directories in and out: config, weights in
// LeRobot's names, normalisation statistics. The name map, the transforms and every refused
// config value are those of docs/lerobot_pi05.md (section 2: names; 5: openpi's layout).
//
// A LeRobot directory (PI05Policy.save_pretrained + lerobot-train's processors):
//   config.json                    PI05Config, "type": "pi05"
//   model.safetensors              the state dict, keys with or without the "model." prefix
//   policy_preprocessor.json       its normalizer_processor step names the statistics file
//   policy_preprocessor_step_<k>_normalizer_processor.safetensors   "<feature>.<stat>" float32
//   ember_shrink.json (optional)   the sizes of a shrunken test model (tests/python/
//                                  lerobot_pi05_reference.py), whose config.json still names
//                                  the full variants
// openpi's PyTorch conversion: config.json {action_dim, action_horizon, paligemma_variant,
// action_expert_variant, precision}, model.safetensors without the prefix and with lm_head as
// the only copy of the embedding, statistics in assets/<id>/norm_stats.json. JAX/orbax
// checkpoints are refused by name.
//
// Sizes: every size is read from the tensors (the head counts, which no tensor shows, are
// LeRobot's: 8 for both Gemma towers, 16 for SigLIP, or ember_shrink.json's) and compared with
// the variants; sizes that differ (a shrunken model) are kept and reported in `notes`. Every
// tensor is then checked against the shape: a missing, unexpected or mis-shaped one is refused
// with one line naming the file and the tensor.
//
// Transforms: vision q/k/v fused into qkv (cat on dim 0), Gemma RMSNorm scales w -> 1 + w;
// export undoes both. The tensors pi0.5 never reads (the two lm_heads, the language model's
// final norm, its last layer's queries, output and MLP) are kept aside, listed in `skipped`,
// and written back on export, because LeRobot loads strictly and returns a random model when
// any key is missing.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/model/policy_shape.h"
#include "ember/model/policy_type.h"
#include "ember/model/processor.h"

namespace ember::model {

enum class ForeignPolicy { kNone, kLeRobot, kOpenpi };

// Which kind of policy directory `dir` is. kNone for anything else (an ember checkpoint).
// Throws kInvalidArgument naming the directory for a JAX/orbax checkpoint, and naming
// config.json for a LeRobot config of another policy type.
ForeignPolicy foreign_policy_kind(const std::filesystem::path& dir);

using TensorMap = std::map<std::string, at::Tensor>;

struct LeRobotImport {
  ForeignPolicy kind = ForeignPolicy::kNone;
  PolicyShape shape;     // preset "lerobot" or "openpi"
  FeatureSpec spec;      // cameras (config order, empty slots included), keys, dims, modes,
                         // statistics (empty when the directory has none), LeRobot's rules on
  bool has_stats = false;
  TensorMap params;      // ember's names (Pi05PolicyImpl::named_parameters), the file's dtypes
  TensorMap kept;        // LeRobot names ("model." prefix): the tensors pi0.5 never reads, and
                         // the original Gemma norm weights (an export writes them back while
                         // 1 + w still equals the policy's scale, so unchanged weights round-trip)
  std::vector<std::string> skipped;  // the never-read tensors of the file, sorted
  std::vector<std::string> notes;    // what a user should know (sizes taken from the tensors)
  nlohmann::ordered_json config;     // config.json as a PI05Config (openpi: the equivalent one)
};

// Reads a LeRobot or openpi pi0.5 directory. Throws Error (kNotFound, kCorruption,
// kInvalidArgument, kUnsupported) with one line naming the file and the field or tensor; the
// config values ember does not implement are refused so: use_relative_actions, min_period /
// max_period other than 4e-3 / 4, time_sampling_* other than Beta(1.5, 1) * 0.999 + 0.001,
// rtc_config, freeze_vision_encoder, train_expert_only, non-square image_resolution, an
// image normalisation other than IDENTITY, a pi0 checkpoint (non-adaptive expert norms).
LeRobotImport import_lerobot_pi05(const std::filesystem::path& dir);

// LeRobot's state dict (keys with or without "model."; legacy names as LeRobot's
// _fix_pytorch_state_dict_keys) -> ember's names for `shape`. `file` names the source in
// errors. Fills kept / skipped as above.
TensorMap from_lerobot_state_dict(const PolicyShape& shape, const TensorMap& lerobot, const std::string& file,
                                  TensorMap* kept = nullptr, std::vector<std::string>* skipped = nullptr);

// ember's named parameters -> every key of LeRobot 0.6.1's PI05Policy state dict ("model."
// prefix). A never-read tensor comes from `kept` when it has it, else: the PaliGemma lm_head
// a copy of the embedding (the tie LeRobot starts from), the rest zeros (a zero final-norm
// weight is Gemma's identity). Throws kInvalidArgument for a shape LeRobot cannot build (query
// heads other than 8: LeRobot hard-codes them).
TensorMap to_lerobot_state_dict(const PolicyShape& shape, const TensorMap& ember, const TensorMap& kept = {});

// Writes a LeRobot pi05 policy directory at `out` (absent or empty): config.json (`base`, a
// PI05Config, when not null, with the fields ember's shape and features determine replaced),
// model.safetensors (every key, float32), the pre/post-processor files with the statistics,
// and ember_shrink.json when the sizes are not pi0.5's. Written into a temporary directory
// beside `out`, then renamed: nothing partial is left on failure.
void write_lerobot_pi05(const std::filesystem::path& out, const PolicyShape& shape, const FeatureSpec& spec,
                        const TensorMap& ember, const TensorMap& kept, const nlohmann::ordered_json& base);


}  // namespace ember::model
