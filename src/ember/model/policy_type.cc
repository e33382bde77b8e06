#include "ember/model/policy_type.h"

#include <algorithm>

#include "ember/core/error.h"

namespace ember::model {

std::shared_ptr<const PolicyArch> PolicyArch::fit_features(const FeatureSpec& spec, const std::string&, bool) const {
  if (spec.embodiment != 0)
    throw Error(ErrorKind::kInvalidArgument, "--policy.embodiment=" + std::to_string(spec.embodiment) + ": a " + type() +
                                                 " policy has one embodiment (0)");
  return nullptr;  // callers keep the architecture they have
}

const std::vector<PolicyType>& policy_types() {
  // each catalog entry with its builders (policy_catalog.cc lists the types)
  static const std::vector<PolicyType> types = [] {
    std::vector<PolicyType> all{pi05_policy_type(), groot_policy_type()};
    const auto& infos = policy_type_infos();
    if (all.size() != infos.size()) throw Error(ErrorKind::kInternal, "policy registry: the catalog and the builders differ");
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].name != infos[i].name) throw Error(ErrorKind::kInternal, "policy registry: '" + all[i].name + "' out of the catalog's order");
    return all;
  }();
  return types;
}

const PolicyType& policy_type(std::string_view name) {
  const auto& info = policy_type_info(name);  // throws naming the registered types
  for (const auto& t : policy_types())
    if (t.name == info.name) return t;
  throw Error(ErrorKind::kInternal, "policy registry: no builders for '" + info.name + "'");
}

std::string policy_type_of(const nlohmann::json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "pi05";
}

std::shared_ptr<const PolicyArch> arch_from_json(const nlohmann::json& j, const std::string& what) {
  const std::string type = policy_type_of(j);
  for (const auto& t : policy_types())
    if (t.name == type) return t.from_json(j, what);
  throw Error(ErrorKind::kCorruption, what + ": type '" + type + "' (expected " + policy_type_names() + ")");
}

const PolicyType* foreign_policy_type(const std::filesystem::path& dir) {
  for (const auto& t : policy_types())
    if (t.is_foreign_dir && t.is_foreign_dir(dir)) return &t;
  return nullptr;
}

namespace {

nlohmann::json tower_json(const TowerShape& t) {
  return {{"width", t.width}, {"layers", t.layers}, {"heads", t.heads}, {"kv_heads", t.kv_heads},
          {"head_dim", t.head_dim}, {"mlp", t.mlp}};
}
TowerShape tower_from(const nlohmann::json& j) {
  return {j.at("width").get<int>(), j.at("layers").get<int>(), j.at("heads").get<int>(), j.at("kv_heads").get<int>(),
          j.at("head_dim").get<int>(), j.at("mlp").get<int>()};
}

}  // namespace

nlohmann::json shape_to_json(const PolicyShape& s) {
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

PolicyShape shape_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    PolicyShape s;
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
    validate(s);
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  }
}

}  // namespace ember::model
