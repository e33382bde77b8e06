// One micro-batch of policy inputs, in the varlen (packed) or padded layout.
//
// Host side, a PolicySample is one training example: the images of its present cameras, its
// prompt tokens, its normalised action chunk. collate() lays a set of samples out for the
// chosen attention backend:
//   varlen   only present cameras' images go through the vision tower; the prefix of each
//            sample is [its image tokens ; its prompt tokens], samples back to back.
//   padded   max_cameras image slots per sample (absent cameras: blank images, run through
//            the tower and masked out) and the prompt padded to max_prompt tokens, as LeRobot.
// Position ids count real tokens only, so both layouts give each real token the same position.
#pragma once

#include <ATen/ATen.h>

#include <span>
#include <string>
#include <vector>

#include "ember/core/thread_pool.h"
#include "ember/model/attention.h"
#include "ember/model/policy_shape.h"

namespace ember::model {

struct PolicySample {
  std::vector<at::Tensor> images;  // present cameras, each [3, S, S] float32 in [-1, 1]
  std::vector<int> camera_slots;   // slot (0..max_cameras-1) of each present camera
  std::vector<int> prompt;         // token ids (bos first), at most max_prompt of them
  at::Tensor actions;              // [H, action_dim] float32, normalised; may be undefined at inference
  at::Tensor action_is_pad;        // [H] bool (steps past the episode's end); undefined = none
  at::Tensor state;                // [state_dim] float32, normalised (GR00T's state token); may be undefined
  int embodiment = 0;              // GR00T: which embodiment's state/action heads read this sample

  int64_t prefix_len(const PolicyShape& shape) const {
    return shape.prefix_tokens(int(images.size()), int(prompt.size()));
  }
};

struct PolicyInputs {
  int64_t samples = 0;
  at::Tensor images;            // [n_images, 3, S, S]
  at::Tensor text_ids;          // [n_text] int64
  at::Tensor prefix_gather;     // [Tp] int64: row of cat(image tokens [n_images * P], text) per prefix token
  at::Tensor prefix_positions;  // [Tp] int64
  at::Tensor suffix_positions;  // [n * H] int64
  at::Tensor actions;           // [n, H, max_action_dim] float32 (zero past each sample's action_dim)
  at::Tensor action_mask;       // [n, H, max_action_dim] float32: 1 where the loss counts
  at::Tensor state;             // [n, S] float32, S the batch's largest state_dim (zero past each sample's)
  at::Tensor embodiment;        // [n] int64
  std::vector<int64_t> embodiments;  // [n] host copy (heads group samples by it)
  AttentionPlan plan;
  // token counts of the real work (both layouts), for throughput and FLOPs
  int64_t real_prefix_tokens = 0, real_images = 0;
  std::vector<int64_t> real_prefix_lens;  // [n] real prefix tokens per sample

  int64_t prefix_rows() const { return prefix_gather.size(0); }
  // Every tensor field (the plan's included), defined or not, in one fixed order: what to()
  // copies and shape_key() reads; train/sampler.h copies a batch into a captured one by it.
  std::vector<at::Tensor*> tensors();
  std::vector<const at::Tensor*> tensors() const;
  // The sizes of every tensor, as text: two batches with the same key run the same matrix
  // shapes and allocations (their values may differ).
  std::string shape_key() const;
  PolicyInputs to(const at::Device& device) const;  // non_blocking copies
  PolicyInputs pin_memory() const;
};

// Where and how collate writes the batch's images, by far its largest tensor (a step of 128
// samples with two 224x224 cameras: 154 MB).
struct CollateOptions {
  bool pin_images = false;     // into pinned host memory (PyTorch's caching host allocator: the
                               // blocks are reused, so no page is faulted in after the first steps)
  ThreadPool* pool = nullptr;  // copy the images on this pool's workers (not from one of its tasks)
  // varlen: round the packed prefix up to a multiple of this many tokens (0 or 1: no rounding)
  // with filler tokens in a segment of their own (AttentionPlan::prefix_pad). The language
  // model's matrix products then see a few shapes instead of a new one at every step (cuBLAS
  // chooses its kernel per shape); the loss and the gradients are those without filler.
  int64_t prefix_multiple = 0;
  // varlen: round the batch's prompt tokens up to a multiple of this many (0 or 1: none) with
  // filler tokens (copies of the last prompt token) in the filler segment. With the images
  // fixed, the batch's shapes then depend on its prompts' total length only by the multiple:
  // batches of similar prompts share one captured CUDA graph (train/sampler.h). Applied before
  // prefix_multiple. The plan's joint_index then also lists the filler rows, after every
  // sample's keys (no segment reads them).
  int64_t text_multiple = 0;
};

// The inputs of `copies` copies of each sample's suffix, copy j of sample i being sample
// j * n + i, all of them attending to the one prefix of the original batch: for a velocity pass
// over a prefix cache (Pi05PolicyImpl::velocity_cached) of K different noisy action chunks per
// sample in one batch (RL's denoising chain, rl/flow_noise.h). The prefix rows are not repeated:
// the joint keys of every copy gather the same prefix rows. Only such a cached pass may use the
// result (its prefix fields describe the original batch); varlen layout only (kInternal else).
PolicyInputs with_suffix_copies(const PolicyInputs& in, int64_t copies);

// Row means of the first n segments of rows [T, F]: segment i is rows [cu[i], cu[i+1]) (cu: int
// offsets on rows' device, at least n+1 of them; rows past cu[n] are ignored) -> [n, F] (an
// empty segment's mean is 0). The packed prefix's per-sample pooling (cu: the plan's
// cu_prefix), on the device alone: no host copy, so a CUDA graph can hold it.
at::Tensor segment_means(const at::Tensor& rows, const at::Tensor& cu, int64_t n);

// Lays samples out. Throws Error kInvalidArgument when a sample does not fit the shape (image
// size, more cameras than max_cameras, duplicate slots, a prompt longer than max_prompt, an
// action chunk not [H, <= max_action_dim]).
PolicyInputs collate(std::span<const PolicySample* const> samples, const PolicyShape& shape, AttentionBackend backend,
                     const CollateOptions& options = {});

}  // namespace ember::model
