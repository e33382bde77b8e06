// The policy registry: `--policy.type` names a registered type, and everything above model/
// builds, saves, loads and runs policies through these types only. A new policy type is one
// folder of model code and one line in policy_type.cc's list.
//
//   PolicyType   what a type offers: its presets, its architecture from a preset or from its
//                policy.json, which build options it has (FP8, bf16 parameters, a trainable
//                backbone), its weight-name maps to reference layouts where they exist
//   PolicyArch   one policy's architecture (its shapes): what policy.json holds; builds the module
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/model/policy.h"
#include "ember/model/policy_catalog.h"
#include "ember/model/policy_shape.h"
#include "ember/model/processor.h"

namespace ember::model {

// The shape settings a run's flags give a fresh policy, whatever its type; 0 (unset) keeps the
// preset's own.
struct ShapeOptions {
  std::string preset = "tiny";
  int horizon = 0;
  int max_action_dim = 0;
  int flow_steps = 0;
  std::optional<int> image_size;
  std::string image_size_flag = "--dataset.image_size";  // what errors about image_size name
  int vocab = 0;  // the tokenizer's pieces
  // --policy.dropout: groot's blocks while training (recorded in policy.json); pi05 has none
  std::optional<double> dropout;
};

class PolicyArch {
 public:
  virtual ~PolicyArch() = default;
  virtual std::string type() const = 0;
  // the shapes the data side reads (cameras, image size, prompt, horizon, action dims)
  virtual const PolicyShape& base() const = 0;
  // policy.json: {"type": type(), ...}
  virtual nlohmann::json to_json() const = 0;
  // The architecture fitted to a dataset's features (groot: embodiment 0 takes the state and
  // action widths). resumed: a checkpoint's architecture, which must already fit (else
  // kInvalidArgument naming `root`). The default fits every dataset as it is.
  virtual std::shared_ptr<const PolicyArch> fit_features(const FeatureSpec& spec, const std::string& root, bool resumed) const;
  // For synthetic batches whose samples have state_dim states and min..max action dims, sample
  // embodiment k having min + k (`ember bench policy`): groot one embodiment per width; null
  // (the default): the architecture as it is, narrower actions zero-padded.
  virtual std::shared_ptr<const PolicyArch> for_action_widths(int /*state_dim*/, int /*min_action*/, int /*max_action*/) const {
    return nullptr;
  }
  // A new module (random weights from the global generator) on device, train mode. Throws
  // kInvalidArgument naming the flag when the type lacks an option or the device cannot run it.
  virtual std::shared_ptr<PolicyModuleImpl> build(const BuildOptions& options, at::Device device) const = 0;
};

// What an import of a reference policy directory yields (weights in this type's names, CPU).
struct ImportedPolicy {
  std::shared_ptr<const PolicyArch> arch;
  FeatureSpec spec;
  std::map<std::string, at::Tensor> params;
  nlohmann::ordered_json config;               // the directory's config.json (written back by an export)
  std::map<std::string, at::Tensor> kept;      // tensors the type never reads (written back by an export)
  std::vector<std::string> notes, skipped;     // what the import adapted, what it left out
  bool has_stats = false;                      // normalisation statistics were found
};

// A registered type: its catalog entry (policy_catalog.h: name, presets, flag defaults, build
// options) and its builders.
struct PolicyType : PolicyTypeInfo {
  std::function<std::shared_ptr<const PolicyArch>(const ShapeOptions&)> from_preset;
  // policy.json (`what` names the file in errors: kCorruption)
  std::function<std::shared_ptr<const PolicyArch>(const nlohmann::json&, const std::string& what)> from_json;
  // Reference layouts (LeRobot / openpi directories); null where the type has none.
  std::function<bool(const std::filesystem::path&)> is_foreign_dir;
  std::function<ImportedPolicy(const std::filesystem::path&)> import_dir;
  // writes `params` (this type's names) as the reference's policy directory `out`; returns what
  // the directory lacks for the reference's loaders, one line each (empty: nothing)
  std::function<std::vector<std::string>(const std::filesystem::path& out, const PolicyArch&, const FeatureSpec&,
                     const std::map<std::string, at::Tensor>& params, const std::map<std::string, at::Tensor>& kept,
                     const nlohmann::ordered_json& config)>
      export_dir;
  std::string export_format;  // what export_dir writes ("lerobot"), empty without one
  // A reference directory of this type without a SentencePiece tokenizer (and none given) gets
  // one trained on the dataset's tasks when a run fine-tunes it (GR00T-N1.5: Qwen3's BPE
  // tokenizer is not read); false: the run needs --policy.tokenizer_path (pi0.5's PaliGemma).
  bool trains_own_tokenizer = false;
  // Fine-tuning a reference directory of this type reads the dataset's cameras, whatever cameras
  // the directory names (GR00T-N1.5 reads any views; Isaac-GR00T fine-tunes on the dataset's
  // video keys); false: the directory's cameras, which --rename_map fills (pi0.5's slots).
  bool fine_tunes_on_dataset_cameras = false;
  // How a fresh run's normalisation treats a statistic's zero range (data/normalize.h): GR00T-N1.5
  // maps a constant MIN_MAX feature to 0, LeRobot 0.4 to -1.
  data::EpsilonRule norm_rule = data::EpsilonRule::kZeroRangeOnly;
};

// Every registered type, in the catalog's order.
const std::vector<PolicyType>& policy_types();
// The type named `name`; throws kInvalidArgument "--policy.type: expected a | b, got 'x'".
const PolicyType& policy_type(std::string_view name);

// policy.json's "type" ("pi05" when absent: files written before there were several types).
std::string policy_type_of(const nlohmann::json& policy_json);
// The architecture policy.json describes, through its type's from_json. Throws kCorruption
// naming `what` for an unknown type or a malformed file.
std::shared_ptr<const PolicyArch> arch_from_json(const nlohmann::json& policy_json, const std::string& what);
// The registered type whose reference directory `dir` is, or null.
const PolicyType* foreign_policy_type(const std::filesystem::path& dir);

// Reads a JSON file keeping its objects' key order (LeRobot's input_features order is the
// camera slot order). Throws kNotFound / kCorruption naming the file.
nlohmann::ordered_json read_ordered_json(const std::filesystem::path& path);

// The registered types (each in its own file beside its model).
PolicyType pi05_policy_type();
PolicyType groot_policy_type();

// pi0.5's policy.json and the base shapes every type's policy.json starts from.
nlohmann::json shape_to_json(const PolicyShape& shape);
PolicyShape shape_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace ember::model
