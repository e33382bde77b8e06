#include "ember/model/groot_lerobot.h"

#include <algorithm>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/groot_n15_metadata.h"
#include "ember/model/policy_type.h"
#include "ember/model/reference_io.h"
#include "ember/model/weights.h"

namespace ember::model {

namespace fs = std::filesystem;
using ref_io::bad;
using ref_io::get;
using ref_io::ojson;

namespace {

constexpr const char* kPrefix = "_groot_model.";
constexpr const char* kPackStep = "groot_pack_inputs_v3";

// input_features / output_features' `type` keys and their shapes
std::vector<int64_t> feature_shape(const ojson& f, const std::string& key, const std::string& file) {
  if (!f.is_object()) bad(file, "feature '" + key + "' is not an object");
  return get<std::vector<int64_t>>(f, "shape", {}, file);
}

// policy_preprocessor.json's groot_pack_inputs_v3 step: its min-max switch, its tag mapping and
// its statistics file (absent directory file: no statistics)
void read_pack_step(const fs::path& dir, FeatureSpec& spec, bool& has_stats, const std::string& tag, std::vector<std::string>& notes) {
  const auto step = ref_io::read_processor_step(dir, kPackStep);
  if (!step) {
    spec.embodiment = std::max(0, groot_n15_embodiment_index(tag));
    notes.push_back("LeRobot groot: no policy_preprocessor.json: no statistics (fine-tuning takes the dataset's)");
    return;
  }
  const ojson& cfg = step->config;
  const bool min_max = get<bool>(cfg, "normalize_min_max", true, step->file);
  for (const auto& key : {spec.state_key, spec.action_key}) spec.modes[key] = min_max ? data::NormMode::kMinMax : data::NormMode::kIdentity;
  // the step's own mapping (LeRobot: an unknown tag is embodiment 0)
  int index = groot_n15_embodiment_index(tag);
  if (cfg.contains("embodiment_mapping") && cfg["embodiment_mapping"].is_object())
    index = get<int>(cfg["embodiment_mapping"], tag, -1, step->file + " " + kPackStep + ".embodiment_mapping");
  if (index < 0) notes.push_back("LeRobot groot: embodiment_tag '" + tag + "' has no projector: embodiment 0, as LeRobot's pack step does");
  spec.embodiment = std::max(0, index);
  if (step->state_file.empty()) return;
  const auto stats = ref_io::read_stats_file(step->state_file);
  for (const auto& [key, dim] : {std::pair{spec.state_key, spec.state_dim}, std::pair{spec.action_key, spec.action_dim}})
    spec.stats[key] = ref_io::feature_stats(stats, key, dim, step->state_file.string(), {"min", "max"});
  has_stats = true;
}

}  // namespace

bool is_lerobot_groot_dir(const fs::path& dir) {
  const fs::path config = dir / "config.json";
  if (!fs::is_regular_file(config)) return false;
  try {
    const auto j = read_json_file(config.string());
    if (!j.is_object()) return false;
    if (j.contains("type")) return j["type"].is_string() && j["type"].get<std::string>() == "groot";
    return j.contains("base_model_path") && j.contains("embodiment_tag") && j.contains("input_features");
  } catch (const Error&) {
    return false;
  }
}

LeRobotGrootImport import_lerobot_groot(const fs::path& dir) {
  LeRobotGrootImport out;
  const std::string cfile = (dir / "config.json").string();
  const ojson c = read_ordered_json(dir / "config.json");
  out.lerobot_config = c;
  // the model's configuration: base_model_path's, or N1.5-3B's
  const std::string base = get<std::string>(c, "base_model_path", "nvidia/GR00T-N1.5-3B", cfile);
  fs::path base_dir = base;
  if (base_dir.is_relative()) base_dir = dir / base_dir;
  ojson config, shrink = ojson::object();
  std::string config_file;
  std::vector<std::string> notes;
  if (!base.empty() && fs::is_regular_file(base_dir / "config.json")) {
    config_file = (base_dir / "config.json").string();
    config = read_ordered_json(base_dir / "config.json");
    if (!config.is_object() || config.value("model_type", std::string()) != "gr00t_n1_5")
      bad(cfile, "base_model_path '" + base + "' is not a GR00T-N1.5 directory (" + config_file + ": model_type is not \"gr00t_n1_5\")");
    if (fs::exists(base_dir / "ember_shrink.json")) shrink = read_ordered_json(base_dir / "ember_shrink.json");
    notes.push_back("LeRobot groot: the model's configuration is base_model_path's (" + config_file + ")");
  } else {
    config_file = cfile + " (base_model_path '" + base + "': N1.5-3B's configuration)";
    config = groot_n15_config(groot_preset_shape("n15"), false, ojson());
    notes.push_back("LeRobot groot: base_model_path '" + base + "' is not a local directory: N1.5-3B's configuration, sizes from the tensors");
  }
  // the state dict, "_groot_model." taken off
  const fs::path wpath = dir / "model.safetensors";
  if (!fs::exists(wpath)) throw Error(ErrorKind::kNotFound, wpath.string() + ": missing (LeRobot's GrootPolicy weights)");
  std::map<std::string, at::Tensor> sd;
  for (auto& [name, t] : load_tensors(wpath.string())) {
    if (!name.starts_with(kPrefix)) bad(wpath.string(), "tensor '" + name + "' is not under '" + kPrefix + "' (GrootPolicy's model)", ErrorKind::kCorruption);
    sd[name.substr(std::string(kPrefix).size())] = t;
  }
  out.n15 = import_groot_n15(config, std::move(sd), shrink, config_file, wpath.string());
  out.n15.notes.insert(out.n15.notes.begin(), notes.begin(), notes.end());
  // the robot: input_features, output_features, the pack step
  FeatureSpec& spec = out.spec;
  if (!c.contains("input_features") || !c["input_features"].is_object()) bad(cfile, "field 'input_features' is missing or not an object");
  for (const auto& [key, f] : c["input_features"].items()) {
    const std::string type = f.is_object() ? f.value("type", std::string()) : "";
    if (type == "VISUAL") spec.cameras.push_back(key);
    if (type == "STATE" && key == spec.state_key) {
      const auto s = feature_shape(f, key, cfile);
      spec.state_dim = s.empty() ? 0 : s[0];
    }
  }
  std::sort(spec.cameras.begin(), spec.cameras.end());  // GrootPackInputsStep stacks the views in sorted order
  if (!c.contains("output_features") || !c["output_features"].is_object() || !c["output_features"].contains(spec.action_key))
    bad(cfile, "field 'output_features' has no '" + spec.action_key + "'");
  const auto a = feature_shape(c["output_features"][spec.action_key], spec.action_key, cfile);
  spec.action_dim = a.empty() ? 0 : a[0];
  const auto& heads = out.n15.shape.embodiments;
  if (spec.state_dim <= 0 || spec.state_dim > heads.at(0).state_dim || spec.action_dim <= 0 || spec.action_dim > out.n15.shape.base.max_action_dim)
    bad(cfile, "the state has " + std::to_string(spec.state_dim) + " values and the action " + std::to_string(spec.action_dim) +
                   " (input_features / output_features); the heads read 1.." + std::to_string(heads.at(0).state_dim) + " and 1.." +
                   std::to_string(out.n15.shape.base.max_action_dim));
  for (const auto& key : {spec.state_key, spec.action_key}) spec.modes[key] = data::NormMode::kMinMax;
  spec.norm_options.rule = data::EpsilonRule::kZeroRangeToZero;  // the pack step: max == min gives 0
  spec.state_in_prompt = false;
  spec.loss_on_padded_steps = true;
  read_pack_step(dir, spec, out.has_stats, get<std::string>(c, "embodiment_tag", "new_embodiment", cfile), out.n15.notes);
  if (spec.embodiment >= int64_t(heads.size()))
    bad(cfile, "embodiment_tag '" + get<std::string>(c, "embodiment_tag", "new_embodiment", cfile) + "' is projector " +
                   std::to_string(spec.embodiment) + ", but the model has " + std::to_string(heads.size()) + " embodiments");
  return out;
}

}  // namespace ember::model
