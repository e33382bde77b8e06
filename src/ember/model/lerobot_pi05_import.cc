#include "ember/model/lerobot_pi05.h"
#include "ember/model/lerobot_pi05_common.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/core/output_dir.h"
#include "ember/model/weights.h"


// LeRobot pi05 and openpi PyTorch policy directories in: config.json, the tensors' shapes, the
// processor files' statistics (docs/lerobot_pi05.md).
namespace ember::model {

namespace fs = std::filesystem;
using namespace pi05_io;

ojson read_ordered_json(const fs::path& path) {
  if (!fs::exists(path)) bad(path.string(), "no such file", ErrorKind::kNotFound);
  auto bytes = read_file(path.string());
  return parse_ordered_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
}

namespace {

ojson read_ordered(const fs::path& path) { return read_ordered_json(path); }

struct Variant {
  int width, depth, mlp, heads, kv_heads, head_dim;
};
Variant variant(const std::string& name, const std::string& file, const char* field) {
  if (name == "gemma_2b") return {2048, 18, 16384, 8, 1, 256};
  if (name == "gemma_300m") return {1024, 18, 4096, 8, 1, 256};
  bad(file, std::string("field '") + field + "' is '" + name + "'; LeRobot's pi05 knows gemma_2b and gemma_300m");
}

// Refuses the config values ember's pi0.5 does not implement.
void refuse_unimplemented(const ojson& c, const std::string& file) {
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); };
  if (get<bool>(c, "use_relative_actions", false, file)) bad(file, "use_relative_actions is true; ember does not implement relative actions", ErrorKind::kUnsupported);
  const std::pair<const char*, double> fixed[] = {{"min_period", 4e-3}, {"max_period", 4.0}, {"time_sampling_beta_alpha", 1.5},
                                                  {"time_sampling_beta_beta", 1.0}, {"time_sampling_scale", 0.999},
                                                  {"time_sampling_offset", 0.001}};
  for (const auto& [key, value] : fixed) {
    double v = get<double>(c, key, value, file);
    if (!near(v, value))
      bad(file, std::string(key) + " is " + c[key].dump() + "; ember implements only pi0.5's " + ojson(value).dump(), ErrorKind::kUnsupported);
  }
  if (c.contains("rtc_config") && !c["rtc_config"].is_null()) bad(file, "rtc_config is set; ember does not implement real-time chunking", ErrorKind::kUnsupported);
  for (const char* key : {"freeze_vision_encoder", "train_expert_only"})
    if (get<bool>(c, key, false, file)) bad(file, std::string(key) + " is true; ember trains every parameter", ErrorKind::kUnsupported);
}

// The SigLIP / Gemma head counts no tensor shows: ember_shrink.json's, else LeRobot's.
struct Heads {
  int vision = 16, lm = 8, expert = 8, lm_kv = -1, expert_kv = -1;
  bool shrink = false;
};
Heads read_heads(const fs::path& dir) {
  Heads h;
  const fs::path f = dir / "ember_shrink.json";
  if (!fs::exists(f)) return h;
  auto j = read_ordered(f);
  const std::string file = f.string();
  h.shrink = true;
  try {
    h.vision = j.at("vision").value("num_attention_heads", 16);
    h.lm = j.at("paligemma").value("num_heads", 8);
    h.expert = j.at("action_expert").value("num_heads", 8);
    h.lm_kv = j.at("paligemma").value("num_kv_heads", -1);
    h.expert_kv = j.at("action_expert").value("num_kv_heads", -1);
  } catch (const nlohmann::json::exception& e) {
    bad(file, e.what(), ErrorKind::kCorruption);
  }
  if (h.vision <= 0 || h.lm <= 0 || h.expert <= 0) bad(file, "a head count is not positive");
  return h;
}

int divide(int64_t rows, int heads, const std::string& file, const std::string& key) {
  if (heads <= 0 || rows % heads) bad(file, "tensor '" + key + "' has " + std::to_string(rows) + " rows, not a multiple of " +
                                               std::to_string(heads) + " heads");
  return int(rows / heads);
}

// Every size from the tensors; head counts from `heads`.
PolicyShape shape_from_tensors(const TensorMap& sd, const Heads& heads, const std::string& file) {
  PolicyShape s;
  const auto& patch = need(sd, kVT + "embeddings.patch_embedding.weight", file, 4);
  const auto& pos = need(sd, kVT + "embeddings.position_embedding.weight", file, 2);
  s.vision.width = int(patch.size(0));
  s.vision.patch = int(patch.size(2));
  const int side = int(std::lround(std::sqrt(double(pos.size(0)))));
  if (int64_t(side) * side != pos.size(0))
    bad(file, "tensor '" + kVT + "embeddings.position_embedding.weight' has " + std::to_string(pos.size(0)) + " positions, not a square number");
  s.vision.image_size = side * s.vision.patch;
  s.vision.layers = count_layers(sd, kVT + "encoder.layers.", ".self_attn.q_proj.weight");
  if (s.vision.layers == 0) bad(file, "tensor '" + kVT + "encoder.layers.0.self_attn.q_proj.weight' is missing");
  s.vision.mlp = int(need(sd, kVT + "encoder.layers.0.mlp.fc1.weight", file, 2).size(0));
  s.vision.heads = heads.vision;
  const bool has_embed = sd.count(kEmbed);
  const auto& embed = need(sd, has_embed ? kEmbed : kLmHead, file, 2);
  s.vocab = int(embed.size(0));
  auto tower = [&](const std::string& base, int nheads, int kv_heads, TowerShape& t) {
    const auto& q = need(sd, base + "0.self_attn.q_proj.weight", file, 2);
    const auto& k = need(sd, base + "0.self_attn.k_proj.weight", file, 2);
    t.width = int(q.size(1));
    t.layers = count_layers(sd, base, ".self_attn.k_proj.weight");
    t.heads = nheads;
    t.head_dim = divide(q.size(0), nheads, file, base + "0.self_attn.q_proj.weight");
    t.kv_heads = kv_heads > 0 ? kv_heads : divide(k.size(0), t.head_dim, file, base + "0.self_attn.k_proj.weight");
    t.mlp = int(need(sd, base + "0.mlp.gate_proj.weight", file, 2).size(0));
  };
  tower(kLM + "layers.", heads.lm, heads.lm_kv, s.lm);
  tower(kEX + "model.layers.", heads.expert, heads.expert_kv, s.expert);
  s.max_action_dim = int(need(sd, "model.action_in_proj.weight", file, 2).size(1));
  return s;
}

std::string tower_text(const TowerShape& t) {
  return std::to_string(t.width) + " wide, " + std::to_string(t.layers) + " layers, mlp " + std::to_string(t.mlp) + ", " +
         std::to_string(t.heads) + "x" + std::to_string(t.head_dim) + " heads, " + std::to_string(t.kv_heads) + " kv";
}

// The tensors' tower against the size the config names: a layer missing or extra, another
// width, is refused naming the file (a shrunken test model states its sizes in ember_shrink.json)
void compare_variant(const TowerShape& t, const Variant& v, const std::string& name, const char* role, const std::string& file,
                     const std::string& said_by) {
  if (t.width == v.width && t.layers == v.depth && t.mlp == v.mlp && t.heads == v.heads && t.kv_heads == v.kv_heads &&
      t.head_dim == v.head_dim)
    return;
  const TowerShape want{v.width, v.depth, v.heads, v.kv_heads, v.head_dim, v.mlp};
  bad(file, std::string(role) + ": the tensors make " + tower_text(t) + ", but " + said_by + " says " + name + " (" + tower_text(want) +
                ")");
}

// SigLIP So400m/14 at 224 px, pi0.5's vision tower (LeRobot's config names no other)
void compare_vision(const VisionShape& v, int width, int layers, int mlp, int patch, const std::string& file, const std::string& said_by) {
  if (v.width == width && v.layers == layers && v.mlp == mlp && v.patch == patch) return;
  auto text = [](int w, int l, int m, int p) {
    return std::to_string(w) + " wide, " + std::to_string(l) + " layers, mlp " + std::to_string(m) + ", patch " + std::to_string(p);
  };
  bad(file, "vision tower: the tensors make " + text(v.width, v.layers, v.mlp, v.patch) + ", but " + said_by + " says " +
                text(width, layers, mlp, patch));
}

// Every size the tensors show against what the directory says: ember_shrink.json's sizes when it
// has one, else the variants' (and SigLIP So400m for the vision tower).
void check_sizes(const PolicyShape& s, const Heads& heads, const fs::path& dir, const std::string& pv, const std::string& ev,
                 const std::string& cfg_file, const std::string& wfile) {
  if (!heads.shrink) {
    compare_variant(s.lm, variant(pv, cfg_file, "paligemma_variant"), pv, "paligemma", wfile, cfg_file);
    compare_variant(s.expert, variant(ev, cfg_file, "action_expert_variant"), ev, "action expert", wfile, cfg_file);
    compare_vision(s.vision, 1152, 27, 4304, 14, wfile, "pi0.5 (SigLIP So400m/14)");
    return;
  }
  const fs::path f = dir / "ember_shrink.json";
  const std::string sfile = f.string();
  const ojson j = read_ordered(f);
  auto size = [&](const char* tower, const char* key) {
    if (!j.contains(tower) || !j[tower].is_object() || !j[tower].contains(key) || !j[tower][key].is_number_integer())
      bad(sfile, std::string("field '") + tower + "." + key + "' is missing or not an integer", ErrorKind::kCorruption);
    return j[tower][key].get<int>();
  };
  for (const auto& [tower, t] : {std::pair<const char*, const TowerShape*>{"paligemma", &s.lm}, {"action_expert", &s.expert}}) {
    const Variant v{size(tower, "width"), size(tower, "depth"), size(tower, "mlp_dim"), size(tower, "num_heads"),
                    size(tower, "num_kv_heads"), size(tower, "head_dim")};
    compare_variant(*t, v, std::string(tower) + " of ember_shrink.json", tower, wfile, sfile);
  }
  compare_vision(s.vision, size("vision", "hidden_size"), size("vision", "num_hidden_layers"), size("vision", "intermediate_size"),
                 size("vision", "patch_size"), wfile, sfile);
}

// The normalisation statistics of a LeRobot processor file, "<feature>.<stat>" -> values.
void check_stats(FeatureSpec& spec, const std::string& file) {
  for (const auto& [key, dim] : {std::pair{spec.state_key, spec.state_dim}, std::pair{spec.action_key, spec.action_dim}}) {
    const auto& stats = ref_io::feature_stats(spec.stats, key, dim, file);
    // the statistics its mode needs, finite (a NaN q01 made NaN actions)
    if (auto m = spec.modes.find(key); m != spec.modes.end()) {
      try {
        data::FeatureNormalizer(m->second, stats, key, spec.norm_options);
      } catch (const Error& e) {
        bad(file, e.what());
      }
    }
  }
}

// Statistics and eps from policy_preprocessor.json's normalizer_processor step.
bool read_lerobot_stats(const fs::path& dir, FeatureSpec& spec) {
  const auto step = ref_io::read_processor_step(dir, "normalizer_processor");
  if (!step) return false;
  const ojson& cfg = step->config;
  spec.norm_options.eps = get<double>(cfg, "eps", 1e-8, step->file);
  spec.norm_options.rule = data::EpsilonRule::kZeroRangeOnly;  // LeRobot 0.4 and later
  if (cfg.contains("norm_map")) {
    const auto& nm = cfg["norm_map"];
    for (const auto& [type, key] : {std::pair{"STATE", spec.state_key}, std::pair{"ACTION", spec.action_key}})
      if (nm.contains(type)) spec.modes[key] = data::parse_norm_mode(get<std::string>(nm, type, "", step->file), step->file + ": norm_map." + type);
  }
  if (step->state_file.empty()) bad(step->file, "the normalizer_processor step has no 'state_file'", ErrorKind::kCorruption);
  spec.stats = read_stats_file(step->state_file);
  for (auto it = spec.stats.begin(); it != spec.stats.end();)  // only state and action are normalised
    it = (it->first == spec.state_key || it->first == spec.action_key) ? std::next(it) : spec.stats.erase(it);
  check_stats(spec, step->state_file.string());
  return true;
}

FeatureSpec lerobot_features(const ojson& c, const std::string& file, PolicyShape& shape) {
  FeatureSpec spec;
  spec.lerobot_state_bins = true;
  spec.loss_on_padded_steps = true;
  spec.lerobot_images = true;
  if (!c.contains("input_features") || !c["input_features"].is_object()) bad(file, "field 'input_features' is missing or not an object");
  bool have_state = false;
  for (const auto& [key, f] : c["input_features"].items()) {
    const std::string type = f.value("type", "");
    if (type == "VISUAL") {
      spec.cameras.push_back(key);
    } else if (type == "STATE") {
      if (have_state) bad(file, "input_features: two STATE features ('" + spec.state_key + "', '" + key + "'); pi05 reads one");
      have_state = true;
      spec.state_key = key;
      auto dims = f.value("shape", std::vector<int64_t>{});
      if (dims.size() != 1 || dims[0] <= 0) bad(file, "input_features." + key + ".shape is not [state_dim]");
      spec.state_dim = dims[0];
    } else {
      bad(file, "input_features." + key + ": type '" + type + "' (pi05 takes VISUAL and STATE features)");
    }
  }
  if (!have_state) bad(file, "input_features has no STATE feature");
  // validate_features appends the empty cameras the config lists but does not name
  const int empty = get<int>(c, "empty_cameras", 0, file);
  if (empty < 0 || empty > 16) bad(file, "empty_cameras is " + std::to_string(empty) + "; it must be in 0..16");
  for (int i = 0; i < empty; ++i) {
    const std::string key = "observation.images.empty_camera_" + std::to_string(i);
    if (std::find(spec.cameras.begin(), spec.cameras.end(), key) == spec.cameras.end()) spec.cameras.push_back(key);
  }
  if (spec.cameras.empty()) bad(file, "input_features has no VISUAL feature");
  bool have_action = false;
  if (c.contains("output_features") && c["output_features"].is_object())
    for (const auto& [key, f] : c["output_features"].items()) {
      if (f.value("type", "") != "ACTION") continue;
      auto dims = f.value("shape", std::vector<int64_t>{});
      if (dims.size() != 1 || dims[0] <= 0) bad(file, "output_features." + key + ".shape is not [action_dim]");
      spec.action_key = key;
      spec.action_dim = dims[0];
      have_action = true;
    }
  if (!have_action) bad(file, "output_features has no ACTION feature");
  if (spec.action_dim > shape.max_action_dim)
    bad(file, "the action has " + std::to_string(spec.action_dim) + " dimensions, more than max_action_dim " + std::to_string(shape.max_action_dim));
  const auto nm = c.contains("normalization_mapping") && !c["normalization_mapping"].is_null() ? c["normalization_mapping"] : ojson::object();
  if (!nm.is_object()) bad(file, "normalization_mapping is " + nm.dump() + ", not an object of feature types to modes");
  auto mode = [&](const char* type) {
    if (nm.contains(type) && !nm[type].is_string()) bad(file, std::string("normalization_mapping.") + type + " is " + nm[type].dump() + ", not a mode's name");
    return data::parse_norm_mode(nm.contains(type) ? nm[type].get<std::string>() : std::string("QUANTILES"),
                                 file + ": normalization_mapping." + type);
  };
  if (nm.contains("VISUAL") && mode("VISUAL") != data::NormMode::kIdentity)
    bad(file, "normalization_mapping.VISUAL is " + nm["VISUAL"].dump() + "; pi05 (and ember) take images as IDENTITY", ErrorKind::kUnsupported);
  spec.modes[spec.state_key] = mode("STATE");
  spec.modes[spec.action_key] = mode("ACTION");
  shape.max_cameras = int(spec.cameras.size());
  return spec;
}

// The sizes of the config (variants, chunk, steps, image, prompt) against the tensors'.
PolicyShape lerobot_shape(const ojson& c, const TensorMap& sd, const fs::path& dir, const std::string& file,
                          std::vector<std::string>& notes) {
  const Heads heads = read_heads(dir);
  PolicyShape s = shape_from_tensors(sd, heads, (dir / "model.safetensors").string());
  s.preset = "lerobot";
  const std::string pv = get<std::string>(c, "paligemma_variant", "gemma_2b", file);
  const std::string ev = get<std::string>(c, "action_expert_variant", "gemma_300m", file);
  variant(pv, file, "paligemma_variant");
  variant(ev, file, "action_expert_variant");
  check_sizes(s, heads, dir, pv, ev, file, (dir / "model.safetensors").string());
  if (heads.shrink) notes.push_back("sizes from the tensors and " + (dir / "ember_shrink.json").string() + " (a shrunken model)");
  s.horizon = get<int>(c, "chunk_size", 50, file);
  s.flow_steps = get<int>(c, "num_inference_steps", 10, file);
  s.max_prompt = get<int>(c, "tokenizer_max_length", 200, file);
  // fields an export copies on: in LeRobot's ranges, so that what ember writes LeRobot can load
  const int n_action = get<int>(c, "n_action_steps", s.horizon, file);
  if (n_action < 1 || n_action > s.horizon)
    bad(file, "n_action_steps is " + std::to_string(n_action) + "; it must be in 1..chunk_size (" + std::to_string(s.horizon) + ")");
  const int64_t max_state = get<int64_t>(c, "max_state_dim", 32, file);
  if (max_state < 1 || max_state > 4096) bad(file, "max_state_dim is " + std::to_string(max_state) + "; it must be in 1..4096");
  const int max_action = get<int>(c, "max_action_dim", 32, file);
  if (max_action != s.max_action_dim)
    bad(file, "max_action_dim is " + std::to_string(max_action) + ", but model.action_in_proj.weight takes " + std::to_string(s.max_action_dim));
  auto res = get<std::vector<int>>(c, "image_resolution", {224, 224}, file);
  if (res.size() != 2 || res[0] != res[1]) bad(file, "image_resolution " + c["image_resolution"].dump() + " is not square", ErrorKind::kUnsupported);
  if (res[0] != s.vision.image_size)
    bad(file, "image_resolution is " + std::to_string(res[0]) + " px, but the vision tower's position embeddings are for " +
                  std::to_string(s.vision.image_size) + " px");
  return s;
}

// ---------------------------------------------------------------------------------------------
// openpi

ojson openpi_as_pi05_config(const ojson& c, const std::string& file, const PolicyShape& s) {
  ojson out;
  out["type"] = "pi05";
  out["paligemma_variant"] = get<std::string>(c, "paligemma_variant", "gemma_2b", file);
  out["action_expert_variant"] = get<std::string>(c, "action_expert_variant", "gemma_300m", file);
  out["chunk_size"] = s.horizon;
  out["n_action_steps"] = s.horizon;
  out["max_action_dim"] = s.max_action_dim;
  out["tokenizer_max_length"] = s.max_prompt;
  return out;
}

void read_openpi_stats(const fs::path& dir, FeatureSpec& spec, std::vector<std::string>& notes, bool& has) {
  std::vector<fs::path> found;
  if (fs::is_directory(dir / "assets"))
    for (const auto& e : fs::directory_iterator(dir / "assets"))
      if (fs::exists(e.path() / "norm_stats.json")) found.push_back(e.path() / "norm_stats.json");
  std::sort(found.begin(), found.end());
  if (found.empty()) return;
  if (found.size() > 1) notes.push_back("several assets/*/norm_stats.json: using " + found[0].string());
  auto j = read_ordered(found[0]);
  const std::string file = found[0].string();
  try {
    const auto& ns = j.at("norm_stats");
    for (const auto& [src, key] : {std::pair{"state", spec.state_key}, std::pair{"actions", spec.action_key}}) {
      for (const auto& [stat, values] : ns.at(src).items()) spec.stats[key][stat] = values.get<std::vector<double>>();
    }
  } catch (const nlohmann::json::exception& e) {
    bad(file, std::string("not openpi's NormStats: ") + e.what(), ErrorKind::kCorruption);
  }
  spec.state_dim = int64_t(spec.stats[spec.state_key].count("q01") ? spec.stats[spec.state_key]["q01"].size() : spec.stats[spec.state_key]["mean"].size());
  spec.action_dim = int64_t(spec.stats[spec.action_key].count("q01") ? spec.stats[spec.action_key]["q01"].size() : spec.stats[spec.action_key]["mean"].size());
  check_stats(spec, file);
  has = true;
}
}  // namespace

ForeignPolicy foreign_policy_kind(const fs::path& dir) {
  if (fs::exists(dir / "policy.json")) return ForeignPolicy::kNone;  // an ember checkpoint
  for (const char* orbax : {"params", "_METADATA", "_CHECKPOINT_METADATA", "_sharding"})
    if (fs::exists(dir / orbax))
      bad(dir.string(), std::string("a JAX/orbax checkpoint (") + orbax + "): ember reads PyTorch safetensors only (LeRobot's "
          "pi05 directories, or openpi's PyTorch conversion made by its examples/convert_jax_model_to_pytorch.py)", ErrorKind::kUnsupported);
  if (!fs::exists(dir / "config.json")) return ForeignPolicy::kNone;
  auto c = read_ordered(dir / "config.json");
  if (!c.is_object()) return ForeignPolicy::kNone;
  if (c.contains("type")) {
    if (!c["type"].is_string()) return ForeignPolicy::kNone;
    const auto type = c["type"].get<std::string>();
    if (type == "pi05") return ForeignPolicy::kLeRobot;
    if (type == "groot") return ForeignPolicy::kNone;  // LeRobot's GR00T-N1.5 policy: the groot type's (groot_lerobot.h)
    bad((dir / "config.json").string(), "type is '" + type + "'; ember imports LeRobot's pi05 and groot policies only", ErrorKind::kUnsupported);
  }
  if (c.contains("paligemma_variant")) return ForeignPolicy::kOpenpi;
  return ForeignPolicy::kNone;
}

LeRobotImport import_lerobot_pi05(const fs::path& dir) {
  LeRobotImport r;
  r.kind = foreign_policy_kind(dir);
  if (r.kind == ForeignPolicy::kNone)
    bad(dir.string(), "not a LeRobot pi05 policy directory (config.json with \"type\": \"pi05\") nor openpi's PyTorch one", ErrorKind::kNotFound);
  const std::string cfg_file = (dir / "config.json").string();
  const ojson c = read_ordered(dir / "config.json");
  const fs::path weights = dir / "model.safetensors";
  if (!fs::exists(weights)) bad(weights.string(), "no such file", ErrorKind::kNotFound);
  const std::string wfile = weights.string();
  TensorMap raw = load_tensors(wfile);
  {
    std::vector<std::string> dropped;
    TensorMap sd = canonical_keys(raw, wfile, &dropped);
    if (r.kind == ForeignPolicy::kLeRobot) {
      refuse_unimplemented(c, cfg_file);
      r.shape = lerobot_shape(c, sd, dir, cfg_file, r.notes);
      r.spec = lerobot_features(c, cfg_file, r.shape);
      r.has_stats = read_lerobot_stats(dir, r.spec);
      r.config = c;
    } else {
      const Heads heads = read_heads(dir);
      r.shape = shape_from_tensors(sd, heads, wfile);
      r.shape.preset = "openpi";
      const int horizon = get<int>(c, "action_horizon", 50, cfg_file);
      const int action_dim = get<int>(c, "action_dim", r.shape.max_action_dim, cfg_file);
      if (action_dim != r.shape.max_action_dim)
        bad(cfg_file, "action_dim is " + std::to_string(action_dim) + ", but action_in_proj.weight takes " + std::to_string(r.shape.max_action_dim));
      r.shape.horizon = horizon;
      r.shape.max_prompt = get<int>(c, "max_token_len", 200, cfg_file);
      r.shape.max_cameras = 3;
      const std::string pv = get<std::string>(c, "paligemma_variant", "gemma_2b", cfg_file);
      const std::string ev = get<std::string>(c, "action_expert_variant", "gemma_300m", cfg_file);
      variant(pv, cfg_file, "paligemma_variant");
      variant(ev, cfg_file, "action_expert_variant");
      check_sizes(r.shape, heads, dir, pv, ev, cfg_file, wfile);
      // openpi's three image slots (pi0.5 model inputs), its quantile rule and its bins
      r.spec.cameras = {"observation.images.base_0_rgb", "observation.images.left_wrist_0_rgb", "observation.images.right_wrist_0_rgb"};
      r.spec.lerobot_state_bins = true;
      r.spec.loss_on_padded_steps = true;
      r.spec.lerobot_images = true;  // openpi's PyTorch resize_with_pad is the same function
      r.spec.norm_options = {1e-6, data::EpsilonRule::kAddToRange};
      r.spec.modes[r.spec.state_key] = data::NormMode::kQuantiles;
      r.spec.modes[r.spec.action_key] = data::NormMode::kQuantiles;
      read_openpi_stats(dir, r.spec, r.notes, r.has_stats);
      if (!r.has_stats) r.spec.action_dim = r.shape.max_action_dim;
      r.notes.push_back("openpi checkpoint: cameras " + r.spec.cameras[0] + ", " + r.spec.cameras[1] + ", " + r.spec.cameras[2] +
                        " (image " + std::to_string(r.shape.vision.image_size) + " px), prompts of at most " +
                        std::to_string(r.shape.max_prompt) + " tokens");
      r.config = openpi_as_pi05_config(c, cfg_file, r.shape);
    }
  }
  try {
    validate(r.shape);
  } catch (const Error& e) {
    bad(cfg_file, e.what());
  }
  r.params = from_lerobot_state_dict(r.shape, raw, wfile, &r.kept, &r.skipped);
  for (const auto& [name, t] : r.params)
    if (t.is_floating_point() && !at::isfinite(t).all().item<bool>()) bad(wfile, "tensor for '" + name + "' holds NaN or infinite values");
  return r;
}

}  // namespace ember::model
