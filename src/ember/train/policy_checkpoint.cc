#include "ember/train/policy_checkpoint.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/file.h"
#include <ATen/core/grad_mode.h>
#include "ember/model/weights.h"
#include "ember/train/checkpoint_dir.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile f(path.string());
  f.write(text.data(), text.size());
  f.commit();
}

nlohmann::json read_json(const fs::path& path) {
  if (!fs::exists(path)) throw Error(ErrorKind::kNotFound, path.string() + ": no such file (not a checkpoint?)");
  return read_json_file(path.string());
}

}  // namespace

void write_policy_files(const fs::path& dir, const PolicyBundle& b) {
  model::NamedTensors params;
  for (const auto& p : b.module->named_parameters()) params.emplace_back(p.key(), p.value());
  model::save_tensors((dir / "model.safetensors").string(), params, {{"format", "pt"}, {"ember.policy", b.module->type()}});
  auto policy_json = b.arch->to_json();
  b.module->annotate(policy_json);  // how it was built (informational)
  write_text(dir / "policy.json", policy_json.dump(2) + "\n");
  write_text(dir / "features.json", b.spec.to_json().dump(2) + "\n");
  b.tokenizer->save((dir / b.tokenizer->file_name()).string());
  if (b.lerobot_config.is_object()) write_text(dir / "lerobot_config.json", b.lerobot_config.dump(4) + "\n");
  if (!b.lerobot_unused.empty()) {
    model::NamedTensors kept(b.lerobot_unused.begin(), b.lerobot_unused.end());
    model::save_tensors((dir / "lerobot_unused.safetensors").string(), kept);
  }
}

namespace {

// The tokenizer of a policy directory: `path` when given, else DIR/tokenizer.model, else
// DIR/tokenizer.json.
std::unique_ptr<model::Tokenizer> find_tokenizer(const fs::path& dir, const std::optional<std::string>& path, bool lerobot,
                                                 int vocab) {
  std::unique_ptr<model::Tokenizer> t;
  const std::string file = model::find_tokenizer_file(dir.string());
  if (path) {
    t = std::make_unique<model::Tokenizer>(model::Tokenizer::load(*path));
  } else if (!file.empty()) {
    t = std::make_unique<model::Tokenizer>(model::Tokenizer::load(file));
  } else if (lerobot) {
    throw Error(ErrorKind::kInvalidArgument,
                dir.string() + ": a LeRobot policy directory holds no tokenizer: pass --policy.tokenizer_path=FILE, the SentencePiece "
                "model its prompts were tokenised with (PaliGemma's tokenizer.model for released pi0.5 weights; ember never downloads one)");
  } else {
    throw Error(ErrorKind::kNotFound, (dir / "tokenizer.model").string() + ": no such file (not a checkpoint?)");
  }
  if (t->vocab_size() > vocab)
    throw Error(ErrorKind::kInvalidArgument, (path ? *path : file) + ": the tokenizer has " +
                                                 std::to_string(t->vocab_size()) + " pieces, the policy's embedding " + std::to_string(vocab));
  return t;
}

}  // namespace

PolicyBundle import_lerobot_bundle(const fs::path& dir, const std::optional<std::string>& tokenizer_path, bool need_tokenizer,
                                   bool print_notes) {
  const model::PolicyType* type = model::foreign_policy_type(dir);
  if (!type) throw Error(ErrorKind::kInvalidArgument, dir.string() + ": not a policy directory any registered type reads (" +
                                                          model::policy_type_names() + ")");
  auto imported = type->import_dir(dir);
  PolicyBundle b;
  for (const auto& note : imported.notes) b.import_notes.push_back("ember: " + dir.string() + ": " + note);
  if (!imported.skipped.empty()) {
    std::string list;
    for (const auto& k : imported.skipped) list += (list.empty() ? "" : ", ") + k;
    b.import_notes.push_back("ember: " + dir.string() + ": skipped " + std::to_string(imported.skipped.size()) + " tensors " +
                             type->name + " never uses (kept for export): " + list);
  }
  if (print_notes)
    for (const auto& line : b.import_notes) std::fprintf(stderr, "%s\n", line.c_str());
  b.arch = imported.arch;
  b.shape = b.arch->base();
  b.spec = imported.spec;
  b.module = b.arch->build({}, at::kCPU);
  model::NamedTensors params;
  for (const auto& p : b.module->named_parameters()) params.emplace_back(p.key(), p.value());
  model::load_into(params, imported.params, (dir / "model.safetensors").string());
  b.module->eval();
  b.lerobot_config = std::move(imported.config);
  b.lerobot_unused = std::move(imported.kept);
  if (need_tokenizer || tokenizer_path || !model::find_tokenizer_file(dir.string()).empty())
    b.tokenizer = find_tokenizer(dir, tokenizer_path, true, b.shape.vocab);
  if (!imported.has_stats) b.spec.stats.clear();
  return b;
}

void check_export(const std::string& type_name, const std::string& format) {
  const auto& type = model::policy_type(type_name);
  if (!type.export_dir || type.export_format != format) {
    std::string have;
    for (const auto& t : model::policy_types())
      if (t.export_dir && t.export_format == format) have += (have.empty() ? "" : ", ") + t.name;
    throw Error(ErrorKind::kInvalidArgument, "--to " + format + ": the checkpoint holds a " + type.name + " policy; " + type.name +
                                                 " has no export to " + format + (have.empty() ? "" : " (only " + have + " has)"));
  }
}

std::vector<std::string> export_policy(const PolicyBundle& b, const std::string& format, const fs::path& out) {
  check_export(b.arch->type(), format);
  const auto& type = model::policy_type(b.arch->type());
  std::map<std::string, at::Tensor> params;
  for (const auto& p : b.module->named_parameters()) params[p.key()] = p.value();
  return type.export_dir(out, *b.arch, b.spec, params, b.lerobot_unused, b.lerobot_config);
}

void copy_parameters(torch::nn::Module& dst, const torch::nn::Module& src) {
  at::NoGradGuard no_grad;
  auto d = dst.parameters(), s = src.parameters();
  if (d.size() != s.size()) throw Error(ErrorKind::kInternal, "copy_parameters: modules of different architectures");
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i].scalar_type() != s[i].scalar_type()) d[i].set_data(s[i].detach().clone());
    else d[i].copy_(s[i]);
  }
}

std::shared_ptr<model::PolicyModuleImpl> copy_module(const PolicyBundle& bundle, const at::Device& device) {
  auto m = bundle.arch->build({}, device);
  copy_parameters(*m, *bundle.module);
  m->eval();
  return m;
}

namespace {
// every "flow_steps" in a policy.json set to steps
void set_flow_steps(nlohmann::json& j, int steps) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "flow_steps") it.value() = steps;
      else set_flow_steps(it.value(), steps);
    }
  } else if (j.is_array()) {
    for (auto& v : j) set_flow_steps(v, steps);
  }
}
}  // namespace

void use_flow_steps(PolicyBundle& b, int steps, const at::Device& device, const std::string& flag) {
  if (steps <= 0 || steps == b.shape.flow_steps) return;
  auto j = b.arch->to_json();
  set_flow_steps(j, steps);
  auto arch = model::arch_from_json(j, flag);
  if (arch->base().flow_steps != steps) throw Error(ErrorKind::kInternal, "use_flow_steps: the policy type keeps its flow_steps elsewhere");
  auto module = arch->build({}, device);
  copy_parameters(*module, *b.module);
  module->eval();
  b.arch = arch;
  b.shape = arch->base();
  b.module = module;
}

fs::path resolve_checkpoint(const fs::path& path) {
  if (fs::exists(path / "model.safetensors")) return path;
  if (auto latest = find_latest_checkpoint(path)) return latest->dir;
  throw Error(ErrorKind::kNotFound, path.string() + ": not a checkpoint (no model.safetensors) and no checkpoints/latest under it");
}

PolicyBundle load_policy(const fs::path& path, const at::Device& device, const std::optional<std::string>& tokenizer_path) {
  if (model::foreign_policy_type(path)) {
    PolicyBundle b = import_lerobot_bundle(path, tokenizer_path);
    for (const auto& key : {b.spec.state_key, b.spec.action_key})
      if (b.spec.modes.count(key) && b.spec.modes.at(key) != data::NormMode::kIdentity && !b.spec.stats.count(key))
        throw Error(ErrorKind::kNotFound, path.string() + ": no normalisation statistics for '" + key +
                                              "' (policy_preprocessor.json and its normalizer safetensors, or openpi's assets/*/norm_stats.json)");
    b.module->to(device);
    return b;
  }
  fs::path dir = resolve_checkpoint(path);
  verify_checksums(dir);
  PolicyBundle b;
  const auto policy_json = read_json(dir / "policy.json");
  b.arch = model::arch_from_json(policy_json, (dir / "policy.json").string());
  b.shape = b.arch->base();
  b.spec = model::FeatureSpec::from_json(read_json(dir / "features.json"), (dir / "features.json").string());
  b.tokenizer = find_tokenizer(dir, tokenizer_path, false, b.shape.vocab);
  if (fs::exists(dir / "lerobot_config.json")) b.lerobot_config = model::read_ordered_json(dir / "lerobot_config.json");
  if (fs::exists(dir / "lerobot_unused.safetensors")) b.lerobot_unused = model::load_tensors((dir / "lerobot_unused.safetensors").string());
  b.module = b.arch->build({}, at::kCPU);
  model::NamedTensors params;
  for (const auto& p : b.module->named_parameters()) params.emplace_back(p.key(), p.value());
  auto file = (dir / "model.safetensors").string();
  model::load_into(params, model::load_tensors(file), file);
  b.module->to(device);
  b.module->eval();
  if (fs::exists(dir / "COMPLETE")) {
    auto c = read_json(dir / "COMPLETE");
    if (c.contains("step")) b.step = c["step"].get<int64_t>();
  }
  return b;
}

}  // namespace ember::train
