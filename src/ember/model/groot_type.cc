// GR00T-N1.5's registration (policy_type.h): presets, policy.json, embodiment 0 fitted to the
// dataset, the build options it has (a trainable backbone; no FP8 layers or bf16 parameters yet),
// and GR00T-N1.5 directories in and out (groot_n15.h).
#include <algorithm>

#include "ember/core/error.h"
#include "ember/model/groot.h"
#include "ember/model/groot_lerobot.h"
#include "ember/model/groot_n15.h"
#include "ember/model/groot_n15_metadata.h"
#include "ember/model/policy_type.h"

namespace ember::model {

namespace {

class GrootArch : public PolicyArch {
 public:
  explicit GrootArch(GrootShape shape) : shape_(std::move(shape)) { validate(shape_); }
  std::string type() const override { return "groot"; }
  const PolicyShape& base() const override { return shape_.base; }
  nlohmann::json to_json() const override { return groot_shape_to_json(shape_); }

  // The dataset's samples go to embodiment k = spec.embodiment (--policy.embodiment): a fresh
  // policy's embodiment k takes the dataset's widths; a resumed one must have them; N1.5's padded
  // heads keep theirs (its weights were trained on them) and take narrower data zero-padded.
  std::shared_ptr<const PolicyArch> fit_features(const FeatureSpec& spec, const std::string& root, bool resumed) const override {
    const int64_t k = spec.embodiment;
    if (k < 0 || k >= int64_t(shape_.embodiments.size()))
      throw Error(ErrorKind::kInvalidArgument, "--policy.embodiment=" + std::to_string(k) + ": the policy has embodiments 0.." +
                                                   std::to_string(shape_.embodiments.size() - 1));
    const GrootEmbodiment want{int(spec.state_dim), int(spec.action_dim)};
    const auto& e = shape_.embodiments.at(size_t(k));
    const std::string widths = "dataset " + root + ": state/action widths " + std::to_string(want.state_dim) + "/" +
                               std::to_string(want.action_dim) + ", the policy's embodiment " + std::to_string(k);
    if (shape_.padded_heads) {
      if (want.state_dim > e.state_dim || want.action_dim > e.action_dim)
        throw Error(ErrorKind::kInvalidArgument, widths + " takes at most " + std::to_string(e.state_dim) + "/" + std::to_string(e.action_dim));
      return nullptr;
    }
    if (resumed && (e.state_dim != want.state_dim || e.action_dim != want.action_dim))
      throw Error(ErrorKind::kInvalidArgument, widths + " has " + std::to_string(e.state_dim) + "/" + std::to_string(e.action_dim));
    auto g = shape_;
    g.embodiments.at(size_t(k)) = want;
    return std::make_shared<GrootArch>(g);
  }

  std::shared_ptr<const PolicyArch> for_action_widths(int state_dim, int min_action, int max_action) const override {
    auto g = shape_;
    g.embodiments.clear();
    for (int a = min_action; a <= max_action; ++a) g.embodiments.push_back({state_dim, a});
    return std::make_shared<GrootArch>(g);
  }

  const GrootShape& shape() const { return shape_; }

  std::shared_ptr<PolicyModuleImpl> build(const BuildOptions& o, at::Device device) const override {
    policy_type_info(type()).check_options(o);
    GrootPolicy policy(shape_, o.tune_backbone, o.torch_head_init);
    policy->to(device);
    policy->train();
    return policy.ptr();
  }

 private:
  GrootShape shape_;
};

std::shared_ptr<const PolicyArch> from_preset(const ShapeOptions& o) {
  auto g = groot_preset_shape(o.preset);
  auto& s = g.base;
  if (o.horizon) s.horizon = o.horizon;
  if (o.max_action_dim) s.max_action_dim = o.max_action_dim;
  if (o.flow_steps) s.flow_steps = o.flow_steps;
  g.max_seq_len = std::max(g.max_seq_len, s.horizon);
  if (o.image_size) set_image_size(s.vision, *o.image_size, o.image_size_flag);
  if (o.vocab) s.vocab = o.vocab;
  if (o.dropout) g.dropout = *o.dropout;
  for (auto& e : g.embodiments) e.action_dim = std::min(e.action_dim, s.max_action_dim);
  return std::make_shared<GrootArch>(g);
}

}  // namespace

nlohmann::json groot_shape_to_json(const GrootShape& g) {
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
  if (g.padded_heads) j["groot"]["padded_heads"] = true;
  j["groot"]["connector_layers"] = g.connector_layers;
  return j;
}

GrootShape groot_shape_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    auto base = j;
    base["expert"] = base.at("lm");  // unused by groot; shape_from_json checks it as pi0.5's
    GrootShape g;
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
    g.padded_heads = h.value("padded_heads", false);
    g.connector_layers = h.value("connector_layers", 2);  // absent (files before N1.5's connector): the two-layer one
    g.embodiments.clear();
    for (const auto& e : h.at("embodiments")) g.embodiments.push_back({e.at("state_dim").get<int>(), e.at("action_dim").get<int>()});
    validate(g);
    return g;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCorruption) throw;
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  }
}

std::shared_ptr<const PolicyArch> groot_arch(const GrootShape& shape) { return std::make_shared<GrootArch>(shape); }

namespace {

// A GR00T-N1.5 directory: its shape with N1.5's padded widths, N1.5's rules for the features
// (min-max normalisation, the task alone as the prompt, the loss over every chunk step). Its
// robot (statistics, widths, cameras, embodiment) is experiment_cfg/metadata.json's where that
// exists (groot_n15_metadata.h; several embodiments: new_embodiment's); a LeRobot 0.5.1
// GrootPolicy directory's is its config's and preprocessor's (groot_lerobot.h). Fine-tuning takes
// the dataset's cameras and statistics, as Isaac-GR00T's and LeRobot's fine-tuning do.
ImportedPolicy import_n15(const std::filesystem::path& dir) {
  ImportedPolicy out;
  if (is_lerobot_groot_dir(dir)) {  // LeRobot 0.5.1's GrootPolicy: its robot from its config and preprocessor
    auto le = import_lerobot_groot(dir);
    le.n15.shape.padded_heads = true;
    out.spec = le.spec;
    out.has_stats = le.has_stats;
    out.notes = std::move(le.n15.notes);
    out.notes.push_back("GR00T-N1.5 (LeRobot's groot policy): embodiment " + std::to_string(out.spec.embodiment) + ", " +
                        std::to_string(out.spec.cameras.size()) + " cameras, state " + std::to_string(out.spec.state_dim) + ", action " +
                        std::to_string(out.spec.action_dim) + (le.has_stats ? ", its min-max statistics" : ", no statistics"));
    out.arch = std::make_shared<GrootArch>(le.n15.shape);
    out.params = std::move(le.n15.params);
    out.config = std::move(le.n15.config);
    out.kept = std::move(le.n15.kept);
    out.skipped = std::move(le.n15.skipped);
    return out;
  }
  auto in = import_groot_n15(dir);
  in.shape.padded_heads = true;
  out.spec.state_dim = in.shape.embodiments.at(0).state_dim;
  out.spec.action_dim = in.shape.base.max_action_dim;
  for (const auto& key : {out.spec.state_key, out.spec.action_key}) out.spec.modes[key] = data::NormMode::kMinMax;
  out.spec.norm_options.rule = data::EpsilonRule::kZeroRangeToZero;  // Isaac-GR00T's min-max: a constant feature is 0
  out.spec.state_in_prompt = false;
  out.spec.loss_on_padded_steps = true;
  out.notes = std::move(in.notes);
  if (auto m = read_groot_n15_metadata(dir, out.notes, groot_n15_embodiment_index("new_embodiment"))) {
    const std::string file = (dir / "experiment_cfg" / "metadata.json").string();
    const int n = int(in.shape.embodiments.size());
    if (m->embodiment >= n)
      throw Error(ErrorKind::kInvalidArgument, file + ": embodiment tag '" + m->tag + "' is N1.5's projector " + std::to_string(m->embodiment) +
                                                   ", but model.safetensors has " + std::to_string(n) + " embodiments");
    const auto& heads = in.shape.embodiments[size_t(m->embodiment)];
    if (m->state_dim() > heads.state_dim || m->action_dim() > in.shape.base.max_action_dim)
      throw Error(ErrorKind::kInvalidArgument, file + ": " + m->tag + "'s state has " + std::to_string(m->state_dim()) + " values and its action " +
                                                   std::to_string(m->action_dim()) + ", more than the heads' " + std::to_string(heads.state_dim) +
                                                   " and " + std::to_string(in.shape.base.max_action_dim));
    out.spec.state_dim = m->state_dim();
    out.spec.action_dim = m->action_dim();
    out.spec.stats[out.spec.state_key] = m->state;
    out.spec.stats[out.spec.action_key] = m->action;
    out.spec.cameras = m->cameras;
    out.spec.fps = m->fps;
    out.spec.embodiment = m->embodiment;
    out.has_stats = true;
    out.notes.push_back("GR00T-N1.5: experiment_cfg/metadata.json's " + m->tag + " (embodiment " + std::to_string(m->embodiment) + "): state " +
                        std::to_string(m->state_parts.size()) + " parts, " + std::to_string(m->state_dim()) + " values; action " +
                        std::to_string(m->action_parts.size()) + " parts, " + std::to_string(m->action_dim()) + " values; " +
                        std::to_string(m->cameras.size()) + " cameras");
  } else {
    out.notes.push_back("GR00T-N1.5: --policy.embodiment picks the heads that read the dataset (default 0: no experiment_cfg/metadata.json "
                        "names one; N1.5's new_embodiment is 31)");
  }
  out.arch = std::make_shared<GrootArch>(in.shape);
  out.params = std::move(in.params);
  out.config = std::move(in.config);
  out.kept = std::move(in.kept);
  out.skipped = std::move(in.skipped);
  return out;
}

}  // namespace

PolicyType groot_policy_type() {
  PolicyType t;
  static_cast<PolicyTypeInfo&>(t) = policy_type_info("groot");
  t.from_preset = from_preset;
  t.from_json = [](const nlohmann::json& j, const std::string& what) -> std::shared_ptr<const PolicyArch> {
    return std::make_shared<GrootArch>(groot_shape_from_json(j, what));
  };
  t.is_foreign_dir = [](const std::filesystem::path& dir) { return is_groot_n15_dir(dir) || is_lerobot_groot_dir(dir); };
  t.import_dir = import_n15;
  t.export_dir = [](const std::filesystem::path& out, const PolicyArch& arch, const FeatureSpec& spec,
                    const std::map<std::string, at::Tensor>& params, const std::map<std::string, at::Tensor>& kept,
                    const nlohmann::ordered_json& config) {
    const auto& shape = dynamic_cast<const GrootArch&>(arch).shape();
    write_groot_n15(out, shape, params, kept, config);
    return write_groot_n15_metadata(out, spec, shape.base.vision.image_size);
  };
  t.export_format = "groot_n15";
  t.trains_own_tokenizer = true;
  t.norm_rule = data::EpsilonRule::kZeroRangeToZero;
  t.fine_tunes_on_dataset_cameras = true;
  return t;
}

}  // namespace ember::model
