// What a training run derives from its configuration and dataset before it builds the policy:
// the policy's shapes and its tokenizer. Shared by `ember train` and `ember bench loader`.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "ember/data/metadata.h"
#include "ember/model/policy_type.h"
#include "ember/model/processor.h"
#include "ember/model/tokenizer.h"
#include "ember/train/train_config.h"

namespace ember::train {

// --policy.type's preset (model/policy_type.h) with the run's horizon, action width, flow steps
// and image size, and the tokenizer's vocabulary. Throws Error kInvalidArgument naming the flag
// (an unknown type or preset, an image size that is not a multiple of the patch).
std::shared_ptr<const model::PolicyArch> make_arch(const TrainConfig& c, int vocab);

// How a fresh run makes its samples (--policy.normalization, state_in_prompt, loss_on_padded_steps).
model::FeatureRules feature_rules(const TrainConfig& c);

// The run's tokenizer: the checkpoint's (resume_dir), the file --policy.tokenizer_path names, or
// one trained on the dataset's task strings (max_vocab > 0: for an imported policy whose
// embedding has that many rows, at most min(2048, max_vocab) pieces).
model::Tokenizer make_tokenizer(const TrainConfig& c, const data::Metadata& meta,
                                const std::optional<std::filesystem::path>& resume_dir, int max_vocab = 0);

}  // namespace ember::train
