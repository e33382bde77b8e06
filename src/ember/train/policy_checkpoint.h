// A policy as files, so that a checkpoint alone is enough for inference:
//   model.safetensors   parameters (float32), named as the policy names them
//   policy.json         the shapes (preset and every size)
//   features.json       cameras, state/action keys and dims, normalisation modes and statistics
//   tokenizer.model     the SentencePiece model the prompts were tokenised with
// and, for a policy that came from LeRobot (model/lerobot_pi05.h), what an export writes back:
//   lerobot_config.json         its config.json
//   lerobot_unused.safetensors  the tensors pi0.5 never uses (in LeRobot's names)
// load_policy also reads a LeRobot or openpi pi0.5 policy directory itself.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "ember/model/groot.h"
#include "ember/model/pi05.h"
#include "ember/model/tokenizer.h"
#include "ember/model/processor.h"

namespace ember::train {

nlohmann::json shape_to_json(const model::PolicyShape& shape);
model::PolicyShape shape_from_json(const nlohmann::json& j, const std::string& what);
// policy.json of a groot policy: {"type": "groot", ...its base as shape_to_json..., "groot": {...}};
// "groot" also holds the training-only "dropout" (read back: a resumed run keeps it; absent in
// older files: 0.2) and, written by write_policy_files, "tune_backbone" (informational: a resumed
// run takes --policy.tune_backbone from its flags)
nlohmann::json groot_shape_to_json(const model::GrootShape& shape);
model::GrootShape groot_shape_from_json(const nlohmann::json& j, const std::string& what);
// policy.json's "type" ("pi05" when absent, as files written before groot)
std::string policy_type_of(const nlohmann::json& j);

struct PolicyBundle {
  model::PolicyShape shape;
  model::FeatureSpec spec;
  std::unique_ptr<model::Tokenizer> tokenizer;
  model::Pi05Policy policy{nullptr};               // pi05 (else null)
  std::optional<model::GrootShape> groot;          // groot: its shapes (`shape` is their base)
  std::shared_ptr<model::PolicyModuleImpl> module; // the policy, whatever its type
  int64_t step = 0;  // the training step of the checkpoint (0 when unknown)
  // from LeRobot (else null / empty): its config.json, and the tensors an export writes back
  // (model::LeRobotImport::kept: those pi0.5 never reads, the original Gemma norm weights)
  nlohmann::ordered_json lerobot_config;
  std::map<std::string, at::Tensor> lerobot_unused;
};

// Writes the four files (and the two LeRobot ones when the bundle has them) into dir (which
// exists).
void write_policy_files(const std::filesystem::path& dir, const PolicyBundle& bundle);

// Loads a checkpoint directory, an output directory (its latest checkpoint), or a LeRobot /
// openpi pi0.5 policy directory (imported, model/lerobot_pi05.h). The policy is on `device`,
// in eval mode. The tokenizer: `tokenizer_path` when given, else the directory's
// tokenizer.model; a LeRobot directory has none, and then this throws kInvalidArgument saying
// --policy.tokenizer_path is needed. Throws Error kNotFound naming what is missing,
// kCorruption / kInvalidArgument naming the file at fault.
PolicyBundle load_policy(const std::filesystem::path& path, const at::Device& device,
                         const std::optional<std::string>& tokenizer_path = std::nullopt);

// A LeRobot / openpi directory as a bundle: shapes, features and weights (CPU, eval mode),
// the tokenizer as load_policy finds it, or none when `need_tokenizer` is false.
PolicyBundle import_lerobot_bundle(const std::filesystem::path& dir, const std::optional<std::string>& tokenizer_path,
                                   bool need_tokenizer = true);

// `ember export --checkpoint DIR --to lerobot OUT`: writes the bundle as a LeRobot pi05 policy
// directory (model::write_lerobot_pi05). OUT must be absent or empty.
void export_lerobot(const PolicyBundle& bundle, const std::filesystem::path& out);

// The checkpoint directory `path` designates (itself, or <path>/checkpoints/latest).
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path);

}  // namespace ember::train
