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


// The name map between ember's pi0.5 parameters and LeRobot's PI05Policy state dict
// (docs/lerobot_pi05.md, section 2), both directions.
namespace ember::model {

namespace pi05_io {

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


}  // namespace pi05_io

using namespace pi05_io;

namespace {

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

}  // namespace

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

}  // namespace ember::model
