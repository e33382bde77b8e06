// A policy as files, so that a checkpoint alone is enough for inference:
//   model.safetensors   parameters (float32), named as the policy names them
//   policy.json         the shapes (preset and every size)
//   features.json       cameras, state/action keys and dims, normalisation modes and statistics
//   tokenizer.model     the SentencePiece model the prompts were tokenised with
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "ember/model/pi05.h"
#include "ember/model/tokenizer.h"
#include "ember/model/processor.h"

namespace ember::train {

nlohmann::json shape_to_json(const model::PolicyShape& shape);
model::PolicyShape shape_from_json(const nlohmann::json& j, const std::string& what);

struct PolicyBundle {
  model::PolicyShape shape;
  model::FeatureSpec spec;
  std::unique_ptr<model::Tokenizer> tokenizer;
  model::Pi05Policy policy{nullptr};
  int64_t step = 0;  // the training step of the checkpoint (0 when unknown)
};

// Writes the four files into dir (which exists).
void write_policy_files(const std::filesystem::path& dir, const PolicyBundle& bundle);

// Loads a checkpoint directory, or an output directory (its latest checkpoint). The policy is
// on `device`, in eval mode. Throws Error kNotFound naming what is missing, kCorruption /
// kInvalidArgument naming the file at fault.
PolicyBundle load_policy(const std::filesystem::path& path, const at::Device& device);

// The checkpoint directory `path` designates (itself, or <path>/checkpoints/latest).
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path);

}  // namespace ember::train
