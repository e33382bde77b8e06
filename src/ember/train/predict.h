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
  at::Tensor raw;                             // [H, max_action_dim] float32: the model's normalised output
};

// Predicts the chunk of frame `index` of the dataset at `root` with the bundle's policy
// (train/inference.h's sample_chunks; the initial flow noise seeded_noise(seed), or `noise`
// [H, max_action_dim] when defined, so that another implementation can be compared on the
// same draw). Throws Error kInvalidArgument naming the dataset when its features differ
// from the checkpoint's or the index is out of range, naming `noise_what` when the noise is
// not [H, max_action_dim].
Prediction predict_chunk(PolicyBundle& bundle, const std::string& root, int64_t index, const at::Device& device, uint64_t seed = 0,
                         const at::Tensor& noise = {}, const std::string& noise_what = "noise");

// Reads a noise file: safetensors (its one tensor, or the one named "noise") or NumPy .npy
// (float32 or float64, C order), as [H, max_action_dim] float32 ([1, H, A] accepted). Throws
// kInvalidArgument / kCorruption naming the file and what is wrong.
at::Tensor read_noise_file(const std::string& path, const model::PolicyShape& shape);

}  // namespace ember::train
