// Inference with a checkpoint: one action chunk for a dataset frame, next to the recorded one.
#pragma once

#include <string>
#include <vector>

#include "ember/train/policy_checkpoint.h"

namespace ember::train {

struct Prediction {
  std::string task;
  std::vector<std::vector<float>> predicted;  // [H][action_dim], the dataset's units
  std::vector<std::vector<float>> recorded;   // [H][action_dim]
  std::vector<uint8_t> recorded_is_pad;       // [H]
};

// Predicts the chunk of frame `index` of the dataset at `root` with the bundle's policy
// (noise drawn from a generator seeded with `seed`). Throws Error kInvalidArgument naming the
// dataset when its features differ from the checkpoint's or the index is out of range.
Prediction predict_chunk(PolicyBundle& bundle, const std::string& root, int64_t index, const at::Device& device, uint64_t seed = 0);

}  // namespace ember::train
