#include "ember/train/policy_checkpoint.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/file.h"
#include "ember/model/lerobot_pi05.h"
#include "ember/model/weights.h"
#include "ember/train/checkpoint_dir.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {

nlohmann::json tower_json(const model::TowerShape& t) {
  return {{"width", t.width}, {"layers", t.layers}, {"heads", t.heads}, {"kv_heads", t.kv_heads},
          {"head_dim", t.head_dim}, {"mlp", t.mlp}};
}
model::TowerShape tower_from(const nlohmann::json& j) {
  return {j.at("width").get<int>(), j.at("layers").get<int>(), j.at("heads").get<int>(), j.at("kv_heads").get<int>(),
          j.at("head_dim").get<int>(), j.at("mlp").get<int>()};
}

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

nlohmann::json shape_to_json(const model::PolicyShape& s) {
  const auto& v = s.vision;
  return {{"type", "pi05"},
          {"preset", s.preset},
          {"vision",
           {{"image_size", v.image_size}, {"patch", v.patch}, {"width", v.width}, {"layers", v.layers}, {"heads", v.heads}, {"mlp", v.mlp}}},
          {"lm", tower_json(s.lm)},
          {"expert", tower_json(s.expert)},
          {"vocab", s.vocab},
          {"horizon", s.horizon},
          {"max_action_dim", s.max_action_dim},
          {"max_cameras", s.max_cameras},
          {"max_prompt", s.max_prompt},
          {"flow_steps", s.flow_steps}};
}

model::PolicyShape shape_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    model::PolicyShape s;
    s.preset = j.at("preset").get<std::string>();
    const auto& v = j.at("vision");
    s.vision = {v.at("image_size").get<int>(), v.at("patch").get<int>(), v.at("width").get<int>(),
                v.at("layers").get<int>(), v.at("heads").get<int>(), v.at("mlp").get<int>()};
    s.lm = tower_from(j.at("lm"));
    s.expert = tower_from(j.at("expert"));
    s.vocab = j.at("vocab").get<int>();
    s.horizon = j.at("horizon").get<int>();
    s.max_action_dim = j.at("max_action_dim").get<int>();
    s.max_cameras = j.at("max_cameras").get<int>();
    s.max_prompt = j.at("max_prompt").get<int>();
    s.flow_steps = j.at("flow_steps").get<int>();
    model::validate(s);
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  }
}

nlohmann::json groot_shape_to_json(const model::GrootShape& g) {
  auto j = shape_to_json(g.base);
  j["type"] = "groot";
  j["vision"]["merge"] = g.base.vision.merge;
  j.erase("expert");
  nlohmann::json embodiments = nlohmann::json::array();
  for (const auto& e : g.embodiments) embodiments.push_back({{"state_dim", e.state_dim}, {"action_dim", e.action_dim}});
  j["groot"] = {{"backbone_dim", g.backbone_dim}, {"vl_layers", g.vl_layers}, {"vl_heads", g.vl_heads},
                {"vl_head_dim", g.vl_head_dim}, {"dit_layers", g.dit_layers}, {"dit_heads", g.dit_heads},
                {"dit_head_dim", g.dit_head_dim}, {"dit_output", g.dit_output}, {"hidden", g.hidden},
                {"future_tokens", g.future_tokens}, {"max_seq_len", g.max_seq_len},
                {"timestep_buckets", g.timestep_buckets}, {"rope_base", g.rope_base}, {"dropout", g.dropout},
                {"embodiments", embodiments}};
  return j;
}

std::string policy_type_of(const nlohmann::json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "pi05";
}

model::GrootShape groot_shape_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    auto base = j;
    base["expert"] = base.at("lm");  // unused by groot; shape_from_json checks it as pi0.5's
    model::GrootShape g;
    g.base = shape_from_json(base, what);
    g.base.vision.merge = j.at("vision").value("merge", 1);
    const auto& h = j.at("groot");
    g.backbone_dim = h.at("backbone_dim").get<int>();
    g.vl_layers = h.at("vl_layers").get<int>(), g.vl_heads = h.at("vl_heads").get<int>(), g.vl_head_dim = h.at("vl_head_dim").get<int>();
    g.dit_layers = h.at("dit_layers").get<int>(), g.dit_heads = h.at("dit_heads").get<int>(), g.dit_head_dim = h.at("dit_head_dim").get<int>();
    g.dit_output = h.at("dit_output").get<int>(), g.hidden = h.at("hidden").get<int>();
    g.future_tokens = h.at("future_tokens").get<int>(), g.max_seq_len = h.at("max_seq_len").get<int>();
    g.timestep_buckets = h.at("timestep_buckets").get<int>(), g.rope_base = h.at("rope_base").get<double>();
    if (h.contains("dropout")) g.dropout = h.at("dropout").get<double>();  // absent (older files): N1.5's 0.2
    g.embodiments.clear();
    for (const auto& e : h.at("embodiments")) g.embodiments.push_back({e.at("state_dim").get<int>(), e.at("action_dim").get<int>()});
    model::validate(g);
    return g;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCorruption) throw;
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  }
}

void write_policy_files(const fs::path& dir, const PolicyBundle& b) {
  model::NamedTensors params;
  for (const auto& p : b.module->named_parameters()) params.emplace_back(p.key(), p.value());
  model::save_tensors((dir / "model.safetensors").string(), params, {{"format", "pt"}, {"ember.policy", b.module->type()}});
  auto policy_json = b.groot ? groot_shape_to_json(*b.groot) : shape_to_json(b.shape);
  if (auto groot = std::dynamic_pointer_cast<model::GrootPolicyImpl>(b.module))
    policy_json["groot"]["tune_backbone"] = groot->tune_backbone;  // how it was trained (resuming reads the flag)
  write_text(dir / "policy.json", policy_json.dump(2) + "\n");
  write_text(dir / "features.json", b.spec.to_json().dump(2) + "\n");
  b.tokenizer->save((dir / "tokenizer.model").string());
  if (b.lerobot_config.is_object()) write_text(dir / "lerobot_config.json", b.lerobot_config.dump(4) + "\n");
  if (!b.lerobot_unused.empty()) {
    model::NamedTensors kept(b.lerobot_unused.begin(), b.lerobot_unused.end());
    model::save_tensors((dir / "lerobot_unused.safetensors").string(), kept);
  }
}

namespace {

// The tokenizer of a policy directory: `path` when given, else DIR/tokenizer.model.
std::unique_ptr<model::Tokenizer> find_tokenizer(const fs::path& dir, const std::optional<std::string>& path, bool lerobot,
                                                 int vocab) {
  std::unique_ptr<model::Tokenizer> t;
  if (path) {
    t = std::make_unique<model::Tokenizer>(model::Tokenizer::load(*path));
  } else if (fs::exists(dir / "tokenizer.model")) {
    t = std::make_unique<model::Tokenizer>(model::Tokenizer::load((dir / "tokenizer.model").string()));
  } else if (lerobot) {
    throw Error(ErrorKind::kInvalidArgument,
                dir.string() + ": a LeRobot policy directory holds no tokenizer: pass --policy.tokenizer_path=FILE, the SentencePiece "
                "model its prompts were tokenised with (PaliGemma's tokenizer.model for released pi0.5 weights; ember never downloads one)");
  } else {
    throw Error(ErrorKind::kNotFound, (dir / "tokenizer.model").string() + ": no such file (not a checkpoint?)");
  }
  if (t->vocab_size() > vocab)
    throw Error(ErrorKind::kInvalidArgument, (path ? *path : (dir / "tokenizer.model").string()) + ": the tokenizer has " +
                                                 std::to_string(t->vocab_size()) + " pieces, the policy's embedding " + std::to_string(vocab));
  return t;
}

}  // namespace

PolicyBundle import_lerobot_bundle(const fs::path& dir, const std::optional<std::string>& tokenizer_path, bool need_tokenizer) {
  auto imported = model::import_lerobot_pi05(dir);
  for (const auto& note : imported.notes) std::fprintf(stderr, "ember: %s: %s\n", dir.string().c_str(), note.c_str());
  if (!imported.skipped.empty()) {
    std::string list;
    for (const auto& k : imported.skipped) list += (list.empty() ? "" : ", ") + k;
    std::fprintf(stderr, "ember: %s: skipped %zu tensors pi0.5 never uses (kept for export): %s\n", dir.string().c_str(),
                 imported.skipped.size(), list.c_str());
  }
  PolicyBundle b;
  b.shape = imported.shape;
  b.spec = imported.spec;
  b.policy = model::Pi05Policy(b.shape);
  b.module = b.policy.ptr();
  model::NamedTensors params;
  for (const auto& p : b.policy->named_parameters()) params.emplace_back(p.key(), p.value());
  model::load_into(params, imported.params, (dir / "model.safetensors").string());
  b.policy->eval();
  b.lerobot_config = std::move(imported.config);
  b.lerobot_unused = std::move(imported.kept);
  if (need_tokenizer || tokenizer_path || fs::exists(dir / "tokenizer.model"))
    b.tokenizer = find_tokenizer(dir, tokenizer_path, true, b.shape.vocab);
  if (!imported.has_stats) b.spec.stats.clear();
  return b;
}

void export_lerobot(const PolicyBundle& b, const fs::path& out) {
  if (!b.policy) throw Error(ErrorKind::kInvalidArgument, "--to lerobot: the checkpoint holds a " + b.module->type() +
                                                              " policy; only pi05 policies export to LeRobot");
  model::TensorMap params;
  for (const auto& p : b.policy->named_parameters()) params[p.key()] = p.value();
  model::write_lerobot_pi05(out, b.shape, b.spec, params, b.lerobot_unused, b.lerobot_config);
}

fs::path resolve_checkpoint(const fs::path& path) {
  if (fs::exists(path / "model.safetensors")) return path;
  if (auto latest = find_latest_checkpoint(path)) return latest->dir;
  throw Error(ErrorKind::kNotFound, path.string() + ": not a checkpoint (no model.safetensors) and no checkpoints/latest under it");
}

PolicyBundle load_policy(const fs::path& path, const at::Device& device, const std::optional<std::string>& tokenizer_path) {
  if (model::foreign_policy_kind(path) != model::ForeignPolicy::kNone) {
    PolicyBundle b = import_lerobot_bundle(path, tokenizer_path);
    for (const auto& key : {b.spec.state_key, b.spec.action_key})
      if (b.spec.modes.count(key) && b.spec.modes.at(key) != data::NormMode::kIdentity && !b.spec.stats.count(key))
        throw Error(ErrorKind::kNotFound, path.string() + ": no normalisation statistics for '" + key +
                                              "' (policy_preprocessor.json and its normalizer safetensors, or openpi's assets/*/norm_stats.json)");
    b.policy->to(device);
    return b;
  }
  fs::path dir = resolve_checkpoint(path);
  verify_checksums(dir);
  PolicyBundle b;
  const auto policy_json = read_json(dir / "policy.json");
  const std::string type = policy_type_of(policy_json);
  if (type == "groot") {
    b.groot = groot_shape_from_json(policy_json, (dir / "policy.json").string());
    b.shape = b.groot->base;
  } else if (type == "pi05") {
    b.shape = shape_from_json(policy_json, (dir / "policy.json").string());
  } else {
    throw Error(ErrorKind::kCorruption, (dir / "policy.json").string() + ": type '" + type + "' (expected pi05 or groot)");
  }
  b.spec = model::FeatureSpec::from_json(read_json(dir / "features.json"), (dir / "features.json").string());
  b.tokenizer = find_tokenizer(dir, tokenizer_path, false, b.shape.vocab);
  if (fs::exists(dir / "lerobot_config.json")) b.lerobot_config = model::read_ordered_json(dir / "lerobot_config.json");
  if (fs::exists(dir / "lerobot_unused.safetensors")) b.lerobot_unused = model::load_tensors((dir / "lerobot_unused.safetensors").string());
  if (b.groot) {
    b.module = model::GrootPolicy(*b.groot).ptr();
  } else {
    b.policy = model::Pi05Policy(b.shape);
    b.module = b.policy.ptr();
  }
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
