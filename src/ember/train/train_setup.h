// What a training run derives from its configuration and dataset before it builds the policy:
// the policy's shapes and its tokenizer. Shared by `ember train` and `ember bench loader`.
#pragma once

#include <filesystem>
#include <optional>

#include "ember/data/metadata.h"
#include "ember/model/groot_shape.h"
#include "ember/model/policy_shape.h"
#include "ember/model/processor.h"
#include "ember/model/tokenizer.h"
#include "ember/train/train_config.h"

namespace ember::train {

// The preset's shapes with the run's horizon, action width, flow steps and image size, and the
// tokenizer's vocabulary. Throws Error kInvalidArgument naming the flag for an image size that
// is not a multiple of the patch.
model::PolicyShape make_shape(const TrainConfig& c, int vocab);

// The same for --policy.type=groot: the groot preset's shapes with the run's horizon, action
// width, flow steps, image size and vocabulary. Embodiment 0 takes the dataset's widths later
// (with_dataset_embodiment).
model::GrootShape make_groot_shape(const TrainConfig& c, int vocab);
// Embodiment 0 of `shape` given the dataset's state and action widths (a resumed run's must
// match: throws kInvalidArgument naming the dataset otherwise).
void with_dataset_embodiment(model::GrootShape& shape, const model::FeatureSpec& spec, const std::string& root, bool resumed);

// The run's tokenizer: the checkpoint's (resume_dir), the file --policy.tokenizer_path names, or
// one trained on the dataset's task strings.
model::Tokenizer make_tokenizer(const TrainConfig& c, const data::Metadata& meta,
                                const std::optional<std::filesystem::path>& resume_dir);

}  // namespace ember::train
