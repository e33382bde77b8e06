#include "ember/model/lerobot_pi05.h"

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

namespace ember::model {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

const std::string kPG = "model.paligemma_with_expert.paligemma.";
const std::string kVT = kPG + "model.vision_tower.vision_model.";
const std::string kLM = kPG + "model.language_model.";
const std::string kEX = "model.paligemma_with_expert.gemma_expert.";
const std::string kEmbed = kLM + "embed_tokens.weight";
const std::string kLmHead = kPG + "lm_head.weight";

[[noreturn]] void bad(const std::string& where, const std::string& what, ErrorKind kind = ErrorKind::kInvalidArgument) {
  throw Error(kind, where + ": " + what);
}

std::string shape_text(at::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

// ---------------------------------------------------------------------------------------------
// the name map (docs/lerobot_pi05.md, section 2)

enum class Transform { kCopy, kNormPlusOne, kFuseQkv };

struct Entry {
  std::string ember;
  std::vector<std::string> lerobot;  // one key, or q, k, v for kFuseQkv
  Transform transform = Transform::kCopy;
};

std::vector<Entry> name_map(const PolicyShape& s) {
  std::vector<Entry> m;
  auto copy = [&](std::string e, std::string l) { m.push_back({std::move(e), {std::move(l)}, Transform::kCopy}); };
  auto norm = [&](std::string e, std::string l) { m.push_back({std::move(e), {std::move(l)}, Transform::kNormPlusOne}); };
  copy("vision.patch_weight", kVT + "embeddings.patch_embedding.weight");
  copy("vision.patch_bias", kVT + "embeddings.patch_embedding.bias");
  copy("vision.position_embed", kVT + "embeddings.position_embedding.weight");
  for (int i = 0; i < s.vision.layers; ++i) {
    const std::string src = kVT + "encoder.layers." + std::to_string(i) + ".", dst = "vision.blocks." + std::to_string(i) + ".";
    for (const std::string part : {"weight", "bias"}) {
      m.push_back({dst + "qkv." + part,
                   {src + "self_attn.q_proj." + part, src + "self_attn.k_proj." + part, src + "self_attn.v_proj." + part},
                   Transform::kFuseQkv});
      copy(dst + "proj." + part, src + "self_attn.out_proj." + part);
      copy(dst + "norm1." + part, src + "layer_norm1." + part);
      copy(dst + "norm2." + part, src + "layer_norm2." + part);
      copy(dst + "fc1." + part, src + "mlp.fc1." + part);
      copy(dst + "fc2." + part, src + "mlp.fc2." + part);
    }
  }
  copy("vision.final_norm.weight", kVT + "post_layernorm.weight");
  copy("vision.final_norm.bias", kVT + "post_layernorm.bias");
  copy("projector.weight", kPG + "model.multi_modal_projector.linear.weight");
  copy("projector.bias", kPG + "model.multi_modal_projector.linear.bias");
  copy("embedding", kEmbed);
  for (int i = 0; i < s.lm.layers; ++i) {
    const std::string src = kLM + "layers." + std::to_string(i) + ".", dst = "lm." + std::to_string(i) + ".";
    copy(dst + "k.weight", src + "self_attn.k_proj.weight");
    copy(dst + "v.weight", src + "self_attn.v_proj.weight");
    norm(dst + "norm1.weight", src + "input_layernorm.weight");
    if (i + 1 < s.lm.layers) {
      copy(dst + "q.weight", src + "self_attn.q_proj.weight");
      copy(dst + "o.weight", src + "self_attn.o_proj.weight");
      norm(dst + "norm2.weight", src + "post_attention_layernorm.weight");
      for (const std::string x : {"gate", "up", "down"}) copy(dst + "mlp." + x + ".weight", src + "mlp." + x + "_proj.weight");
    }
    const std::string esrc = kEX + "model.layers." + std::to_string(i) + ".", edst = "expert." + std::to_string(i) + ".";
    for (const std::string x : {"q", "k", "v", "o"}) copy(edst + x + ".weight", esrc + "self_attn." + x + "_proj.weight");
    for (const std::string part : {"weight", "bias"}) {
      copy(edst + "ada1.modulation." + part, esrc + "input_layernorm.dense." + part);
      copy(edst + "ada2.modulation." + part, esrc + "post_attention_layernorm.dense." + part);
    }
    for (const std::string x : {"gate", "up", "down"}) copy(edst + "mlp." + x + ".weight", esrc + "mlp." + x + "_proj.weight");
  }
  for (const std::string part : {"weight", "bias"}) {
    copy("expert_final_norm.modulation." + part, kEX + "model.norm.dense." + part);
    copy("action_in." + part, "model.action_in_proj." + part);
    copy("action_out." + part, "model.action_out_proj." + part);
    copy("time_in." + part, "model.time_mlp_in." + part);
    copy("time_out." + part, "model.time_mlp_out." + part);
  }
  return m;
}

// The keys LeRobot keeps and pi0.5 never reads.
std::vector<std::string> unused_keys(const PolicyShape& s) {
  const std::string last = kLM + "layers." + std::to_string(s.lm.layers - 1) + ".";
  return {kLmHead,
          kEX + "lm_head.weight",
          kLM + "norm.weight",
          last + "self_attn.q_proj.weight",
          last + "self_attn.o_proj.weight",
          last + "post_attention_layernorm.weight",
          last + "mlp.gate_proj.weight",
          last + "mlp.up_proj.weight",
          last + "mlp.down_proj.weight"};
}

// Every key of LeRobot 0.6.1's PI05Policy state dict with its shape.
std::map<std::string, std::vector<int64_t>> lerobot_shapes(const PolicyShape& s) {
  std::map<std::string, std::vector<int64_t>> k;
  const int64_t wv = s.vision.width, p = s.vision.patch, mv = s.vision.mlp, dl = s.lm.width, de = s.expert.width;
  const int64_t q = int64_t(s.lm.heads) * s.lm.head_dim, kv = int64_t(s.lm.kv_heads) * s.lm.head_dim;
  const int64_t qe = int64_t(s.expert.heads) * s.expert.head_dim, kve = int64_t(s.expert.kv_heads) * s.expert.head_dim;
  k[kVT + "embeddings.patch_embedding.weight"] = {wv, 3, p, p};
  k[kVT + "embeddings.patch_embedding.bias"] = {wv};
  k[kVT + "embeddings.position_embedding.weight"] = {s.vision.tokens(), wv};
  for (int i = 0; i < s.vision.layers; ++i) {
    const std::string b = kVT + "encoder.layers." + std::to_string(i) + ".";
    for (const char* x : {"q", "k", "v"}) {
      k[b + "self_attn." + x + "_proj.weight"] = {wv, wv};
      k[b + "self_attn." + x + "_proj.bias"] = {wv};
    }
    k[b + "self_attn.out_proj.weight"] = {wv, wv};
    k[b + "self_attn.out_proj.bias"] = {wv};
    for (const char* n : {"layer_norm1", "layer_norm2"}) k[b + n + ".weight"] = k[b + n + ".bias"] = {wv};
    k[b + "mlp.fc1.weight"] = {mv, wv};
    k[b + "mlp.fc1.bias"] = {mv};
    k[b + "mlp.fc2.weight"] = {wv, mv};
    k[b + "mlp.fc2.bias"] = {wv};
  }
  k[kVT + "post_layernorm.weight"] = k[kVT + "post_layernorm.bias"] = {wv};
  k[kPG + "model.multi_modal_projector.linear.weight"] = {dl, wv};
  k[kPG + "model.multi_modal_projector.linear.bias"] = {dl};
  k[kEmbed] = k[kLmHead] = {s.vocab, dl};
  k[kLM + "norm.weight"] = {dl};
  for (int i = 0; i < s.lm.layers; ++i) {
    const std::string b = kLM + "layers." + std::to_string(i) + ".";
    k[b + "self_attn.q_proj.weight"] = {q, dl};
    k[b + "self_attn.k_proj.weight"] = k[b + "self_attn.v_proj.weight"] = {kv, dl};
    k[b + "self_attn.o_proj.weight"] = {dl, q};
    k[b + "input_layernorm.weight"] = k[b + "post_attention_layernorm.weight"] = {dl};
    k[b + "mlp.gate_proj.weight"] = k[b + "mlp.up_proj.weight"] = {s.lm.mlp, dl};
    k[b + "mlp.down_proj.weight"] = {dl, s.lm.mlp};
    const std::string e = kEX + "model.layers." + std::to_string(i) + ".";
    k[e + "self_attn.q_proj.weight"] = {qe, de};
    k[e + "self_attn.k_proj.weight"] = k[e + "self_attn.v_proj.weight"] = {kve, de};
    k[e + "self_attn.o_proj.weight"] = {de, qe};
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
      k[e + n + ".dense.weight"] = {3 * de, de};
      k[e + n + ".dense.bias"] = {3 * de};
    }
    k[e + "mlp.gate_proj.weight"] = k[e + "mlp.up_proj.weight"] = {s.expert.mlp, de};
    k[e + "mlp.down_proj.weight"] = {de, s.expert.mlp};
  }
  k[kEX + "model.norm.dense.weight"] = {3 * de, de};
  k[kEX + "model.norm.dense.bias"] = {3 * de};
  k[kEX + "lm_head.weight"] = {s.vocab, de};
  k["model.action_in_proj.weight"] = {de, s.max_action_dim};
  k["model.action_in_proj.bias"] = {de};
  k["model.action_out_proj.weight"] = {s.max_action_dim, de};
  k["model.action_out_proj.bias"] = {s.max_action_dim};
  for (const char* n : {"model.time_mlp_in", "model.time_mlp_out"}) {
    k[std::string(n) + ".weight"] = {de, de};
    k[std::string(n) + ".bias"] = {de};
  }
  return k;
}

// Keys as PI05Policy.from_pretrained sees them: the "model." prefix added where missing, and
// the older names its _fix_pytorch_state_dict_keys renames.
TensorMap canonical_keys(const TensorMap& in, const std::string& file, std::vector<std::string>* dropped) {
  TensorMap out;
  for (const auto& [key, t] : in) {
    std::string k = key.starts_with("model.") ? key : "model." + key;
    for (const char* old : {"model.action_time_mlp_in.", "model.action_time_mlp_out."}) {
      if (k.starts_with(old)) k = "model." + k.substr(std::string("model.action_").size());
    }
    if (k.starts_with("model.state_proj.")) {  // pi0's state projection: pi0.5 has none
      dropped->push_back(key);
      continue;
    }
    if (k.starts_with(kEX) && (k.ends_with("input_layernorm.weight") || k.ends_with("post_attention_layernorm.weight") ||
                               k == kEX + "model.norm.weight"))
      bad(file, "tensor '" + key + "': a plain RMSNorm in the action expert, i.e. a pi0 checkpoint; ember imports pi0.5 "
                "(adaptive norms, '...layernorm.dense.*')", ErrorKind::kUnsupported);
    if (!out.emplace(k, t).second) bad(file, "tensor '" + key + "' appears twice (with and without the 'model.' prefix)");
  }
  return out;
}

int count_layers(const TensorMap& sd, const std::string& prefix, const std::string& suffix) {
  int n = 0;
  while (sd.count(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

// (key by value: a reference to sd's tensor, never to an argument)
const at::Tensor& need(const TensorMap& sd, std::string_view key_view, const std::string& file, int64_t dims) {
  const std::string key(key_view);
  auto it = sd.find(key);
  if (it == sd.end()) bad(file, "tensor '" + key + "' is missing");
  if (it->second.dim() != dims) bad(file, "tensor '" + key + "' has shape " + shape_text(it->second.sizes()) + ", expected " +
                                              std::to_string(dims) + " dimensions");
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// config.json

}  // namespace

ojson read_ordered_json(const fs::path& path) {
  if (!fs::exists(path)) bad(path.string(), "no such file", ErrorKind::kNotFound);
  auto bytes = read_file(path.string());
  return parse_ordered_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
}

namespace {

ojson read_ordered(const fs::path& path) { return read_ordered_json(path); }

template <class T>
T get(const ojson& j, const char* key, T fallback, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(file, std::string("field '") + key + "' has the wrong type (" + j[key].dump() + ")");
  }
}

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
std::map<std::string, data::FeatureStats> read_stats_file(const fs::path& path) {
  std::map<std::string, data::FeatureStats> out;
  for (const auto& [name, t] : load_tensors(path.string())) {
    auto dot = name.rfind('.');
    if (dot == std::string::npos || dot == 0) bad(path.string(), "tensor '" + name + "' is not named <feature>.<statistic>", ErrorKind::kCorruption);
    auto v = t.to(at::kDouble).contiguous().reshape({-1});
    out[name.substr(0, dot)][name.substr(dot + 1)] = std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
  }
  return out;
}

void check_stats(FeatureSpec& spec, const std::string& file) {
  for (const auto& [key, dim] : {std::pair{spec.state_key, spec.state_dim}, std::pair{spec.action_key, spec.action_dim}}) {
    auto it = spec.stats.find(key);
    if (it == spec.stats.end()) bad(file, "no statistics for '" + key + "'");
    // the statistics its mode needs, finite (a NaN q01 made NaN actions)
    if (auto m = spec.modes.find(key); m != spec.modes.end()) {
      try {
        data::FeatureNormalizer(m->second, it->second, key, spec.norm_options);
      } catch (const Error& e) {
        bad(file, e.what());
      }
    }
    for (const auto& [stat, values] : it->second)
      if (stat != "count" && int64_t(values.size()) != dim)  // count: one value, the frames it was computed over
        bad(file, "statistic '" + key + "." + stat + "' has " + std::to_string(values.size()) + " values, the feature " + std::to_string(dim));
  }
}

// Statistics and eps from policy_preprocessor.json's normalizer_processor step.
bool read_lerobot_stats(const fs::path& dir, FeatureSpec& spec) {
  const fs::path pre = dir / "policy_preprocessor.json";
  if (!fs::exists(pre)) return false;
  auto j = read_ordered(pre);
  const std::string file = pre.string();
  if (!j.contains("steps") || !j["steps"].is_array()) bad(file, "field 'steps' is missing or not a list", ErrorKind::kCorruption);
  for (size_t i = 0; i < j["steps"].size(); ++i) {
    const auto& step = j["steps"][i];
    if (!step.is_object()) bad(file, "steps[" + std::to_string(i) + "] is " + step.dump() + ", not a processor step (an object)", ErrorKind::kCorruption);
    if (get<std::string>(step, "registry_name", "", file) != "normalizer_processor") continue;
    const auto cfg = step.contains("config") && step["config"].is_object() ? step["config"] : ojson::object();
    spec.norm_options.eps = get<double>(cfg, "eps", 1e-8, file);
    spec.norm_options.rule = data::EpsilonRule::kZeroRangeOnly;  // LeRobot 0.4 and later
    if (cfg.contains("norm_map")) {
      const auto& nm = cfg["norm_map"];
      for (const auto& [type, key] : {std::pair{"STATE", spec.state_key}, std::pair{"ACTION", spec.action_key}})
        if (nm.contains(type)) spec.modes[key] = data::parse_norm_mode(get<std::string>(nm, type, "", file), file + ": norm_map." + type);
    }
    const std::string state_file = get<std::string>(step, "state_file", "", file);
    if (state_file.empty()) bad(file, "the normalizer_processor step has no 'state_file'", ErrorKind::kCorruption);
    if (state_file.find('/') != std::string::npos || state_file.starts_with("."))
      bad(file, "state_file '" + state_file + "' is not a file name in the directory");
    spec.stats = read_stats_file(dir / state_file);
    for (auto it = spec.stats.begin(); it != spec.stats.end();)  // only state and action are normalised
      it = (it->first == spec.state_key || it->first == spec.action_key) ? std::next(it) : spec.stats.erase(it);
    check_stats(spec, (dir / state_file).string());
    return true;
  }
  bad(file, "no normalizer_processor step", ErrorKind::kCorruption);
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

// ---------------------------------------------------------------------------------------------
// export helpers

ojson default_pi05_config() {
  // PI05Config's fields as LeRobot 0.6.1 saves them (configuration_pi05.py), the ones ember
  // determines filled in by write_lerobot_pi05
  return ojson::parse(R"({
    "type": "pi05", "n_obs_steps": 1, "input_features": {}, "output_features": {}, "device": "cpu",
    "use_amp": false, "use_peft": false, "push_to_hub": false, "repo_id": null, "private": null, "tags": null,
    "license": null, "pretrained_path": null, "pretrained_revision": null,
    "paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m", "dtype": "float32",
    "chunk_size": 50, "n_action_steps": 50, "max_state_dim": 32, "max_action_dim": 32, "num_inference_steps": 10,
    "time_sampling_beta_alpha": 1.5, "time_sampling_beta_beta": 1.0, "time_sampling_scale": 0.999,
    "time_sampling_offset": 0.001, "min_period": 0.004, "max_period": 4.0, "use_relative_actions": false,
    "relative_exclude_joints": ["gripper"], "action_feature_names": null, "rtc_config": null,
    "image_resolution": [224, 224], "empty_cameras": 0, "tokenizer_max_length": 200,
    "normalization_mapping": {"VISUAL": "IDENTITY", "STATE": "QUANTILES", "ACTION": "QUANTILES"},
    "gradient_checkpointing": false, "compile_model": false, "compile_mode": "max-autotune",
    "freeze_vision_encoder": false, "train_expert_only": false, "optimizer_lr": 2.5e-05,
    "optimizer_betas": [0.9, 0.95], "optimizer_eps": 1e-08, "optimizer_weight_decay": 0.01,
    "optimizer_grad_clip_norm": 1.0, "scheduler_warmup_steps": 1000, "scheduler_decay_steps": 30000,
    "scheduler_decay_lr": 2.5e-06})");
}

bool is_pi05_size(const PolicyShape& s) {
  const PolicyShape real = preset_shape("pi05");
  auto same = [](const TowerShape& a, const TowerShape& b) {
    return a.width == b.width && a.layers == b.layers && a.heads == b.heads && a.kv_heads == b.kv_heads &&
           a.head_dim == b.head_dim && a.mlp == b.mlp;
  };
  return same(s.lm, real.lm) && same(s.expert, real.expert) && s.vision.width == real.vision.width &&
         s.vision.layers == real.vision.layers && s.vision.heads == real.vision.heads && s.vision.mlp == real.vision.mlp &&
         s.vision.patch == real.vision.patch && s.vocab == real.vocab;
}

ojson shrink_json(const PolicyShape& s) {
  auto tower = [](const TowerShape& t) {
    return ojson{{"depth", t.layers}, {"head_dim", t.head_dim}, {"mlp_dim", t.mlp}, {"num_heads", t.heads},
                 {"num_kv_heads", t.kv_heads}, {"width", t.width}};
  };
  return ojson{{"action_expert", tower(s.expert)},
               {"paligemma", tower(s.lm)},
               {"vision", {{"hidden_size", s.vision.width}, {"intermediate_size", s.vision.mlp}, {"num_attention_heads", s.vision.heads},
                           {"num_hidden_layers", s.vision.layers}, {"patch_size", s.vision.patch}}},
               {"vocab_size", s.vocab}};
}

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile f(path.string());
  f.write(text.data(), text.size());
  f.commit();
}

NamedTensors stats_tensors(const FeatureSpec& spec) {
  NamedTensors out;
  for (const auto& [key, stats] : spec.stats)
    for (const auto& [stat, values] : stats) {
      auto t = at::tensor(values, at::kDouble).to(at::kFloat);
      out.emplace_back(key + "." + stat, t);
    }
  return out;
}

ojson processor_features(const FeatureSpec& spec, int image, bool with_inputs) {
  ojson f = ojson::object();
  if (with_inputs) {
    for (const auto& cam : spec.cameras) f[cam] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
    f[spec.state_key] = {{"type", "STATE"}, {"shape", ojson::array({spec.state_dim})}};
  }
  f[spec.action_key] = {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}};
  return f;
}

ojson norm_map(const FeatureSpec& spec) {
  return {{"VISUAL", "IDENTITY"},
          {"STATE", data::norm_mode_name(spec.modes.at(spec.state_key))},
          {"ACTION", data::norm_mode_name(spec.modes.at(spec.action_key))}};
}

}  // namespace

// ---------------------------------------------------------------------------------------------

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
    bad((dir / "config.json").string(), "type is '" + type + "'; ember imports LeRobot's pi05 policies only", ErrorKind::kUnsupported);
  }
  if (c.contains("paligemma_variant")) return ForeignPolicy::kOpenpi;
  return ForeignPolicy::kNone;
}

TensorMap from_lerobot_state_dict(const PolicyShape& shape, const TensorMap& lerobot, const std::string& file, TensorMap* kept,
                                  std::vector<std::string>* skipped) {
  std::vector<std::string> dropped;
  TensorMap sd = canonical_keys(lerobot, file, &dropped);
  const auto shapes = lerobot_shapes(shape);
  // the embedding: embed_tokens, else openpi's only copy, the PaliGemma lm_head
  if (!sd.count(kEmbed)) {
    if (!sd.count(kLmHead)) bad(file, "tensor '" + kEmbed + "' is missing (and no '" + kLmHead + "' to take it from)");
    sd[kEmbed] = sd.at(kLmHead);
  }
  const auto unused = unused_keys(shape);
  const std::set<std::string> optional{kLmHead, kEX + "lm_head.weight"};  // openpi / older files may lack them
  for (const auto& [key, t] : sd) {
    auto it = shapes.find(key);
    if (it == shapes.end()) bad(file, "unexpected tensor '" + key + "' (not a key of LeRobot's pi05 with this shape)");
    if (t.sizes() != at::IntArrayRef(it->second))
      bad(file, "tensor '" + key + "' has shape " + shape_text(t.sizes()) + ", expected " + shape_text(it->second));
  }
  for (const auto& [key, dims] : shapes)
    if (!sd.count(key) && !optional.count(key)) bad(file, "tensor '" + key + "' is missing");
  TensorMap out;
  for (const auto& e : name_map(shape)) {
    switch (e.transform) {
      case Transform::kCopy: out[e.ember] = sd.at(e.lerobot[0]); break;
      case Transform::kNormPlusOne: {
        const auto& w = sd.at(e.lerobot[0]);
        out[e.ember] = w.to(at::kFloat) + 1.0;  // Gemma scales by 1 + w, ember's RmsNorm by its weight
        if (kept) (*kept)[e.lerobot[0]] = w;
        break;
      }
      case Transform::kFuseQkv:
        out[e.ember] = at::cat({sd.at(e.lerobot[0]), sd.at(e.lerobot[1]), sd.at(e.lerobot[2])}, 0);
        break;
    }
  }
  for (const auto& key : unused) {
    if (!sd.count(key)) continue;
    if (kept) (*kept)[key] = sd.at(key);
    if (skipped) skipped->push_back(key);
  }
  if (skipped) {
    skipped->insert(skipped->end(), dropped.begin(), dropped.end());
    std::sort(skipped->begin(), skipped->end());
  }
  return out;
}

TensorMap to_lerobot_state_dict(const PolicyShape& shape, const TensorMap& ember, const TensorMap& kept) {
  if (shape.lm.heads != 8 || shape.expert.heads != 8)
    bad("export to LeRobot", "the policy has " + std::to_string(shape.lm.heads) + " / " + std::to_string(shape.expert.heads) +
        " query heads; LeRobot's pi05 hard-codes 8 (modeling_pi05.py compute_layer_complete)", ErrorKind::kUnsupported);
  const auto shapes = lerobot_shapes(shape);
  TensorMap out;
  auto f32 = [](const at::Tensor& t) { return t.detach().to(at::kCPU).to(at::kFloat).contiguous(); };
  auto param = [&](const std::string& name) -> const at::Tensor& {
    auto it = ember.find(name);
    if (it == ember.end()) bad("export to LeRobot", "the policy has no parameter '" + name + "'", ErrorKind::kInternal);
    return it->second;
  };
  for (const auto& e : name_map(shape)) {
    const auto& p = param(e.ember);
    switch (e.transform) {
      case Transform::kCopy: out[e.lerobot[0]] = f32(p); break;
      case Transform::kNormPlusOne: {
        auto s = f32(p);
        auto it = kept.find(e.lerobot[0]);
        // the original weight while the policy's scale is still exactly 1 + it (not trained since)
        if (it != kept.end() && it->second.sizes() == s.sizes() && at::equal(f32(it->second) + 1.0, s))
          out[e.lerobot[0]] = f32(it->second);
        else
          out[e.lerobot[0]] = s - 1.0;
        break;
      }
      case Transform::kFuseQkv: {
        auto parts = f32(p).chunk(3, 0);
        for (int i = 0; i < 3; ++i) out[e.lerobot[size_t(i)]] = parts[size_t(i)].contiguous();
        break;
      }
    }
  }
  for (const auto& key : unused_keys(shape)) {
    const auto& dims = shapes.at(key);
    auto it = kept.find(key);
    if (it != kept.end() && it->second.sizes() == at::IntArrayRef(dims)) out[key] = f32(it->second);
    else if (key == kLmHead) out[key] = f32(param("embedding")).clone();
    else out[key] = at::zeros(dims, at::kFloat);
  }
  for (const auto& [key, dims] : shapes)
    if (!out.count(key)) bad("export to LeRobot", "no tensor for '" + key + "'", ErrorKind::kInternal);
  return out;
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

void write_lerobot_pi05(const fs::path& out, const PolicyShape& shape, const FeatureSpec& spec, const TensorMap& ember,
                        const TensorMap& kept, const nlohmann::ordered_json& base_in) {
  check_output_dir(out.string(), "--to lerobot OUT");
  const TensorMap sd = to_lerobot_state_dict(shape, ember, kept);
  if (!spec.modes.count(spec.state_key) || !spec.modes.count(spec.action_key))
    bad(out.string(), "the policy has no normalisation modes for its state and action", ErrorKind::kInvalidArgument);
  // LeRobot normalises with what the processor files hold: a policy without statistics (a
  // directory imported without its processor files) cannot be written as one it could use
  for (const auto& key : {spec.state_key, spec.action_key}) {
    const data::NormMode mode = spec.modes.at(key);
    if (mode == data::NormMode::kIdentity) continue;
    auto it = spec.stats.find(key);
    if (it == spec.stats.end())
      bad(out.string(), "the policy has no normalisation statistics for '" + key + "' (" + data::norm_mode_name(mode) +
                            "): LeRobot could not use the directory (import one with its policy_preprocessor.json)", ErrorKind::kInvalidArgument);
    try {
      data::FeatureNormalizer(mode, it->second, key, spec.norm_options);
    } catch (const Error& e) {
      bad(out.string(), e.what(), ErrorKind::kInvalidArgument);
    }
  }
  // config.json: the base with what ember's shape and features fix replaced
  ojson c = base_in.is_object() ? base_in : default_pi05_config();
  const int image = shape.vision.image_size;
  ojson inputs = ojson::object();
  int empty = 0;
  for (const auto& cam : spec.cameras) {
    if (cam.starts_with("observation.images.empty_camera_")) continue;  // listed after the state
    inputs[cam] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
  }
  inputs[spec.state_key] = {{"type", "STATE"}, {"shape", ojson::array({spec.state_dim})}};
  // ember's unnamed camera slots become LeRobot's empty cameras
  for (int slot = int(inputs.size()) - 1; slot < shape.max_cameras; ++slot, ++empty)
    inputs["observation.images.empty_camera_" + std::to_string(empty)] = {{"type", "VISUAL"}, {"shape", ojson::array({3, image, image})}};
  c["type"] = "pi05";
  c["input_features"] = inputs;
  c["output_features"] = {{spec.action_key, {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}}}};
  c["dtype"] = "float32";
  c["chunk_size"] = shape.horizon;
  const std::string base_file = "the configuration exported";
  c["n_action_steps"] = std::clamp(get<int>(c, "n_action_steps", shape.horizon, base_file), 1, shape.horizon);
  c["max_action_dim"] = shape.max_action_dim;
  c["max_state_dim"] = std::clamp<int64_t>(get<int64_t>(c, "max_state_dim", 32, base_file), spec.state_dim, std::max<int64_t>(4096, spec.state_dim));
  c["num_inference_steps"] = shape.flow_steps;
  c["image_resolution"] = ojson::array({image, image});
  c["empty_cameras"] = empty;
  c["tokenizer_max_length"] = shape.max_prompt;
  c["normalization_mapping"] = norm_map(spec);
  if (!is_pi05_size(shape)) {  // ember_shrink.json holds the sizes; the variants stay LeRobot's names
    c["paligemma_variant"] = "gemma_2b";
    c["action_expert_variant"] = "gemma_300m";
  }
  // the processors (lerobot/policies/pi05/processor_pi05.py's pipeline, as lerobot-train saves it)
  ojson all_features = ojson::object();
  for (const auto& [k, v] : inputs.items()) all_features[k] = v;
  all_features[spec.action_key] = {{"type", "ACTION"}, {"shape", ojson::array({spec.action_dim})}};
  const double eps = spec.norm_options.eps;
  ojson pre = {{"name", "policy_preprocessor"},
               {"steps",
                ojson::array({{{"registry_name", "rename_observations_processor"}, {"config", {{"rename_map", ojson::object()}}}},
                 {{"registry_name", "to_batch_processor"}, {"config", ojson::object()}},
                 {{"registry_name", "relative_actions_processor"},
                  {"config", {{"enabled", false}, {"exclude_joints", ojson::array({"gripper"})}, {"action_names", nullptr}}}},
                 {{"registry_name", "normalizer_processor"},
                  {"config", {{"eps", eps}, {"features", all_features}, {"norm_map", norm_map(spec)}}},
                  {"state_file", "policy_preprocessor_step_3_normalizer_processor.safetensors"}},
                 {{"registry_name", "pi05_prepare_state_tokenizer_processor_step"}, {"config", ojson::object()}},
                 {{"registry_name", "tokenizer_processor"},
                  {"config", {{"max_length", shape.max_prompt}, {"task_key", "task"}, {"padding_side", "right"}, {"padding", "max_length"},
                              {"truncation", true}, {"tokenizer_name", "google/paligemma-3b-pt-224"}}}},
                 {{"registry_name", "device_processor"}, {"config", {{"device", "cpu"}, {"float_dtype", nullptr}}}}})}};
  ojson post = {{"name", "policy_postprocessor"},
                {"steps",
                 ojson::array({{{"registry_name", "unnormalizer_processor"},
                   {"config", {{"eps", eps}, {"features", processor_features(spec, image, false)}, {"norm_map", norm_map(spec)}}},
                   {"state_file", "policy_postprocessor_step_0_unnormalizer_processor.safetensors"}},
                  {{"registry_name", "absolute_actions_processor"}, {"config", {{"enabled", false}}}},
                  {{"registry_name", "device_processor"}, {"config", {{"device", "cpu"}, {"float_dtype", nullptr}}}}})}};
  // into a temporary directory beside `out`, renamed at the end
  fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  fs::path tmp = parent / ("." + out.filename().string() + ".tmp-" + std::to_string(std::random_device{}()));
  fs::create_directories(tmp);
  try {
    write_text(tmp / "config.json", c.dump(4) + "\n");
    NamedTensors tensors(sd.begin(), sd.end());
    save_tensors((tmp / "model.safetensors").string(), tensors, {{"format", "pt"}});
    write_text(tmp / "policy_preprocessor.json", pre.dump(2) + "\n");
    write_text(tmp / "policy_postprocessor.json", post.dump(2) + "\n");
    const auto stats = stats_tensors(spec);
    save_tensors((tmp / "policy_preprocessor_step_3_normalizer_processor.safetensors").string(), stats);
    save_tensors((tmp / "policy_postprocessor_step_0_unnormalizer_processor.safetensors").string(), stats);
    if (!is_pi05_size(shape)) write_text(tmp / "ember_shrink.json", shrink_json(shape).dump(2) + "\n");
    std::error_code ec;
    if (fs::exists(out)) fs::remove(out, ec);  // an empty directory (check_output_dir)
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace ember::model
