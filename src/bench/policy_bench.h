// `ember bench policy`: trains the policy on a stream of synthetic samples and measures the
// speed of each attention backend on the same samples (same samples per optimizer step).
//
// Streams (what the samples look like):
//   libero     2 of 3 cameras present, prompts of 8-30 words plus 8 state values, action dim 7
//   community  1, 2 or 3 cameras present (uniformly), prompts of 3-60 words, action dims 6-14
// Prompt tokens per sample: 1 (bos) + 6 (template) + ceil(1.3 x words) + 2 x state values,
// a Gemma-tokenizer-like count; token ids and images are random (speed does not depend on them).
// groot: each sample also carries its 8 state values, and each action width of the stream is one
// embodiment (libero: one; community: 6..14, nine), so a batch mixes embodiments.
#pragma once

#include <string>
#include <vector>

#include "ember/model/policy_shape.h"

namespace ember::bench {

struct PolicyBenchOptions {
  std::string policy_type = "pi05";  // pi05 | groot (its presets: tiny, small, n15)
  bool tune_backbone = false;        // groot: train the backbone too (default frozen, as N1.5)
  std::string preset = "pi05";
  std::vector<std::string> backends = {"varlen", "padded"};
  std::string stream = "libero";
  std::string device = "auto";
  // samples per micro-batch; several: each in turn on the same policy (one build per run)
  std::vector<int64_t> batch_sizes = {16};
  // micro-batches of batch_size per optimizer step (ember train's --gradient_accumulation_steps)
  int64_t accumulation = 1;
  bool gradient_checkpointing = false;  // pi05: as ember train's --policy.gradient_checkpointing
  int warmup = 3, steps = 10;
  uint64_t seed = 0;
  bool bf16 = true;  // on CUDA
  std::string param_dtype = "fp32";  // fp32 | bf16 (as ember train's --policy.param_dtype)
  // varlen: round each step's packed prefix up to a multiple of this many tokens with filler
  // (model::CollateOptions::prefix_multiple; 0: none). MFU counts real tokens only, the hardware
  // FLOP utilisation counts the filler, and the FLOP ratio compares against the packed layout
  // without it.
  int64_t prefix_multiple = 0;
  // before timing, one untimed step on each timed batch whose tensor sizes (PolicyInputs::
  // shape_key) no earlier step had: the timed steps then run as in a long training run, where
  // every shape has been seen (and whatever is chosen or allocated per shape is cached). On by
  // default: a run meets each image count once in its first few hundred steps, so charging
  // cuBLAS's kernel choice for a new size to a 10-step measurement misstates training speed
  // (community stream: up to 2 %). The padded layout has one shape and gets no extra step.
  bool warm_shapes = true;
  // also run each backend with the language backbone's linear layers in block-wise FP8
  // (--policy.fp8), on the same batches, and print the fp8/bf16 speed ratio
  bool fp8 = false;
  // --fp8: one FP8 run per quantisation kernel named here ("vector", the default, and "staged", the
  // first: kernels/fp8_quant.h), each beside the same bf16 run, on the same batches
  std::vector<std::string> fp8_kernels = {"vector"};
  bool phases = false;  // also time copy / forward / backward / optimizer (synchronising between them)
  // non-empty: record the timed steps with PyTorch's profiler (Kineto: CPU ops, CUDA kernels)
  // into <profile>/[groot_]<preset>_<stream>_<backend>.json, a Chrome trace (bench/trace_summary.py
  // reads it). The profiler slows the steps it records: the speed figures of such a run are
  // not comparable with unprofiled ones.
  std::string profile;
  bool profile_shapes = false;  // the profile also records operators' input sizes (matmul shapes)
  // > 0: the profile records this many extra steps after the timed ones (on the first timed
  // batches) instead of the timed steps, so that the speed figures stay unprofiled
  int profile_after = 0;
};

// Prints one JSON line per backend and a comparison line (measured speed ratio next to the
// FLOP ratio) to stdout; returns the JSON lines. Throws Error kInvalidArgument naming the
// option for a bad value.
std::vector<std::string> run_policy_bench(const PolicyBenchOptions& options);

}  // namespace ember::bench
