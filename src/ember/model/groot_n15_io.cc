// GR00T-N1.5 directories in and out (groot_n15.h): the name map, the shape read from config.json
// and the tensors, and the writer.
#include <cmath>
#include <fstream>
#include <set>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/core/json_file.h"
#include "ember/core/output_dir.h"
#include "ember/model/groot_n15.h"
#include "ember/model/policy_type.h"
#include "ember/model/reference_io.h"
#include "ember/model/weights.h"

namespace ember::model {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using TensorMap = std::map<std::string, at::Tensor>;

namespace {

const std::string kEagle = "backbone.eagle_model.";
const std::string kVT = kEagle + "vision_model.vision_model.";
const std::string kLM = kEagle + "language_model.model.";
const std::string kHead = "action_head.";

using ref_io::bad;
using ref_io::count_layers;
using ref_io::get;
using ref_io::need;
using ref_io::required;
using ref_io::shape_text;

// How an ember tensor is made of N1.5's: a copy, SigLIP's q, k, v fused into qkv, or embodiment
// e's slice of a category-specific weight W [E, in, out] (transposed) or bias b [E, out].
enum class Kind { kCopy, kFuseQkv, kCategoryWeight, kCategoryBias };
struct Entry {
  std::string ember;
  std::vector<std::string> n15;
  Kind kind = Kind::kCopy;
  int64_t embodiment = 0;
};

std::vector<Entry> name_map(const GrootShape& s, bool projected) {
  std::vector<Entry> m;
  auto copy = [&](const std::string& e, const std::string& n) { m.push_back({e, {n}}); };
  auto linear = [&](const std::string& e, const std::string& n) {
    copy(e + ".weight", n + ".weight");
    copy(e + ".bias", n + ".bias");
  };
  // SigLIP (Eagle's vision_model wraps SiglipVisionModel, whose own vision_model holds it)
  copy("backbone.vision.patch_weight", kVT + "embeddings.patch_embedding.weight");
  copy("backbone.vision.patch_bias", kVT + "embeddings.patch_embedding.bias");
  copy("backbone.vision.position_embed", kVT + "embeddings.position_embedding.weight");
  for (int i = 0; i < s.base.vision.layers; ++i) {
    const std::string src = kVT + "encoder.layers." + std::to_string(i) + ".", dst = "backbone.vision.blocks." + std::to_string(i) + ".";
    for (const std::string part : {"weight", "bias"})
      m.push_back({dst + "qkv." + part, {src + "self_attn.q_proj." + part, src + "self_attn.k_proj." + part, src + "self_attn.v_proj." + part},
                   Kind::kFuseQkv});
    linear(dst + "proj", src + "self_attn.out_proj");
    linear(dst + "norm1", src + "layer_norm1");
    linear(dst + "norm2", src + "layer_norm2");
    linear(dst + "fc1", src + "mlp.fc1");
    linear(dst + "fc2", src + "mlp.fc2");
  }
  linear("backbone.vision.final_norm", kVT + "post_layernorm");
  // Eagle's connector mlp1: one Linear (N1.5's), or LayerNorm, Linear, GELU, Linear
  if (s.connector_layers == 1) {
    linear("backbone.proj1", kEagle + "mlp1.0");
  } else {
    linear("backbone.proj_norm", kEagle + "mlp1.0");
    linear("backbone.proj1", kEagle + "mlp1.1");
    linear("backbone.proj2", kEagle + "mlp1.3");
  }
  copy("backbone.embedding", kLM + "embed_tokens.weight");
  for (int i = 0; i < s.base.lm.layers; ++i) {
    const std::string src = kLM + "layers." + std::to_string(i) + ".", dst = "backbone.lm." + std::to_string(i) + ".";
    copy(dst + "norm1.weight", src + "input_layernorm.weight");
    copy(dst + "norm2.weight", src + "post_attention_layernorm.weight");
    for (const std::string x : {"q", "k", "v", "o"}) copy(dst + x + ".weight", src + "self_attn." + x + "_proj.weight");
    copy(dst + "q_norm.weight", src + "self_attn.q_norm.weight");
    copy(dst + "k_norm.weight", src + "self_attn.k_norm.weight");
    for (const std::string x : {"gate", "up", "down"}) copy(dst + x + ".weight", src + "mlp." + x + "_proj.weight");
  }
  copy("backbone.lm_norm.weight", kLM + "norm.weight");
  if (projected) linear("backbone_proj", "backbone.eagle_linear");
  // the action head: vlln, the vl self-attention, the DiT
  linear("vlln", kHead + "vlln");
  auto block = [&](const std::string& dst, const std::string& src, bool adaptive) {
    if (adaptive) {
      linear(dst + "ada", src + "norm1.linear");
    } else {
      linear(dst + "norm1", src + "norm1");
      linear(dst + "norm3", src + "norm3");
    }
    for (const std::string x : {"q", "k", "v"}) linear(dst + x, src + "attn1.to_" + x);
    linear(dst + "o", src + "attn1.to_out.0");
    linear(dst + "ff1", src + "ff.net.0.proj");
    linear(dst + "ff2", src + "ff.net.2");
  };
  for (int i = 0; i < s.vl_layers; ++i)
    block("vl." + std::to_string(i) + ".", kHead + "vl_self_attention.transformer_blocks." + std::to_string(i) + ".", false);
  linear("time1", kHead + "model.timestep_encoder.timestep_embedder.linear_1");
  linear("time2", kHead + "model.timestep_encoder.timestep_embedder.linear_2");
  for (int i = 0; i < s.dit_layers; ++i)
    block("dit." + std::to_string(i) + ".", kHead + "model.transformer_blocks." + std::to_string(i) + ".", true);
  linear("out1", kHead + "model.proj_out_1");
  linear("out2", kHead + "model.proj_out_2");
  copy("future_tokens", kHead + "future_tokens.weight");
  copy("positions", kHead + "position_embedding.weight");
  // the embodiment heads
  const std::pair<const char*, const char*> heads[] = {
      {"state1", "state_encoder.layer1"}, {"state2", "state_encoder.layer2"}, {"act1", "action_encoder.W1"}, {"act2", "action_encoder.W2"},
      {"act3", "action_encoder.W3"},      {"dec1", "action_decoder.layer1"}, {"dec2", "action_decoder.layer2"}};
  for (int64_t e = 0; e < int64_t(s.embodiments.size()); ++e)
    for (const auto& [dst, src] : heads) {
      const std::string d = "heads." + std::to_string(e) + "." + dst + ".";
      m.push_back({d + "weight", {kHead + src + ".W"}, Kind::kCategoryWeight, e});
      m.push_back({d + "bias", {kHead + src + ".b"}, Kind::kCategoryBias, e});
    }
  return m;
}

// The shape the directory describes: config.json's head, the tensors' backbone.
GrootShape read_shape(const ojson& config, const TensorMap& sd, const ojson& shrink, const std::string& cfile, const std::string& wfile,
                      std::vector<std::string>& notes) {
  if (!config.contains("action_head_cfg") || !config["action_head_cfg"].is_object())
    bad(cfile, "field 'action_head_cfg' is missing", ErrorKind::kCorruption);
  if (!config.contains("backbone_cfg") || !config["backbone_cfg"].is_object())
    bad(cfile, "field 'backbone_cfg' is missing", ErrorKind::kCorruption);
  const ojson& h = config["action_head_cfg"];
  const ojson& b = config["backbone_cfg"];
  const std::string hf = cfile + " action_head_cfg", bf = cfile + " backbone_cfg";
  const ojson dit = h.contains("diffusion_model_cfg") ? h["diffusion_model_cfg"] : ojson::object();
  const ojson vl = h.contains("vl_self_attention_cfg") ? h["vl_self_attention_cfg"] : ojson::object();
  const std::string df = hf + ".diffusion_model_cfg", vf = hf + ".vl_self_attention_cfg";
  // what ember's modules do not implement
  auto refuse_unless = [&](bool ok, const std::string& file, const std::string& key, const std::string& why) {
    if (!ok) bad(file, "field '" + key + "': " + why, ErrorKind::kUnsupported);
  };
  refuse_unless(get<bool>(h, "add_pos_embed", true, hf), hf, "add_pos_embed", "false is not supported (ember adds the action positions)");
  refuse_unless(get<bool>(h, "use_vlln", true, hf), hf, "use_vlln", "false is not supported (ember always has vlln and the vl blocks)");
  refuse_unless(get<double>(h, "noise_beta_alpha", 1.5, hf) == 1.5 && get<double>(h, "noise_beta_beta", 1.0, hf) == 1.0 &&
                    get<double>(h, "noise_s", 0.999, hf) == 0.999,
                hf, "noise_beta_alpha/noise_beta_beta/noise_s", "ember samples N1.5's Beta(1.5, 1) time with s = 0.999 only");
  for (const auto& [j, file] : {std::pair{&dit, df}, std::pair{&vl, vf}})
    refuse_unless(!j->contains("positional_embeddings") || (*j)["positional_embeddings"].is_null(), file, "positional_embeddings",
                  "only null (N1.5's) is supported");
  refuse_unless(get<bool>(dit, "interleave_self_attention", false, df), df, "interleave_self_attention",
                "only true (N1.5's: odd blocks self-attend) is supported");
  refuse_unless(get<std::string>(dit, "norm_type", "ada_norm", df) == "ada_norm", df, "norm_type", "only ada_norm is supported");
  refuse_unless(get<std::string>(dit, "activation_fn", "gelu-approximate", df) == "gelu-approximate" &&
                    get<std::string>(vl, "activation_fn", "gelu-approximate", vf) == "gelu-approximate",
                df, "activation_fn", "only gelu-approximate is supported");

  GrootShape s = groot_preset_shape("n15");
  s.base.preset = "gr00t_n1_5";
  s.base.horizon = required<int>(h, "action_horizon", hf);
  s.base.max_action_dim = required<int>(h, "action_dim", hf);
  s.base.flow_steps = get<int>(h, "num_inference_timesteps", 4, hf);
  s.hidden = get<int>(h, "hidden_size", 1024, hf);
  s.backbone_dim = get<int>(h, "backbone_embedding_dim", 1536, hf);
  s.future_tokens = get<int>(h, "num_target_vision_tokens", 32, hf);
  s.max_seq_len = get<int>(h, "max_seq_len", 1024, hf);
  s.timestep_buckets = get<int>(h, "num_timestep_buckets", 1000, hf);
  s.dit_layers = required<int>(dit, "num_layers", df);
  s.dit_heads = required<int>(dit, "num_attention_heads", df);
  s.dit_head_dim = required<int>(dit, "attention_head_dim", df);
  s.dit_output = required<int>(dit, "output_dim", df);
  s.dropout = get<double>(dit, "dropout", 0.2, df);
  s.vl_layers = required<int>(vl, "num_layers", vf);
  s.vl_heads = required<int>(vl, "num_attention_heads", vf);
  s.vl_head_dim = required<int>(vl, "attention_head_dim", vf);
  if (s.dit_output != s.hidden)
    bad(df, "field 'output_dim' " + std::to_string(s.dit_output) + " differs from hidden_size " + std::to_string(s.hidden) +
                " (the action decoder reads the DiT's output)", ErrorKind::kCorruption);
  const int inner = get<int>(h, "input_embedding_dim", s.inner(), hf);
  if (inner != s.inner())
    bad(hf, "field 'input_embedding_dim' " + std::to_string(inner) + " differs from the DiT's heads x head dim " + std::to_string(s.inner()),
        ErrorKind::kCorruption);
  const int cross = get<int>(dit, "cross_attention_dim", s.backbone_dim, df);
  if (cross != s.backbone_dim)
    bad(df, "field 'cross_attention_dim' " + std::to_string(cross) + " differs from backbone_embedding_dim " + std::to_string(s.backbone_dim),
        ErrorKind::kCorruption);
  const int embodiments = get<int>(h, "max_num_embodiments", 32, hf), state_dim = required<int>(h, "max_state_dim", hf);
  if (embodiments < 1 || embodiments > kMaxEmbodiments)
    bad(hf, "field 'max_num_embodiments' " + std::to_string(embodiments) + " is not in 1.." + std::to_string(kMaxEmbodiments),
        ErrorKind::kCorruption);
  s.embodiments.assign(size_t(embodiments), GrootEmbodiment{state_dim, s.base.max_action_dim});

  // the backbone, from its tensors
  auto& v = s.base.vision;
  const at::Tensor patch = need(sd, kVT + "embeddings.patch_embedding.weight", wfile, 4);
  v.width = int(patch.size(0)), v.patch = int(patch.size(2));
  const int64_t positions = need(sd, kVT + "embeddings.position_embedding.weight", wfile, 2).size(0);
  const int grid = int(std::lround(std::sqrt(double(positions))));
  if (int64_t(grid) * grid != positions) bad(wfile, "tensor '" + kVT + "embeddings.position_embedding.weight' has a non-square number of positions");
  v.image_size = grid * v.patch;
  v.layers = count_layers(sd, kVT + "encoder.layers.", ".mlp.fc1.weight");
  v.mlp = int(need(sd, kVT + "encoder.layers.0.mlp.fc1.weight", wfile, 2).size(0));
  v.heads = get<int>(shrink, "vision_heads", 16, "ember_shrink.json");
  // Eagle's connector: mlp1.0 a Linear (mlp_connector_layers 1, N1.5's) or a LayerNorm followed by
  // Linear, GELU, Linear (2); its input width says whether the pixel shuffle (ratio 0.5) merges
  // 2 x 2 patches (4 x the vision width) or none does (N1.5's)
  auto it0 = sd.find(kEagle + "mlp1.0.weight");
  if (it0 == sd.end()) bad(wfile, "tensor '" + kEagle + "mlp1.0.weight' is missing");
  const bool two = it0->second.dim() == 1;
  if (two && !sd.count(kEagle + "mlp1.3.weight"))
    bad(wfile, "tensor '" + kEagle + "mlp1.3.weight' is missing (a connector that starts with a LayerNorm: LayerNorm, Linear, GELU, Linear)");
  if (!two && sd.count(kEagle + "mlp1.1.weight"))
    bad(wfile, "unexpected tensor '" + kEagle + "mlp1.1.weight' after a Linear mlp1.0 (Eagle's connectors: Linear, or LayerNorm, Linear, "
               "GELU, Linear)", ErrorKind::kUnsupported);
  s.connector_layers = two ? 2 : 1;
  const int64_t merged = two ? it0->second.size(0) : need(sd, kEagle + "mlp1.0.weight", wfile, 2).size(1);
  if (merged != int64_t(v.width) && merged != 4 * int64_t(v.width))
    bad(wfile, "tensor '" + kEagle + "mlp1.0.weight' reads " + std::to_string(merged) + " values per token, expected the vision width " +
                   std::to_string(v.width) + " (no pixel shuffle) or 4 x it (the pixel shuffle of ratio 0.5)", ErrorKind::kUnsupported);
  v.merge = merged == int64_t(v.width) ? 1 : 2;
  auto& t = s.base.lm;
  const at::Tensor embed = need(sd, kLM + "embed_tokens.weight", wfile, 2);
  s.base.vocab = int(embed.size(0));
  t.width = int(embed.size(1));
  t.layers = count_layers(sd, kLM + "layers.", ".mlp.gate_proj.weight");
  const int select = get<int>(config["backbone_cfg"], "select_layer", t.layers, bf);
  if (select < 1 || select > t.layers)
    bad(bf, "field 'select_layer' " + std::to_string(select) + ": the file has " + std::to_string(t.layers) + " language model layers", ErrorKind::kCorruption);
  t.layers = select;  // the features are layer select_layer's; layers past it are never run
  t.head_dim = int(need(sd, kLM + "layers.0.self_attn.q_norm.weight", wfile, 1).size(0));
  t.heads = int(need(sd, kLM + "layers.0.self_attn.q_proj.weight", wfile, 2).size(0)) / t.head_dim;
  t.kv_heads = int(need(sd, kLM + "layers.0.self_attn.k_proj.weight", wfile, 2).size(0)) / t.head_dim;
  t.mlp = int(need(sd, kLM + "layers.0.mlp.gate_proj.weight", wfile, 2).size(0));
  s.rope_base = get<double>(shrink, "rope_base", 1e6, "ember_shrink.json");
  const auto project = b.contains("project_to_dim") && !b["project_to_dim"].is_null() ? get<int>(b, "project_to_dim", 0, bf) : 0;
  if ((project ? project : t.width) != s.backbone_dim)
    bad(bf, "field 'project_to_dim' gives backbone features of width " + std::to_string(project ? project : t.width) +
                ", the action head's backbone_embedding_dim is " + std::to_string(s.backbone_dim), ErrorKind::kCorruption);
  validate(s);
  if (s.base.vision.image_size != 224 || v.width != 1152 || t.width != 2048 || v.merge != 1 || s.connector_layers != 1)
    notes.push_back("sizes from the tensors differ from N1.5's (vision " + std::to_string(v.image_size) + " px x " + std::to_string(v.width) +
                    ", language model " + std::to_string(t.width) + ", pixel shuffle " + (v.merge == 2 ? "on" : "off") + ", connector " +
                    std::to_string(s.connector_layers) + " layer(s)): kept as found");
  return s;
}

// The state dict of a directory: model.safetensors, or the shards its index lists.
TensorMap read_state_dict(const fs::path& dir, std::string& file) {
  if (fs::exists(dir / "model.safetensors")) {
    file = (dir / "model.safetensors").string();
    return load_tensors(file);
  }
  const fs::path index = dir / "model.safetensors.index.json";
  if (!fs::exists(index)) bad(dir.string(), "no model.safetensors and no model.safetensors.index.json", ErrorKind::kNotFound);
  file = index.string();
  const auto j = read_json_file(file);
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) bad(file, "field 'weight_map' is missing", ErrorKind::kCorruption);
  std::set<std::string> shards;
  for (const auto& [key, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) bad(file, "weight_map['" + key + "'] is not a file name", ErrorKind::kCorruption);
    shards.insert(shard.get<std::string>());
  }
  TensorMap sd;
  for (const auto& shard : shards) {
    if (shard.find('/') != std::string::npos) bad(file, "weight_map names '" + shard + "', not a file beside it", ErrorKind::kCorruption);
    for (auto& [key, t] : load_tensors((dir / shard).string()))
      if (!sd.emplace(key, std::move(t)).second) bad((dir / shard).string(), "tensor '" + key + "' appears in two shards", ErrorKind::kCorruption);
  }
  return sd;
}

}  // namespace

bool is_groot_n15_dir(const fs::path& dir) {
  const fs::path config = dir / "config.json";
  if (!fs::is_regular_file(config)) return false;
  try {
    const auto j = read_json_file(config.string());
    return j.is_object() && j.value("model_type", std::string()) == "gr00t_n1_5";
  } catch (const Error&) {
    return false;  // not a JSON file: not this type's directory (the caller names what it expected)
  }
}

GrootN15Import import_groot_n15(const fs::path& dir) {
  const std::string cfile = (dir / "config.json").string();
  auto config = read_ordered_json(dir / "config.json");
  if (config.value("model_type", std::string()) != "gr00t_n1_5")
    bad(cfile, "field 'model_type' is not \"gr00t_n1_5\"", ErrorKind::kInvalidArgument);
  ojson shrink = ojson::object();
  if (fs::exists(dir / "ember_shrink.json")) shrink = read_ordered_json(dir / "ember_shrink.json");
  std::string wfile;
  TensorMap sd = read_state_dict(dir, wfile);
  return import_groot_n15(config, std::move(sd), shrink, cfile, wfile);
}

GrootN15Import import_groot_n15(const ojson& config, TensorMap sd, const ojson& shrink, const std::string& cfile,
                                const std::string& wfile) {
  GrootN15Import out;
  out.config = config;
  out.shape = read_shape(out.config, sd, shrink, cfile, wfile, out.notes);
  const GrootShape& s = out.shape;
  const bool projected = sd.count("backbone.eagle_linear.weight") > 0;
  std::set<std::string> used;
  for (const auto& e : name_map(s, projected)) {
    at::Tensor t;
    if (e.kind == Kind::kFuseQkv) {
      std::vector<at::Tensor> parts;
      for (const auto& k : e.n15) parts.push_back(need(sd, k, wfile, e.ember.ends_with("weight") ? 2 : 1));
      t = at::cat(parts, 0);
    } else if (e.kind == Kind::kCategoryWeight || e.kind == Kind::kCategoryBias) {
      const at::Tensor w = need(sd, e.n15[0], wfile, e.kind == Kind::kCategoryWeight ? 3 : 2);
      if (w.size(0) != int64_t(s.embodiments.size()))
        bad(wfile, "tensor '" + e.n15[0] + "' has shape " + shape_text(w.sizes()) + ": " + std::to_string(w.size(0)) +
                       " embodiments, config.json's max_num_embodiments is " + std::to_string(s.embodiments.size()));
      t = e.kind == Kind::kCategoryWeight ? w[e.embodiment].t().contiguous() : w[e.embodiment].contiguous();
    } else {
      auto it = sd.find(e.n15[0]);
      if (it == sd.end()) bad(wfile, "tensor '" + e.n15[0] + "' is missing");
      t = it->second;
    }
    for (const auto& k : e.n15) used.insert(k);
    out.params[e.ember] = t;
  }
  // what is left: the tensors ember never reads, by name; anything else is refused
  const int lm_file_layers = count_layers(sd, kLM + "layers.", ".mlp.gate_proj.weight");
  for (const auto& [key, t] : sd) {
    if (used.count(key)) continue;
    bool unread = key.starts_with(kVT + "head.") || key == kEagle + "language_model.lm_head.weight";
    for (int i = s.base.lm.layers; i < lm_file_layers && !unread; ++i) unread = key.starts_with(kLM + "layers." + std::to_string(i) + ".");
    if (!unread) bad(wfile, "unexpected tensor '" + key + "' (not part of GR00T-N1.5 as ember reads it)");
    out.kept[key] = t;
    out.skipped.push_back(key);
  }
  return out;
}

TensorMap to_groot_n15_state_dict(const GrootShape& s, const TensorMap& params, const TensorMap& kept) {
  TensorMap sd = kept;
  const bool projected = params.count("backbone_proj.weight") > 0;
  std::map<std::string, std::vector<at::Tensor>> category;  // N1.5 name -> per-embodiment slices
  for (const auto& e : name_map(s, projected)) {
    auto it = params.find(e.ember);
    if (it == params.end()) throw Error(ErrorKind::kInternal, "groot export: no parameter '" + e.ember + "'");
    const at::Tensor t = it->second.is_meta() ? it->second : it->second.detach().to(at::kCPU);  // meta: names and shapes only
    if (e.kind == Kind::kFuseQkv) {
      auto parts = t.chunk(3, 0);
      for (size_t i = 0; i < 3; ++i) sd[e.n15[i]] = parts[i].contiguous();
    } else if (e.kind == Kind::kCategoryWeight) {
      category[e.n15[0]].push_back(t.t());
    } else if (e.kind == Kind::kCategoryBias) {
      category[e.n15[0]].push_back(t);
    } else {
      sd[e.n15[0]] = t.contiguous();
    }
  }
  for (auto& [key, slices] : category) sd[key] = at::stack(slices, 0).contiguous();
  return sd;
}

ojson groot_n15_config(const GrootShape& s, bool project, const ojson& base) {
  ojson c = base.is_object() ? base : ojson::object();
  if (!c.contains("action_head_cfg") || !c["action_head_cfg"].is_object()) c["action_head_cfg"] = ojson::object();
  if (!c.contains("backbone_cfg") || !c["backbone_cfg"].is_object()) c["backbone_cfg"] = ojson::object();
  c["architectures"] = {"GR00T_N1_5"};
  c["model_type"] = "gr00t_n1_5";
  c["action_dim"] = s.base.max_action_dim;
  c["action_horizon"] = s.base.horizon;
  auto& h = c["action_head_cfg"];
  h["action_dim"] = s.base.max_action_dim;
  h["action_horizon"] = s.base.horizon;
  h["add_pos_embed"] = true;
  h["use_vlln"] = true;
  h["backbone_embedding_dim"] = s.backbone_dim;
  h["hidden_size"] = s.hidden;
  h["input_embedding_dim"] = s.inner();
  h["max_num_embodiments"] = int(s.embodiments.size());
  h["max_state_dim"] = s.embodiments.empty() ? 0 : s.embodiments[0].state_dim;
  h["max_seq_len"] = s.max_seq_len;
  h["num_inference_timesteps"] = s.base.flow_steps;
  h["num_target_vision_tokens"] = s.future_tokens;
  h["num_timestep_buckets"] = s.timestep_buckets;
  h["noise_beta_alpha"] = 1.5;
  h["noise_beta_beta"] = 1.0;
  h["noise_s"] = 0.999;
  if (!h.contains("diffusion_model_cfg") || !h["diffusion_model_cfg"].is_object()) h["diffusion_model_cfg"] = ojson::object();
  auto& d = h["diffusion_model_cfg"];
  d["num_layers"] = s.dit_layers;
  d["num_attention_heads"] = s.dit_heads;
  d["attention_head_dim"] = s.dit_head_dim;
  d["output_dim"] = s.dit_output;
  d["cross_attention_dim"] = s.backbone_dim;
  d["interleave_self_attention"] = true;
  d["norm_type"] = "ada_norm";
  d["positional_embeddings"] = nullptr;
  d["dropout"] = s.dropout;
  if (!h.contains("vl_self_attention_cfg") || !h["vl_self_attention_cfg"].is_object()) h["vl_self_attention_cfg"] = ojson::object();
  auto& v = h["vl_self_attention_cfg"];
  v["num_layers"] = s.vl_layers;
  v["num_attention_heads"] = s.vl_heads;
  v["attention_head_dim"] = s.vl_head_dim;
  v["positional_embeddings"] = nullptr;
  v["dropout"] = s.dropout;
  auto& b = c["backbone_cfg"];
  b["select_layer"] = s.base.lm.layers;
  if (!project) b["project_to_dim"] = nullptr;
  else b["project_to_dim"] = s.backbone_dim;
  return c;
}

void write_groot_n15(const fs::path& out, const GrootShape& s, const TensorMap& params, const TensorMap& kept, const ojson& base) {
  check_output_dir(out.string(), "--to groot_n15 OUT");
  const TensorMap sd = to_groot_n15_state_dict(s, params, kept);
  const ojson c = groot_n15_config(s, params.count("backbone_proj.weight") > 0, base);
  fs::create_directories(out);
  NamedTensors tensors(sd.begin(), sd.end());
  save_tensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}});
  const std::string text = c.dump(2) + "\n";
  AtomicFile f((out / "config.json").string());
  f.write(text.data(), text.size());
  f.commit();
  if (s.base.vision.heads != 16 || s.rope_base != 1e6) {
    const std::string shrink = ojson{{"vision_heads", s.base.vision.heads}, {"rope_base", s.rope_base}}.dump(2) + "\n";
    AtomicFile g((out / "ember_shrink.json").string());
    g.write(shrink.data(), shrink.size());
    g.commit();
  }
}

}  // namespace ember::model
