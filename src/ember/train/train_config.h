// The configuration of a training run: typed structs per component, composed into TrainConfig,
// parsed from lerobot-train style flags and saved with the run (and every checkpoint) as
// `train_config.json`.
//
// Flags name fields by their dotted path, as lerobot-train (draccus) names them:
//   --steps=30000  --steps 30000  --policy.type=pi05  --optimizer.lr=1e-4  --resume=true
//   --resume (a bare boolean flag means true)  --dataset.episodes=[0,1,2] (or 0,1,2)
//   --optimizer.betas=[0.9,0.95]  --policy.tokenizer_path=null (unsets an optional field)
// `--config_path=FILE.json` loads a saved train_config.json first, wherever it appears; the other
// flags then override it in order (a repeated flag: the last wins).
//
// Defaults follow LeRobot where the concept is the same: lerobot-train's TrainPipelineConfig
// (batch_size 8, seed 1000, log_freq 200, save_freq 20000, num_workers 4: on CPU; on CUDA see
// default_num_workers) and PI05Config
// (chunk_size 50, max_state_dim / max_action_dim 32, num_inference_steps 10, AdamW lr 2.5e-5,
// betas (0.9, 0.95), eps 1e-8, weight_decay 0.01, grad_clip_norm 1.0, warmup 1000 and decay
// 30000 steps, decay_lr 2.5e-6 = 0.1 x lr). steps defaults to 30000 (lerobot-train: 100000), the
// length of pi0.5's schedule.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ember/model/policy_catalog.h"
#include "ember/io/nvjpeg.h"

namespace ember::train {

struct DatasetConfig {
  std::string root;                              // LeRobot dataset directory (required)
  std::optional<std::string> repo_id;            // recorded in the config; ember reads `root` only
  std::optional<std::vector<int64_t>> episodes;  // train on these episode indices only
  std::optional<int64_t> image_size;             // cameras resized to image_size^2 (pi05: 224)
  // --dataset.image_transforms.enable (LeRobot's name): random shifts of each training image by
  // up to --dataset.image_transforms.max_shift of its size (0.06: ~13 px at 224), replicating
  // the edges; seeded by (seed, epoch, frame), so runs and resumes stay reproducible
  bool image_transforms_enable = false;
  double image_transforms_max_shift = 0.06;
  // training shards (`ember data pack`, docs/shards.md): shards a shuffle window mixes (0: one
  // permutation of all frames, the order a LeRobot dataset of the same frames trains in), and
  // for remote roots (http://, https://, s3://) the local cache and its bound
  int64_t shard_window = 4;
  std::optional<std::string> cache_dir;
  int64_t cache_mb = 8192;
  // the shards' JPEG frames decoded by libjpeg-turbo on the loader's threads (cpu) or by nvJPEG
  // on the GPU (io/nvjpeg.h); the default chosen by measurement (io::kDefaultJpegDecoder)
  std::string jpeg_decoder = io::kDefaultJpegDecoder;
};

struct PolicyConfig {
  std::string type = "pi05";         // a registered type (model/policy_type.h); saved in policy.json
  std::string preset = "tiny";       // tiny | small | pi05 (pi05's model size) | n15 (groot's)
  std::string attention = "varlen";  // varlen (packed, FlashAttention varlen) | padded (baseline)
  std::string dtype = "bf16";        // compute on CUDA: bf16 (autocast) | fp32
  // parameters: fp32 (master weights; LeRobot's PI05Config.dtype=float32, its default) | bf16
  // (LeRobot's dtype=bfloat16: all but the norms and the vision tower's patch and position
  // embeddings in bf16, and so their gradients, the gradient all-reduce and AdamW's moments)
  std::string param_dtype = "fp32";
  int64_t horizon = 50;              // action chunk length (PI05Config.chunk_size)
  int64_t max_state_dim = 32;        // state padded to this (PI05Config.max_state_dim)
  int64_t max_action_dim = 32;       // actions padded to this (PI05Config.max_action_dim)
  int64_t num_steps = 10;            // flow-matching denoising steps (PI05Config.num_inference_steps)
  std::optional<std::string> tokenizer_path;  // SentencePiece .model; unset: trained from the tasks
  // --policy.path (lerobot-train's flag): start from a LeRobot (or openpi PyTorch) pi0.5 policy
  // directory: its shapes, weights, camera slots and rules (its type's import, model/policy_type.h); preset,
  // horizon, max_action_dim and num_steps then come from it. Needs --policy.tokenizer_path
  // (the SentencePiece model its prompts were tokenised with) unless DIR has tokenizer.model.
  std::optional<std::string> path;
  std::optional<int64_t> token_budget;        // tokens per packed batch; unset: the policy decides
  // varlen: each micro-batch's packed prefix rounded up to a multiple of this many tokens with
  // filler (model::CollateOptions::prefix_multiple): fewer matrix shapes, the same loss and
  // gradients; 0 or 1: none
  int64_t prefix_multiple = 0;
  // --policy.fp8: the language backbone's linear layers in block-wise FP8 (model/fp8_linear.h:
  // e4m3, 1x128 activation and 128x128 weight scales), where their sizes fit; a compute format
  // only (parameters, optimizer state and checkpoints as without it). CUDA: sm_90 only.
  bool fp8 = false;
  // groot: train the vision-language backbone too (default: frozen, as GR00T-N1.5 fine-tunes;
  // its forward then runs without autograd). groot's horizon and num_steps default to 16 and 4.
  bool tune_backbone = false;
  // --policy.gradient_checkpointing (lerobot's flag): pi05's joint layers and vision blocks keep
  // only their inputs and recompute the rest in the backward pass (model/activation_checkpoint.h):
  // activation memory of one layer instead of all, for about a third more compute
  bool gradient_checkpointing = false;
  // how the state and action are normalised: auto (QUANTILES where the dataset's statistics
  // have q01/q99, else MEAN_STD: pi0.5's) | MEAN_STD | MIN_MAX | QUANTILES; groot: MIN_MAX (N1.5's)
  std::string normalization = "auto";
  // the normalised state written into the prompt (pi0.5's); groot: false (N1.5's prompt is the
  // task alone)
  bool state_in_prompt = true;
  // the loss also counts the chunk's steps past an episode's end (the last frame's action
  // repeated), as LeRobot's pi05 and N1.5 do; groot: true
  bool loss_on_padded_steps = false;
  // groot: dropout of the vl and DiT blocks while training (N1.5's 0.2; pi05 has none: 0)
  double dropout = 0;
  // groot: how the embodiment MLPs start: n15 (N(0, 0.02^2), N1.5's) | torch (torch.nn.Linear's
  // default, for training from scratch)
  std::string head_init = "n15";
  // groot: the embodiment whose state, action and decoder heads read the dataset (recorded in
  // features.json; N1.5's new_embodiment is 31); unset: the --policy.path directory's (its
  // experiment_cfg/metadata.json tag), else 0; pi05: 0
  std::optional<int64_t> embodiment;
};

struct OptimizerConfig {              // AdamW (PI05Config.optimizer_*)
  double lr = 2.5e-5;                 // peak learning rate
  double weight_decay = 1e-2;
  double grad_clip_norm = 1.0;        // clip the global gradient norm to this
  std::array<double, 2> betas = {0.9, 0.95};
  double eps = 1e-8;
};

struct SchedulerConfig {              // cosine_decay_with_warmup (see schedule.h)
  int64_t warmup_steps = 1000;        // PI05Config.scheduler_warmup_steps
  int64_t decay_steps = 30000;        // PI05Config.scheduler_decay_steps; scaled down with `steps`
  double min_lr_ratio = 0.1;          // floor = ratio x lr (PI05Config: decay_lr 2.5e-6 / 2.5e-5)
};

struct DistConfig {
  int64_t zero = 0;                   // 0: replicated optimizer; 1: optimizer state sharded (ZeRO-1)
  double timeout_s = 600;             // a collective or the rendezvous waiting longer fails the run
  double bucket_mb = 25;              // gradient all-reduce bucket size (MiB); larger for many ranks
  std::string reduce_dtype = "fp32";  // fp32 | bf16: fp32 gradients summed over the ranks as bf16
                                      // copies (half the traffic; DDP's bf16_compress_hook)
};

struct TrainConfig {
  DatasetConfig dataset;
  PolicyConfig policy;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  DistConfig dist;
  std::string output_dir;             // required
  int64_t steps = 30000;              // optimizer updates in the whole run
  int64_t batch_size = 8;             // samples per micro-batch per rank
  // micro-batches of batch_size per optimizer step (per rank): their gradients add up before the
  // step, which equals one batch of batch_size x gradient_accumulation_steps (the same samples,
  // the same loss normalisation) in the memory of one micro-batch
  int64_t gradient_accumulation_steps = 1;
  int64_t seed = 1000;
  int64_t log_freq = 200;             // metrics every this many steps
  int64_t save_freq = 20000;          // a checkpoint every this many steps (and at the end)
  // sample-building threads; unset: default_num_workers() (4 on CPU, as lerobot-train; on CUDA
  // the host's cores shared among its ranks)
  std::optional<int64_t> num_workers;
  bool resume = false;                // continue from <output_dir>/checkpoints/latest
  bool save_checkpoint = true;        // false: no checkpoints at all (benchmarks), as lerobot-train
  // > 0: record this many steps with PyTorch's profiler, after 10 warm-up steps of the run (or
  // the run's last ones when it is shorter), into <output_dir>/profile/rank<R>.json (a Chrome
  // trace; bench/trace_summary.py). The recorded steps run slower.
  int64_t profile_steps = 0;
  std::string device = "auto";        // auto | cuda | cpu; the caller resolves auto
  // lerobot-train's --rename_map, as JSON text: dataset key -> the imported policy's camera it
  // fills, e.g. '{"observation.images.top": "observation.images.base_0_rgb"}' (--policy.path runs)
  std::optional<std::string> rename_map;
};

// The parsed --rename_map (empty when unset). Throws kInvalidArgument naming the flag when it is
// not a JSON object of strings.
std::map<std::string, std::string> rename_map_of(const TrainConfig& config);

// Parses command-line flags (without the program and subcommand names) into a validated
// config. Throws ember::Error kInvalidArgument naming the flag: an unknown flag (with the
// closest known one: "unknown flag --policy.foo (did you mean --policy.type?)"), a missing or
// badly typed value ("--steps: expected an integer, got 'ten'"), a value outside its choices
// ("--policy.attention: expected one of varlen|padded, got 'flash'"), or what validate()
// refuses; and the errors of load_train_config for --config_path.
TrainConfig parse_train_flags(const std::vector<std::string>& args);

// Refuses (kInvalidArgument naming the flag) a config that cannot run: empty dataset.root or
// output_dir, steps / batch_size / log_freq / save_freq / lr / eps / horizon / dims /
// num_steps / decay_steps not positive, negative num_workers / weight_decay / warmup_steps,
// grad_clip_norm <= 0, betas outside [0, 1), min_lr_ratio outside [0, 1], a choice field
// outside its set, dist.zero not 0 or 1, negative or empty episodes, non-positive optionals.
void validate(const TrainConfig& config);

// The loader threads of a run whose --num_workers is unset: 4 on CPU (the rest of the cores
// compute); on CUDA each rank gets its share of the host's cores (cores / ranks_on_host), less
// one for the thread that launches the kernels, at least 2 and at most 16: the GPU computes, and
// a 128-sample batch of two 224x224 cameras needs about 8 threads to keep one H200 fed.
int64_t default_num_workers(bool cuda, int cores, int ranks_on_host);

// Every field, nested by section: {"dataset": {...}, "policy": {...}, ..., "output_dir": ...};
// unset optionals are null.
nlohmann::ordered_json to_json(const TrainConfig& config);
// The defaults overridden by the keys present in j. `source` names it in errors (a file).
// Throws kInvalidArgument naming the source and key for an unknown key or a badly typed value.
// Does not validate().
TrainConfig from_json(const nlohmann::json& j, const std::string& source = "config");

// Writes to_json(config) (indented) atomically. Throws kIO.
void save_train_config(const TrainConfig& config, const std::filesystem::path& file);
// Reads a file written by save_train_config. Throws kNotFound / kIO for the file,
// kInvalidArgument naming the file for malformed JSON or as from_json.
TrainConfig load_train_config(const std::filesystem::path& file);

// The dotted names of every field ("steps", "policy.type", ...), in declaration order.
std::vector<std::string> train_flag_names();
// --help's list of them: one line per field, "  --optimizer.lr FLOAT (default 2.5e-05)  peak
// learning rate" (a string with choices shows them as its type: varlen|padded), each ending in
// a newline; --config_path is not among them.
std::string train_flags_help();

// config.policy's build options (model/policy_catalog.h).
model::BuildOptions build_options(const TrainConfig& config);

}  // namespace ember::train
