#include "ember/train/train_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <span>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/model/policy_catalog.h"

namespace ember::train {

namespace {

using json = nlohmann::json;
using Choices = std::initializer_list<const char*>;

// A flag's one-line description for --help (train_flags_help).
using Help = const char*;

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
// description. All the operations below (to_json, from_json, flags, validation of choices, the
// list of names, the --help text) walk this.
template <class Config, class V>
void visit_fields(Config& c, V&& v) {
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
  v("policy.tokenizer_path", c.policy.tokenizer_path, Choices{}, "SentencePiece .model; unset: trained from the tasks");
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

[[noreturn]] void bad(const std::string& message) { fail(ErrorKind::kInvalidArgument, message); }

std::string join(Choices choices) {
  std::string s;
  for (const char* c : choices) s += (s.empty() ? "" : "|") + std::string(c);
  return s;
}

// --- typed conversion between a field and JSON -------------------------------------------------

template <class T> struct Type;
template <> struct Type<std::string> {
  static const char* what() { return "a string"; }
  static bool ok(const json& j) { return j.is_string(); }
};
template <> struct Type<int64_t> {
  static const char* what() { return "an integer"; }
  static bool ok(const json& j) { return j.is_number_integer(); }
};
template <> struct Type<double> {
  static const char* what() { return "a number"; }
  static bool ok(const json& j) { return j.is_number() && std::isfinite(j.get<double>()); }
};
template <> struct Type<bool> {
  static const char* what() { return "true or false"; }
  static bool ok(const json& j) { return j.is_boolean(); }
};
template <> struct Type<std::vector<int64_t>> {
  static const char* what() { return "a list of integers like [0,1,2]"; }
  static bool ok(const json& j) {
    return j.is_array() && std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_number_integer(); });
  }
};
template <> struct Type<std::array<double, 2>> {
  static const char* what() { return "two numbers like [0.9,0.95]"; }
  static bool ok(const json& j) {
    return j.is_array() && j.size() == 2 &&
           std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_number(); });
  }
};

// `where`: "--steps" or "FILE: steps"; `raw`: the flag's text when the value came from a flag.
template <class T>
void assign(const json& j, T& field, Choices choices, const std::string& where, const std::string* raw) {
  const std::string got = raw ? "'" + *raw + "'" : j.dump();
  if (!Type<T>::ok(j)) bad(where + ": expected " + Type<T>::what() + ", got " + got);
  field = j.get<T>();
  if constexpr (std::is_same_v<T, std::string>) {
    if (choices.size() && std::find(choices.begin(), choices.end(), field) == choices.end()) {
      bad(where + ": expected one of " + join(choices) + ", got " + got);
    }
  }
}
template <class T>
void assign(const json& j, std::optional<T>& field, Choices choices, const std::string& where,
            const std::string* raw) {
  if (j.is_null()) {
    field.reset();
    return;
  }
  T value{};
  assign(j, value, choices, where, raw);
  field = std::move(value);
}

// A flag's text as JSON of the field's type, where it reads as one; else the text as a JSON
// string (so that assign reports the type mismatch with the text).
json scalar_from_text(const std::string& s, const std::string*) { return s; }
json scalar_from_text(const std::string& s, const int64_t*) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return v;
  return s;
}
json scalar_from_text(const std::string& s, const double*) {
  if (s.empty()) return s;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && std::isfinite(v)) return v;
  return s;
}
json scalar_from_text(const std::string& s, const bool*) {
  if (s == "true" || s == "True" || s == "1") return true;
  if (s == "false" || s == "False" || s == "0") return false;
  return s;
}

// "[a,b]" or "a,b" -> an array of elements converted as Elem.
template <class Elem>
json list_from_text(std::string s) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  json out = json::array();
  size_t start = 0;
  while (start <= s.size() && !s.empty()) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    json e = scalar_from_text(part, static_cast<const Elem*>(nullptr));
    if (e.is_string()) return s;  // not a list of Elem: let assign report it
    out.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

template <class T>
json from_text(const std::string& s, const T* p) {
  return scalar_from_text(s, p);
}
json from_text(const std::string& s, const std::vector<int64_t>*) { return list_from_text<int64_t>(s); }
json from_text(const std::string& s, const std::array<double, 2>*) { return list_from_text<double>(s); }
template <class T>
json from_text(const std::string& s, const std::optional<T>*) {
  if (s == "null" || s == "none" || s == "None") return nullptr;
  return from_text(s, static_cast<const T*>(nullptr));
}

template <class T>
bool is_bool_field(const T*) { return std::is_same_v<T, bool>; }

// --- names ---------------------------------------------------------------------------------

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = name.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(name.substr(start, dot - start));
  }
  parts.push_back(name.substr(start));
  return parts;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_flag(const std::string& name) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& known : train_flag_names()) {
    size_t d = edit_distance(name, known);
    if (d < best_d) best_d = d, best = known;
  }
  std::string message = "unknown flag --" + name;
  if (best_d <= std::max<size_t>(2, name.size() / 2)) {
    message += " (did you mean --" + best + "?)";
  } else {
    // the section's flags, if the section exists
    const std::string section = name.substr(0, name.find('.') + 1);
    std::string listed;
    for (const std::string& known : train_flag_names()) {
      if (section.size() > 1 && known.starts_with(section)) listed += (listed.empty() ? "" : ", ") + known;
    }
    if (!listed.empty()) message += " (known: " + listed + ")";
  }
  bad(message);
}

// Sets the field called `name` from a flag's text; false if there is no such field.
bool set_from_flag(TrainConfig& c, const std::string& name, const std::string& text) {
  bool found = false;
  visit_fields(c, [&](const char* field_name, auto& field, Choices choices, Help) {
    if (found || name != field_name) return;
    found = true;
    using T = std::remove_reference_t<decltype(field)>;
    assign(from_text(text, static_cast<const T*>(nullptr)), field, choices, "--" + name, &text);
  });
  return found;
}

bool is_bool_flag(const std::string& name) {
  bool result = false;
  TrainConfig probe;
  visit_fields(probe, [&](const char* field_name, auto& field, Choices, Help) {
    if (name == field_name) result = is_bool_field(&field);
  });
  return result;
}

// Collects the dotted names of every leaf of j (objects are sections).
void leaf_names(const json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      leaf_names(*it, name, out);
    } else {
      out.push_back(name);
    }
  }
}

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
  std::vector<std::string> names;
  TrainConfig probe;
  visit_fields(probe, [&](const char* name, auto&, Choices, Help) { names.emplace_back(name); });
  names.push_back("config_path");
  return names;
}

namespace {

// A field's type as --help names it.
template <class T> struct HelpType;
template <> struct HelpType<std::string> { static std::string name() { return "STRING"; } };
template <> struct HelpType<int64_t> { static std::string name() { return "INT"; } };
template <> struct HelpType<double> { static std::string name() { return "FLOAT"; } };
template <> struct HelpType<bool> { static std::string name() { return "BOOL"; } };
template <class E> struct HelpType<std::vector<E>> {
  static std::string name() { return "LIST[" + HelpType<E>::name() + "]"; }
};
template <class E, size_t N> struct HelpType<std::array<E, N>> {
  static std::string name() { return "LIST[" + HelpType<E>::name() + "]"; }
};
template <class T> struct HelpType<std::optional<T>> {
  static std::string name() { return HelpType<T>::name(); }
};

}  // namespace

std::string train_flags_help() {
  const nlohmann::ordered_json defaults = to_json(TrainConfig{});
  std::string out;
  TrainConfig probe;
  visit_fields(probe, [&](const char* name, const auto& field, Choices choices, Help help) {
    using T = std::remove_cvref_t<decltype(field)>;
    std::string type = HelpType<T>::name();
    if (std::is_same_v<T, std::string> && choices.size()) type = join(choices);
    const nlohmann::ordered_json* at = &defaults;
    for (const std::string& part : split_path(name)) at = &(*at)[part];
    std::string def = at->is_null() ? "unset" : at->is_string() ? at->get<std::string>() : at->dump();
    if (def.empty()) def = "\"\"";
    // a policy type's own defaults (parse_train_flags applies them)
    for (const auto& t : model::policy_type_infos())
      for (const auto& [flag, value] : t.flag_defaults)
        if (flag == name) def += "; " + t.name + ": " + value;
    out += "  --" + std::string(name) + " " + type + " (default " + def + ")  " + help + "\n";
  });
  return out;
}

nlohmann::ordered_json to_json(const TrainConfig& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  visit_fields(config, [&](const char* name, const auto& field, Choices, Help) {
    nlohmann::ordered_json* at = &out;
    for (const std::string& part : split_path(name)) at = &(*at)[part];
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (std::is_same_v<T, std::optional<std::string>> || std::is_same_v<T, std::optional<int64_t>> ||
                  std::is_same_v<T, std::optional<std::vector<int64_t>>>) {
      *at = field ? nlohmann::ordered_json(*field) : nlohmann::ordered_json(nullptr);
    } else {
      *at = field;
    }
  });
  return out;
}

TrainConfig from_json(const json& j, const std::string& source) {
  if (!j.is_object()) bad(source + ": expected a JSON object");
  TrainConfig c;
  std::set<std::string> known;
  visit_fields(c, [&](const char* name, auto& field, Choices choices, Help) {
    known.insert(name);
    const json* at = &j;
    for (const std::string& part : split_path(name)) {
      if (!at->is_object() || !at->contains(part)) return;  // absent: keep the default
      at = &(*at)[part];
    }
    assign(*at, field, choices, source + ": " + name, nullptr);
  });
  std::vector<std::string> leaves;
  leaf_names(j, "", leaves);
  for (const std::string& leaf : leaves) {
    if (!known.count(leaf)) bad(source + ": unknown key " + leaf);
  }
  return c;
}

void save_train_config(const TrainConfig& config, const std::filesystem::path& file) {
  write_json_file(file.string(), to_json(config));
}

TrainConfig load_train_config(const std::filesystem::path& file) {
  return from_json(read_json_file(file.string()), file.string());
}

TrainConfig parse_train_flags(const std::vector<std::string>& args) {
  // split into (name, value) pairs first, so that --config_path can apply before the others
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      bad("unexpected argument '" + arg + "' (flags look like --name=value)");
    }
    const size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (eq != std::string::npos) {
      flags.emplace_back(name, arg.substr(eq + 1));
      continue;
    }
    const bool has_next = i + 1 < args.size() && !args[i + 1].starts_with("--");
    if (is_bool_flag(name)) {
      const bool next_is_bool = has_next && scalar_from_text(args[i + 1], static_cast<const bool*>(nullptr)).is_boolean();
      flags.emplace_back(name, next_is_bool ? args[++i] : "true");
    } else if (has_next) {
      flags.emplace_back(name, args[++i]);
    } else {
      const auto names = train_flag_names();
      if (std::find(names.begin(), names.end(), name) == names.end()) unknown_flag(name);
      bad("--" + name + ": missing value");
    }
  }

  TrainConfig config;
  for (const auto& [name, value] : flags) {
    if (name == "config_path") config = load_train_config(value);
  }
  for (const auto& [name, value] : flags) {
    if (name == "config_path") continue;
    if (!set_from_flag(config, name, value)) unknown_flag(name);
  }
  // the policy type's own defaults where the flags (and no config file) set nothing
  auto given = [&](const std::string& name) {
    return std::any_of(flags.begin(), flags.end(), [&](const auto& f) { return f.first == name || f.first == "config_path"; });
  };
  for (const auto& t : model::policy_type_infos())
    if (t.name == config.policy.type)
      for (const auto& [name, value] : t.flag_defaults)
        if (!given(name)) set_from_flag(config, name, value);
  // an imported directory's tensors fix the action width: a flag asking for another was ignored
  if (config.policy.path && std::any_of(flags.begin(), flags.end(), [](const auto& f) { return f.first == "policy.max_action_dim"; }))
    bad("--policy.max_action_dim: not with --policy.path (the imported policy's action_in_proj.weight fixes it)");
  validate(config);
  return config;
}

namespace {
constexpr int64_t kMaxBatchSize = 1 << 16, kMaxWorkers = 1024, kMaxHorizon = 4096, kMaxDim = 4096,
                  kMaxImageSize = 4096, kMaxSteps = 1000000000000;
}  // namespace

void validate(const TrainConfig& c) {
  // choice fields (a config built in code or read from a file)
  visit_fields(c, [&](const char* name, const auto& field, Choices choices, Help) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(field)>, std::string>) {
      if (choices.size() && std::find(choices.begin(), choices.end(), field) == choices.end()) {
        bad(std::string("--") + name + ": expected one of " + join(choices) + ", got '" + field + "'");
      }
    }
  });
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
