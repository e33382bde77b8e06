#include "ember/model/policy_shape.h"

#include "ember/core/error.h"

namespace ember::model {

PolicyShape preset_shape(std::string_view preset) {
  PolicyShape s;
  s.preset = std::string(preset);
  if (preset == "pi05") return s;  // the defaults are pi0.5's shapes
  if (preset == "small") {
    s.vision = {224, 14, 384, 6, 6, 1536};
    s.lm = {768, 10, 8, 1, 96, 3072};
    s.expert = {512, 10, 8, 1, 96, 2048};
    return s;
  }
  if (preset == "tiny") {
    s.vision = {32, 8, 64, 2, 2, 128};
    s.lm = {64, 2, 2, 1, 32, 128};
    s.expert = {48, 2, 2, 1, 32, 96};
    s.vocab = 512;
    s.max_prompt = 64;
    return s;
  }
  throw Error(ErrorKind::kInvalidArgument,
              "unknown policy preset '" + std::string(preset) + "' (expected tiny, small or pi05)");
}

namespace {
void require(bool ok, const std::string& field, const std::string& what) {
  if (!ok) throw Error(ErrorKind::kInvalidArgument, "policy shape: " + field + " " + what);
}
constexpr int kMaxWidth = 1 << 16;

void validate_tower(const TowerShape& t, const std::string& name) {
  require(t.width > 0 && t.layers > 0 && t.heads > 0 && t.kv_heads > 0 && t.head_dim > 0 && t.mlp > 0,
          name, "has a non-positive size");
  require(t.width <= kMaxWidth && t.mlp <= kMaxWidth && t.head_dim <= kMaxWidth && t.heads <= 1024 && t.layers <= 1024, name,
          "has a size past ember's bounds (widths up to 65536, heads and layers up to 1024)");
  require(t.heads % t.kv_heads == 0, name + ".heads", "must be a multiple of kv_heads");
  require(t.head_dim % 2 == 0, name + ".head_dim", "must be even (rotary embedding)");
}
}  // namespace

void set_image_size(VisionShape& v, int64_t size, const std::string& flag) {
  const int64_t unit = int64_t(v.patch) * std::max(1, v.merge);
  if (size < 1 || size > 4096 || size % unit)
    throw Error(ErrorKind::kInvalidArgument, flag + "=" + std::to_string(size) + ": expected 1 to 4096 pixels, a multiple of the preset's " +
                                                 (v.merge > 1 ? "patch size x merge " : "patch size ") + std::to_string(unit));
  v.image_size = int(size);
}

void validate(const PolicyShape& s) {
  const auto& v = s.vision;
  require(v.image_size > 0 && v.patch > 0 && v.width > 0 && v.layers > 0 && v.heads > 0 && v.mlp > 0,
          "vision", "has a non-positive size");
  require(v.image_size <= 4096 && v.width <= kMaxWidth && v.mlp <= kMaxWidth && v.heads <= 1024 && v.layers <= 1024, "vision",
          "has a size past ember's bounds (image_size up to 4096, widths up to 65536, heads and layers up to 1024)");
  require(v.image_size % v.patch == 0, "vision.image_size", "must be a multiple of vision.patch");
  require(v.width % v.heads == 0, "vision.width", "must be a multiple of vision.heads");
  require(v.merge >= 1 && (v.image_size / v.patch) % v.merge == 0, "vision.merge",
          "must be at least 1 and divide the patch grid (image_size / patch)");
  validate_tower(s.lm, "lm");
  validate_tower(s.expert, "expert");
  require(s.lm.layers == s.expert.layers, "expert.layers", "must equal lm.layers (shared attention)");
  require(s.lm.heads == s.expert.heads && s.lm.kv_heads == s.expert.kv_heads && s.lm.head_dim == s.expert.head_dim,
          "expert.heads/kv_heads/head_dim", "must equal lm's (shared attention)");
  require(s.vocab > 0, "vocab", "must be positive");
  require(s.horizon > 0, "horizon", "must be positive");
  require(s.max_action_dim > 0, "max_action_dim", "must be positive");
  require(s.max_cameras > 0, "max_cameras", "must be positive");
  require(s.max_prompt > 0, "max_prompt", "must be positive");
  require(s.flow_steps > 0, "flow_steps", "must be positive");
  require(s.vocab <= (1 << 24) && s.horizon <= 4096 && s.max_action_dim <= 4096 && s.max_cameras <= 64 && s.max_prompt <= (1 << 16) &&
              s.flow_steps <= 1000,
          "policy", "has a size past ember's bounds (vocab 2^24, horizon 4096, max_action_dim 4096, max_cameras 64, max_prompt 65536, "
                    "flow_steps 1000)");
  require(parameter_count(s) <= int64_t(1e11), "policy", "would have " + std::to_string(parameter_count(s)) +
                                                             " parameters (more than 10^11)");
}

namespace {
int64_t tower_layer_params(const TowerShape& t, bool adaptive) {
  int64_t d = t.width;
  int64_t attn = d * t.heads * t.head_dim * 2 + d * t.kv_heads * t.head_dim * 2;
  int64_t mlp = 3 * d * t.mlp;
  // adaptive norms: a (width -> 3 width) modulation per norm; plain: a scale per norm
  int64_t norms = adaptive ? 2 * (d * 3 * d + 3 * d) : 2 * d;
  return attn + mlp + norms;
}
}  // namespace

int64_t parameter_count(const PolicyShape& s) {
  const auto& v = s.vision;
  int64_t dv = v.width;
  int64_t vit = dv * 3 * v.patch * v.patch + dv + int64_t(v.tokens()) * dv +
                v.layers * (4 * dv + 3 * dv * dv + 3 * dv + dv * dv + dv + 2 * dv * v.mlp + v.mlp + dv) + 2 * dv;
  int64_t projector = dv * s.lm.width + s.lm.width;
  int64_t embed = int64_t(s.vocab) * s.lm.width;
  // the last language-model layer has only norm1, k and v (its prefix output is unused)
  int64_t lm = (s.lm.layers - 1) * tower_layer_params(s.lm, false) + s.lm.width + 2 * int64_t(s.lm.width) * s.lm.kv_heads * s.lm.head_dim;
  int64_t we = s.expert.width;
  int64_t expert = s.expert.layers * tower_layer_params(s.expert, true) + (we * 3 * we + 3 * we);
  int64_t heads = (s.max_action_dim * we + we) + (we * s.max_action_dim + s.max_action_dim) + 2 * (we * we + we);
  return vit + projector + embed + lm + expert + heads;
}

}  // namespace ember::model
