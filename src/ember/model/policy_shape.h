// The shapes of a pi0.5-style policy and its named presets. Pure data, no libtorch.
//
//   vision   a ViT (SigLIP-like) over each present camera image: (image/patch)^2 tokens
//   lm       the Gemma-like language backbone over the prefix [image tokens ; prompt tokens]
//   expert   the action expert over the suffix (H action tokens); same layers, heads and head
//            dim as lm, so the two share one attention per layer
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ember::model {

struct VisionShape {
  int image_size = 224;  // square input, pixels
  int patch = 14;
  int width = 1152;
  int layers = 27;
  int heads = 16;
  int mlp = 4304;
  // merge x merge neighbouring patches become one prefix token (a pixel shuffle; 1 for pi0.5,
  // 2 for GR00T-N1.5's Eagle backbone)
  int merge = 1;
  int tokens() const { return (image_size / patch) * (image_size / patch); }  // patches per image
  int out_tokens() const { return tokens() / (merge * merge); }             // prefix tokens per image
};

struct TowerShape {
  int width = 2048;
  int layers = 18;
  int heads = 8;      // query heads
  int kv_heads = 1;   // multi-query attention
  int head_dim = 256;
  int mlp = 16384;
};

struct PolicyShape {
  std::string preset;
  VisionShape vision;
  TowerShape lm;
  TowerShape expert{1024, 18, 8, 1, 256, 4096};
  int vocab = 257152;       // PaliGemma's; a trained tokenizer sets its own
  int horizon = 50;         // H: action tokens per sample
  int max_action_dim = 32;  // actions are zero-padded to this many dimensions
  int max_cameras = 3;      // camera slots of the padded baseline
  int max_prompt = 200;     // prompt slots of the padded baseline (LeRobot's tokenizer_max_length)
  int flow_steps = 10;      // Euler steps of sample_actions

  int64_t prefix_tokens(int cameras, int prompt_tokens) const {
    return int64_t(cameras) * vision.out_tokens() + prompt_tokens;
  }
};

// "tiny" (trains in seconds on a CPU), "small" (~150M parameters besides the embedding) or
// "pi05" (pi0.5's real shapes). Throws Error kInvalidArgument naming the preset otherwise.
PolicyShape preset_shape(std::string_view preset);

// Checks the shapes are usable (positive, image divisible by patch, heads divisible by
// kv_heads, lm and expert agree on layers/heads/head_dim); throws kInvalidArgument naming the
// field.
void validate(const PolicyShape& shape);

// The one check of a requested camera size (--dataset.image_size, ember rl's
// --policy.image_size): v.image_size = size, which must lie in 1..4096 and be a multiple of the
// patch grid's unit (patch x merge); else kInvalidArgument naming `flag` and the unit.
void set_image_size(VisionShape& v, int64_t size, const std::string& flag);

// Parameters of the policy with this shape (embedding included).
int64_t parameter_count(const PolicyShape& shape);

}  // namespace ember::model
