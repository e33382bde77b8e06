// A policy as files, so that a checkpoint alone is enough for inference:
//   model.safetensors   parameters (float32), named as the policy names them
//   policy.json         the shapes (preset and every size)
//   features.json       cameras, state/action keys and dims, normalisation modes and statistics
//   tokenizer.model     the SentencePiece model the prompts were tokenised with, or
//   tokenizer.json      the Hugging Face byte-level BPE tokenizer (model/bpe_tokenizer.h)
// and, for a policy that came from a reference directory (its type's import, model/policy_type.h),
// what an export writes back:
//   lerobot_config.json         its config.json
//   lerobot_unused.safetensors  the tensors pi0.5 never uses (in LeRobot's names)
// load_policy also reads a registered type's reference directory (LeRobot's or openpi's pi0.5).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/model/policy_type.h"
#include "ember/model/tokenizer.h"
#include "ember/model/processor.h"

namespace ember::train {

struct PolicyBundle {
  model::PolicyShape shape;                         // arch->base()
  model::FeatureSpec spec;
  std::unique_ptr<model::Tokenizer> tokenizer;
  std::shared_ptr<const model::PolicyArch> arch;    // what the policy is (model/policy_type.h)
  std::shared_ptr<model::PolicyModuleImpl> module;  // the policy, whatever its type
  int64_t step = 0;  // the training step of the checkpoint (0 when unknown)
  // from LeRobot (else null / empty): its config.json, and the tensors an export writes back
  // (model::LeRobotImport::kept: those pi0.5 never reads, the original Gemma norm weights)
  nlohmann::ordered_json lerobot_config;
  std::map<std::string, at::Tensor> lerobot_unused;
  // what an import adapted and left out, one line each ("DIR: ..."), printed by
  // import_lerobot_bundle unless the caller prints them later (train: once its flags are checked)
  std::vector<std::string> import_notes;
};

// Writes the four files (and the two LeRobot ones when the bundle has them) into dir (which
// exists).
void write_policy_files(const std::filesystem::path& dir, const PolicyBundle& bundle);

// Loads a checkpoint directory, an output directory (its latest checkpoint), or a registered
// type's reference directory (a LeRobot / openpi pi0.5 policy, imported). The policy is on `device`,
// in eval mode. The tokenizer: `tokenizer_path` when given, else the directory's
// tokenizer.model, else its tokenizer.json; a LeRobot directory has none, and then this throws
// kInvalidArgument saying --policy.tokenizer_path is needed. Throws Error kNotFound naming what is missing,
// kCorruption / kInvalidArgument naming the file at fault.
PolicyBundle load_policy(const std::filesystem::path& path, const at::Device& device,
                         const std::optional<std::string>& tokenizer_path = std::nullopt);

// A reference directory (LeRobot / openpi) as a bundle: shapes, features and weights (CPU, eval
// mode), the tokenizer as load_policy finds it, or none when `need_tokenizer` is false. Throws
// kInvalidArgument when no registered type reads it.
PolicyBundle import_lerobot_bundle(const std::filesystem::path& dir, const std::optional<std::string>& tokenizer_path,
                                   bool need_tokenizer = true, bool print_notes = true);

// `ember export --checkpoint DIR --to FORMAT OUT`: writes the bundle as its type's reference
// directory (pi05: a LeRobot policy, the type's export_dir). OUT must be absent or empty.
// Throws kInvalidArgument naming the type when it has no export to FORMAT.
// Returns what the directory lacks for the reference's loaders, one line each.
std::vector<std::string> export_policy(const PolicyBundle& bundle, const std::string& format, const std::filesystem::path& out);
// The check export_policy makes first, for a policy of type `type_name` (before loading one).
void check_export(const std::string& type_name, const std::string& format);

// dst's parameters := src's (the same architecture), in place; a parameter of another dtype is
// replaced by a copy. The rollout's weight swap and copy_module.
void copy_parameters(torch::nn::Module& dst, const torch::nn::Module& src);

// A new module of the bundle's architecture on device holding the bundle's weights (eval mode).
std::shared_ptr<model::PolicyModuleImpl> copy_module(const PolicyBundle& bundle, const at::Device& device);

// The bundle's policy rebuilt with `steps` denoising steps (the same weights, on device, eval
// mode); steps <= 0 or the policy's own: unchanged. `flag` names the setting in errors.
void use_flow_steps(PolicyBundle& bundle, int steps, const at::Device& device, const std::string& flag);

// The checkpoint directory `path` designates (itself, or <path>/checkpoints/latest).
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path);

}  // namespace ember::train
