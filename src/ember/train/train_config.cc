#include "ember/train/train_config.h"

#include <algorithm>
#include <filesystem>

#include "ember/core/config_fields.h"
#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/model/policy_catalog.h"

namespace ember::train {

namespace {

using json = nlohmann::json;
using config::Choices;
using config::Help;

// --policy.type and --policy.preset have no Choices (the policy registry validates them): their
// descriptions list the registered types and each type's presets.
Help policy_type_help() {
  static const std::string help = "a registered policy type: " + model::policy_type_names();
  return help.c_str();
}
Help policy_preset_help() {
  static const std::string help = [] {
    std::string types;
    for (const auto& t : model::policy_type_infos()) {
      std::string presets;
      for (const auto& p : t.presets) presets += (presets.empty() ? "" : " | ") + p;
      types += (types.empty() ? "" : "; ") + t.name + ": " + presets;
    }
    return "one of the type's presets (" + types + ")";
  }();
  return help.c_str();
}

// Every field once: name, reference, (for strings) the allowed values, and a one-line
// description (core/config_fields.h: to_json, from_json, flags, the choices, --help walk it).
struct TrainFields {
  template <class Config, class V>
  void operator()(Config& c, V&& v) const;
};
template <class Config, class V>
void TrainFields::operator()(Config& c, V&& v) const {
  v("dataset.root", c.dataset.root, Choices{}, "LeRobot dataset directory (required)");
  v("dataset.repo_id", c.dataset.repo_id, Choices{}, "recorded in the config; ember reads dataset.root only");
  v("dataset.episodes", c.dataset.episodes, Choices{}, "train on these episode indices only, e.g. [0,1,2]");
  v("dataset.image_size", c.dataset.image_size, Choices{}, "cameras resized to image_size x image_size (pi05: 224)");
  v("dataset.image_transforms.enable", c.dataset.image_transforms_enable, Choices{},
    "random shifts of each training image (seeded: runs and resumes stay reproducible)");
  v("dataset.image_transforms.max_shift", c.dataset.image_transforms_max_shift, Choices{},
    "the largest shift, as a fraction of the image size (0.06: ~13 px at 224)");
  v("dataset.shard_window", c.dataset.shard_window, Choices{},
    "shards a shuffle window mixes (0: one permutation of all frames)");
  v("dataset.cache_dir", c.dataset.cache_dir, Choices{}, "local cache of remote shard roots (http://, https://, s3://)");
  v("dataset.cache_mb", c.dataset.cache_mb, Choices{}, "size bound of the remote shard cache, in MiB");
  v("dataset.jpeg_decoder", c.dataset.jpeg_decoder, Choices{"cpu", "nvjpeg"},
    "shard JPEGs decoded by libjpeg-turbo on the loader threads, or by nvJPEG on the GPU");
  v("policy.type", c.policy.type, Choices{}, policy_type_help());      // a registered type (validate)
  v("policy.preset", c.policy.preset, Choices{}, policy_preset_help());  // one of the type's presets (validate)
  v("policy.attention", c.policy.attention, Choices{"varlen", "padded"},
    "packed FlashAttention varlen, or LeRobot's padded baseline");
  v("policy.dtype", c.policy.dtype, Choices{"bf16", "fp32"}, "compute dtype on CUDA: bf16 (autocast) or fp32");
  v("policy.param_dtype", c.policy.param_dtype, Choices{"fp32", "bf16"},
    "parameter dtype: fp32 master weights (LeRobot's default) or bf16");
  v("policy.horizon", c.policy.horizon, Choices{}, "action chunk length (PI05Config.chunk_size)");
  v("policy.max_state_dim", c.policy.max_state_dim, Choices{}, "state padded to this width (PI05Config.max_state_dim)");
  v("policy.max_action_dim", c.policy.max_action_dim, Choices{}, "actions padded to this width (PI05Config.max_action_dim)");
  v("policy.num_steps", c.policy.num_steps, Choices{}, "flow-matching denoising steps (PI05Config.num_inference_steps)");
  v("policy.tokenizer_path", c.policy.tokenizer_path, Choices{}, "SentencePiece .model, or a Hugging Face BPE tokenizer.json / its directory; unset: trained from the tasks");
  v("policy.path", c.policy.path, Choices{},
    "start from a LeRobot / openpi pi0.5 policy directory (its shapes and weights)");
  v("policy.token_budget", c.policy.token_budget, Choices{}, "tokens per packed batch; unset: the policy decides");
  v("policy.prefix_multiple", c.policy.prefix_multiple, Choices{},
    "varlen: packed prefixes padded to a multiple of this many tokens (0 or 1: none)");
  v("policy.fp8", c.policy.fp8, Choices{}, "language backbone linear layers in block-wise FP8 (CUDA sm_90 only)");
  v("policy.tune_backbone", c.policy.tune_backbone, Choices{},
    "groot: train the vision-language backbone too (default: frozen)");
  v("policy.gradient_checkpointing", c.policy.gradient_checkpointing, Choices{},
    "recompute activations in the backward pass: less memory, ~1/3 more compute");
  v("policy.normalization", c.policy.normalization, Choices{"auto", "MEAN_STD", "MIN_MAX", "QUANTILES"},
    "state and action normalisation (auto: QUANTILES where the statistics have q01/q99, else MEAN_STD)");
  v("policy.state_in_prompt", c.policy.state_in_prompt, Choices{}, "the normalised state written into the prompt as pi0.5's");
  v("policy.loss_on_padded_steps", c.policy.loss_on_padded_steps, Choices{},
    "the loss counts chunk steps past an episode's end (LeRobot's pi05 and N1.5 do)");
  v("policy.dropout", c.policy.dropout, Choices{}, "groot: dropout of the vl and DiT blocks while training (pi05 has none)");
  v("policy.embodiment", c.policy.embodiment, Choices{},
    "groot: the embodiment whose heads read the dataset (N1.5's new_embodiment: 31; unset: --policy.path's metadata tag, else 0); "
    "recorded in features.json");
  v("policy.head_init", c.policy.head_init, Choices{"n15", "torch"},
    "groot: the embodiment MLPs start as N1.5's (N(0, 0.02^2)) or as torch.nn.Linear's default (from scratch)");
  v("optimizer.lr", c.optimizer.lr, Choices{}, "peak learning rate");
  v("optimizer.weight_decay", c.optimizer.weight_decay, Choices{}, "AdamW weight decay");
  v("optimizer.grad_clip_norm", c.optimizer.grad_clip_norm, Choices{}, "clip the global gradient norm to this");
  v("optimizer.betas", c.optimizer.betas, Choices{}, "AdamW's two betas, e.g. [0.9,0.95]");
  v("optimizer.eps", c.optimizer.eps, Choices{}, "AdamW epsilon");
  v("scheduler.warmup_steps", c.scheduler.warmup_steps, Choices{}, "warm-up steps of the cosine schedule");
  v("scheduler.decay_steps", c.scheduler.decay_steps, Choices{}, "cosine decay steps (scaled down with --steps)");
  v("scheduler.min_lr_ratio", c.scheduler.min_lr_ratio, Choices{}, "learning-rate floor as a fraction of the peak lr");
  v("dist.zero", c.dist.zero, Choices{}, "0: replicated optimizer; 1: optimizer state sharded (ZeRO-1)");
  v("dist.timeout_s", c.dist.timeout_s, Choices{}, "a collective or the rendezvous waiting longer fails the run");
  v("dist.bucket_mb", c.dist.bucket_mb, Choices{}, "gradient all-reduce bucket size in MiB (larger for many ranks)");
  v("dist.reduce_dtype", c.dist.reduce_dtype, Choices{"fp32", "bf16"},
    "gradients summed over the ranks as fp32, or as bf16 copies (half the traffic)");
  v("output_dir", c.output_dir, Choices{}, "where the run writes its checkpoints and logs (required)");
  v("steps", c.steps, Choices{}, "optimizer updates in the whole run");
  v("batch_size", c.batch_size, Choices{}, "samples per micro-batch per rank");
  v("gradient_accumulation_steps", c.gradient_accumulation_steps, Choices{},
    "micro-batches whose gradients add up before each optimizer step");
  v("seed", c.seed, Choices{}, "random seed of the run");
  v("log_freq", c.log_freq, Choices{}, "metrics every this many steps");
  v("save_freq", c.save_freq, Choices{}, "a checkpoint every this many steps (and at the end)");
  v("num_workers", c.num_workers, Choices{},
    "sample-building threads; unset: 4 on CPU, on CUDA a share of the host's cores");
  v("resume", c.resume, Choices{}, "continue from <output_dir>/checkpoints/latest");
  v("save_checkpoint", c.save_checkpoint, Choices{}, "false: no checkpoints at all (benchmarks)");
  v("profile_steps", c.profile_steps, Choices{},
    "> 0: record this many steps with PyTorch's profiler into <output_dir>/profile");
  v("device", c.device, Choices{"auto", "cuda", "cpu"}, "where to train (auto: CUDA when available)");
  v("rename_map", c.rename_map, Choices{},
    "JSON: dataset camera key -> the imported policy's camera (with --policy.path)");
}

using config::bad;

template <class T>
void require(bool ok, const char* flag, const T& value, const std::string& expected) {
  if (ok) return;
  if constexpr (std::is_arithmetic_v<T>) {
    json j = value;
    bad(std::string("--") + flag + ": expected " + expected + ", got " + j.dump());
  } else {
    bad(std::string("--") + flag + ": expected " + expected);
  }
}

}  // namespace

std::vector<std::string> train_flag_names() {
  auto names = config::field_names<TrainConfig>(TrainFields{});
  names.push_back("config_path");
  return names;
}

std::string train_flags_help() {
  // a policy type's own defaults (parse_train_flags applies them)
  return config::flags_help<TrainConfig>(TrainFields{}, [](const std::string& name) {
    std::string more;
    for (const auto& t : model::policy_type_infos())
      for (const auto& [flag, value] : t.flag_defaults)
        if (flag == name) more += "; " + t.name + ": " + value;
    return more;
  });
}

nlohmann::ordered_json to_json(const TrainConfig& config) { return config::to_json(TrainFields{}, config); }

TrainConfig from_json(const json& j, const std::string& source) { return config::from_json<TrainConfig>(TrainFields{}, j, source); }

void save_train_config(const TrainConfig& config, const std::filesystem::path& file) {
  write_json_file(file.string(), to_json(config));
}

TrainConfig load_train_config(const std::filesystem::path& file) {
  return from_json(read_json_file(file.string()), file.string());
}

TrainConfig parse_train_flags(const std::vector<std::string>& args) {
  // --config_path applies before the other flags
  const auto flags = config::split_flags<TrainConfig>(TrainFields{}, args, {"config_path"});
  TrainConfig config;
  for (const auto& f : flags)
    if (f.name == "config_path") config = load_train_config(f.value);
  config::apply_flags(TrainFields{}, config, flags, {"config_path"});
  // the policy type's own defaults where the flags (and no config file) set nothing
  auto given = [&](const std::string& name) {
    return std::any_of(flags.begin(), flags.end(), [&](const auto& f) { return f.name == name || f.name == "config_path"; });
  };
  for (const auto& t : model::policy_type_infos())
    if (t.name == config.policy.type)
      for (const auto& [name, value] : t.flag_defaults)
        if (!given(name)) config::set_flag(TrainFields{}, config, name, value);
  // an imported directory's tensors fix the action width: a flag asking for another was ignored
  if (config.policy.path && std::any_of(flags.begin(), flags.end(), [](const auto& f) { return f.name == "policy.max_action_dim"; }))
    bad("--policy.max_action_dim: not with --policy.path (the imported policy's action_in_proj.weight fixes it)");
  validate(config);
  return config;
}

namespace {
constexpr int64_t kMaxBatchSize = 1 << 16, kMaxWorkers = 1024, kMaxHorizon = 4096, kMaxDim = 4096,
                  kMaxImageSize = 4096, kMaxSteps = 1000000000000;
}  // namespace

void validate(const TrainConfig& c) {
  config::check_choices(TrainFields{}, c);  // a config built in code or read from a file
  require(!c.dataset.root.empty(), "dataset.root", c.dataset.root, "a dataset directory (the flag is required)");
  require(!c.output_dir.empty(), "output_dir", c.output_dir, "an output directory (the flag is required)");
  {
    std::error_code ec;
    require(!std::filesystem::exists(c.output_dir, ec) || std::filesystem::is_directory(c.output_dir, ec), "output_dir",
            c.output_dir, "a directory (this path is a file)");
  }
  require(c.steps > 0 && c.steps <= kMaxSteps, "steps", c.steps, "1 to " + std::to_string(kMaxSteps));
  // upper bounds: a value past them asks for more memory or threads than any machine has
  require(c.batch_size > 0 && c.batch_size <= kMaxBatchSize, "batch_size", c.batch_size,
          "1 to " + std::to_string(kMaxBatchSize) + " samples per micro-batch");
  require(c.gradient_accumulation_steps > 0 && c.gradient_accumulation_steps <= kMaxBatchSize / c.batch_size,
          "gradient_accumulation_steps", c.gradient_accumulation_steps,
          "1 to " + std::to_string(std::max<int64_t>(1, kMaxBatchSize / c.batch_size)) + " micro-batches per step (batch_size x it at most " +
              std::to_string(kMaxBatchSize) + ")");
  require(c.log_freq > 0, "log_freq", c.log_freq, "a positive integer");
  require(c.save_freq > 0, "save_freq", c.save_freq, "a positive integer");
  if (c.num_workers) require(*c.num_workers >= 0 && *c.num_workers <= kMaxWorkers, "num_workers", *c.num_workers, "0 to " + std::to_string(kMaxWorkers) + " threads");
  require(c.profile_steps >= 0, "profile_steps", c.profile_steps, "a non-negative integer");
  require(c.dataset.image_transforms_max_shift >= 0 && c.dataset.image_transforms_max_shift <= 0.5,
          "dataset.image_transforms.max_shift", c.dataset.image_transforms_max_shift, "a fraction in [0, 0.5]");
  require(c.optimizer.lr > 0, "optimizer.lr", c.optimizer.lr, "a positive number");
  require(c.optimizer.weight_decay >= 0, "optimizer.weight_decay", c.optimizer.weight_decay, "a non-negative number");
  require(c.optimizer.grad_clip_norm > 0, "optimizer.grad_clip_norm", c.optimizer.grad_clip_norm, "a positive number");
  for (double b : c.optimizer.betas) require(b >= 0 && b < 1, "optimizer.betas", b, "values in [0, 1)");
  require(c.optimizer.eps > 0, "optimizer.eps", c.optimizer.eps, "a positive number");
  require(c.scheduler.warmup_steps >= 0, "scheduler.warmup_steps", c.scheduler.warmup_steps, "a non-negative integer");
  require(c.scheduler.decay_steps > 0, "scheduler.decay_steps", c.scheduler.decay_steps, "a positive integer");
  require(c.scheduler.min_lr_ratio >= 0 && c.scheduler.min_lr_ratio <= 1, "scheduler.min_lr_ratio",
          c.scheduler.min_lr_ratio, "a number in [0, 1]");
  require(c.policy.dropout >= 0 && c.policy.dropout < 1, "policy.dropout", c.policy.dropout, "in [0, 1)");
  require(c.policy.horizon > 0 && c.policy.horizon <= kMaxHorizon, "policy.horizon", c.policy.horizon, "1 to " + std::to_string(kMaxHorizon) + " actions");
  require(c.policy.max_state_dim > 0 && c.policy.max_state_dim <= kMaxDim, "policy.max_state_dim", c.policy.max_state_dim, "1 to " + std::to_string(kMaxDim));
  require(c.policy.max_action_dim > 0 && c.policy.max_action_dim <= kMaxDim, "policy.max_action_dim", c.policy.max_action_dim, "1 to " + std::to_string(kMaxDim));
  require(c.policy.num_steps > 0 && c.policy.num_steps <= 1000, "policy.num_steps", c.policy.num_steps, "1 to 1000 denoising steps");
  if (c.policy.token_budget) {
    require(*c.policy.token_budget > 0 && *c.policy.token_budget <= (int64_t(1) << 24), "policy.token_budget", *c.policy.token_budget, "1 to 16777216 tokens");
  }
  require(c.policy.prefix_multiple >= 0 && c.policy.prefix_multiple <= 4096, "policy.prefix_multiple",
          c.policy.prefix_multiple, "0 to 4096 tokens");
  require(c.policy.prefix_multiple <= 1 || c.policy.attention == "varlen", "policy.prefix_multiple",
          c.policy.prefix_multiple, "0 with --policy.attention=padded (the padded layout has fixed shapes)");
  if (c.dataset.image_size) {
    require(*c.dataset.image_size > 0 && *c.dataset.image_size <= kMaxImageSize, "dataset.image_size", *c.dataset.image_size, "1 to " + std::to_string(kMaxImageSize) + " pixels");
  }
  require(c.dataset.shard_window >= 0, "dataset.shard_window", c.dataset.shard_window, "shards per shuffle window, >= 0 (0: no windows)");
  require(c.dataset.cache_mb >= 1, "dataset.cache_mb", c.dataset.cache_mb, "a cache size of at least 1 MiB");
  if (c.dataset.episodes) {
    require(!c.dataset.episodes->empty(), "dataset.episodes", std::string(), "at least one episode index");
    for (int64_t e : *c.dataset.episodes) require(e >= 0, "dataset.episodes", e, "non-negative episode indices");
  }
  require(c.policy.param_dtype != "bf16" || c.policy.dtype == "bf16", "policy.param_dtype", c.policy.param_dtype,
          "fp32 with --policy.dtype=fp32 (bf16 parameters compute in bf16)");
  const auto& type = model::policy_type_info(c.policy.type);  // throws naming the registered types
  model::check_preset(type, c.policy.preset, "--policy.preset");
  require(!c.policy.path || type.imports, "policy.path", c.policy.path.value_or(""),
          "unset with --policy.type=" + type.name + " (it has no import of reference directories)");
  if (type.check_options) type.check_options(build_options(c));
  rename_map_of(c);  // throws naming the flag
  require(!c.rename_map || c.policy.path, "rename_map", std::string(),
          "--policy.path with it (ember's own policies read the dataset's camera names)");
  require(c.dist.zero == 0 || c.dist.zero == 1, "dist.zero", c.dist.zero, "0 or 1");
  require(c.dist.timeout_s > 0, "dist.timeout_s", c.dist.timeout_s, "a positive number of seconds");
  require(c.dist.bucket_mb > 0, "dist.bucket_mb", c.dist.bucket_mb, "a positive number of MiB");
}

std::map<std::string, std::string> rename_map_of(const TrainConfig& c) {
  return c.rename_map ? parse_rename_map(*c.rename_map, "--rename_map") : std::map<std::string, std::string>{};
}

int64_t default_num_workers(bool cuda, int cores, int ranks_on_host) {
  if (!cuda) return 4;
  const int64_t share = int64_t(std::max(1, cores)) / std::max(1, ranks_on_host) - 1;
  return std::clamp<int64_t>(share, 2, 16);
}

model::BuildOptions build_options(const TrainConfig& c) {
  return {.fp8 = c.policy.fp8,
          .gradient_checkpointing = c.policy.gradient_checkpointing,
          .tune_backbone = c.policy.tune_backbone,
          .bf16_params = c.policy.param_dtype == "bf16",
          .torch_head_init = c.policy.head_init == "torch"};
}

}  // namespace ember::train
