// pi0.5's registration (policy_type.h): presets, policy.json, the build options it has (all of
// them but a trainable-backbone switch: pi0.5 trains every weight), LeRobot's and openpi's
// directories in and LeRobot's out (lerobot_pi05.h).
#include "ember/core/error.h"
#include "ember/model/fp8_linear.h"
#include "ember/model/lerobot_pi05.h"
#include "ember/model/pi05.h"
#include "ember/model/policy_type.h"

namespace ember::model {

namespace {

class Pi05Arch : public PolicyArch {
 public:
  explicit Pi05Arch(PolicyShape shape) : shape_(std::move(shape)) { validate(shape_); }
  std::string type() const override { return "pi05"; }
  const PolicyShape& base() const override { return shape_; }
  nlohmann::json to_json() const override { return shape_to_json(shape_); }

  std::shared_ptr<PolicyModuleImpl> build(const BuildOptions& o, at::Device device) const override {
    policy_type_info(type()).check_options(o);
    Pi05Policy policy(shape_, PolicyOptions{.fp8 = o.fp8, .gradient_checkpointing = o.gradient_checkpointing});
    if (o.fp8) {
      if (auto why = fp8_unsupported_reason(device); !why.empty()) throw Error(ErrorKind::kInvalidArgument, "--policy.fp8: " + why);
      if (policy->fp8_layer_names().empty())
        throw Error(ErrorKind::kInvalidArgument, "--policy.fp8: no linear layer of the language backbone of preset '" +
                                                     shape_.preset + "' has both sizes a multiple of 512 (lm width " +
                                                     std::to_string(shape_.lm.width) + ", mlp " + std::to_string(shape_.lm.mlp) + ")");
    }
    policy->to(device);
    if (o.bf16_params) set_param_dtype(policy, at::kBFloat16);
    policy->train();
    return policy.ptr();
  }

 private:
  PolicyShape shape_;
};

std::shared_ptr<const PolicyArch> from_preset(const ShapeOptions& o) {
  if (o.dropout && *o.dropout != 0)
    throw Error(ErrorKind::kInvalidArgument, "--policy.dropout: 0 with --policy.type=pi05 (it has no dropout layers)");
  auto s = preset_shape(o.preset);
  if (o.horizon) s.horizon = o.horizon;
  if (o.max_action_dim) s.max_action_dim = o.max_action_dim;
  if (o.flow_steps) s.flow_steps = o.flow_steps;
  if (o.image_size) set_image_size(s.vision, *o.image_size, o.image_size_flag);
  if (o.vocab) s.vocab = o.vocab;
  return std::make_shared<Pi05Arch>(s);
}

ImportedPolicy import_dir(const std::filesystem::path& dir) {
  auto in = import_lerobot_pi05(dir);
  ImportedPolicy out;
  out.arch = std::make_shared<Pi05Arch>(in.shape);
  out.spec = std::move(in.spec);
  out.params = std::move(in.params);
  out.config = std::move(in.config);
  out.kept = std::move(in.kept);
  out.notes = std::move(in.notes);
  out.skipped = std::move(in.skipped);
  out.has_stats = in.has_stats;
  return out;
}

}  // namespace

std::shared_ptr<const PolicyArch> pi05_arch(const PolicyShape& shape) { return std::make_shared<Pi05Arch>(shape); }

PolicyType pi05_policy_type() {
  PolicyType t;
  static_cast<PolicyTypeInfo&>(t) = policy_type_info("pi05");
  t.from_preset = from_preset;
  t.from_json = [](const nlohmann::json& j, const std::string& what) -> std::shared_ptr<const PolicyArch> {
    return std::make_shared<Pi05Arch>(shape_from_json(j, what));
  };
  t.is_foreign_dir = [](const std::filesystem::path& dir) { return foreign_policy_kind(dir) != ForeignPolicy::kNone; };
  t.import_dir = import_dir;
  t.export_dir = [](const std::filesystem::path& out, const PolicyArch& arch, const FeatureSpec& spec,
                    const std::map<std::string, at::Tensor>& params, const std::map<std::string, at::Tensor>& kept,
                    const nlohmann::ordered_json& config) {
    write_lerobot_pi05(out, arch.base(), spec, params, kept, config);
    return std::vector<std::string>{};
  };
  t.export_format = "lerobot";
  return t;
}

}  // namespace ember::model
