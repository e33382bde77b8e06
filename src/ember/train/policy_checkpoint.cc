#include "ember/train/policy_checkpoint.h"

#include <fstream>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/core/file.h"
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

void write_policy_files(const fs::path& dir, const PolicyBundle& b) {
  model::NamedTensors params;
  for (const auto& p : b.policy->named_parameters()) params.emplace_back(p.key(), p.value());
  model::save_tensors((dir / "model.safetensors").string(), params, {{"format", "pt"}, {"ember.policy", "pi05"}});
  write_text(dir / "policy.json", shape_to_json(b.shape).dump(2) + "\n");
  write_text(dir / "features.json", b.spec.to_json().dump(2) + "\n");
  b.tokenizer->save((dir / "tokenizer.model").string());
}

fs::path resolve_checkpoint(const fs::path& path) {
  if (fs::exists(path / "model.safetensors")) return path;
  if (auto latest = find_latest_checkpoint(path)) return latest->dir;
  throw Error(ErrorKind::kNotFound, path.string() + ": not a checkpoint (no model.safetensors) and no checkpoints/latest under it");
}

PolicyBundle load_policy(const fs::path& path, const at::Device& device) {
  fs::path dir = resolve_checkpoint(path);
  verify_checksums(dir);
  PolicyBundle b;
  b.shape = shape_from_json(read_json(dir / "policy.json"), (dir / "policy.json").string());
  b.spec = model::FeatureSpec::from_json(read_json(dir / "features.json"), (dir / "features.json").string());
  b.tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::load((dir / "tokenizer.model").string()));
  b.policy = model::Pi05Policy(b.shape);
  model::NamedTensors params;
  for (const auto& p : b.policy->named_parameters()) params.emplace_back(p.key(), p.value());
  auto file = (dir / "model.safetensors").string();
  model::load_into(params, model::load_tensors(file), file);
  b.policy->to(device);
  b.policy->eval();
  if (fs::exists(dir / "COMPLETE")) {
    auto c = read_json(dir / "COMPLETE");
    if (c.contains("step")) b.step = c["step"].get<int64_t>();
  }
  return b;
}

}  // namespace ember::train
