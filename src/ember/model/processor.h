// From a LeRobot dataset's items to the policy's samples: the cameras resized and scaled to
// [-1, 1], the state normalised and written into pi0.5's prompt, the action chunk (H steps
// from delta timestamps) normalised and padded.
//
// Normalisation as LeRobot's pi05: state and action by QUANTILES (q01, q99) when the dataset's
// statistics have them, else MEAN_STD; images by IDENTITY. The modes and statistics used are
// saved with the checkpoint (normalization.json), so inference needs only the checkpoint.
// Cameras are resized to the policy's square input without keeping the aspect ratio; policies
// imported from LeRobot decode them at their stored size and resize-with-pad as LeRobot does.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/normalize.h"
#include "ember/model/policy_inputs.h"
#include "ember/model/tokenizer.h"

namespace ember::model {

// What a policy reads from a dataset and how it normalises it.
struct FeatureSpec {
  std::vector<std::string> cameras;  // camera keys, in slot order
  std::string state_key = "observation.state";
  std::string action_key = "action";
  int64_t state_dim = 0, action_dim = 0;
  double fps = 0;
  std::map<std::string, data::NormMode> modes;          // state and action keys
  std::map<std::string, data::FeatureStats> stats;      // their statistics
  data::NormalizeOptions norm_options;                  // eps and its rule (LeRobot 0.4+: 1e-8 on a zero range)
  // LeRobot pi05's rules where ember's differ (docs/lerobot_pi05.md, section 3 row 17 and
  // section 4 "state bins"), on for policies imported from LeRobot so that fine-tuning
  // optimises LeRobot's objective and the prompt is LeRobot's:
  bool lerobot_state_bins = false;    // normalised states below -1 give bin -1 (ember: bin 0)
  bool loss_on_padded_steps = false;  // the loss counts chunk steps past the episode's end
  // images as LeRobot's pi05 sees them: decoded at their stored size, scaled to [0, 1], then
  // resize_with_pad (aspect kept, centred zero padding), then x2 - 1 (ember: decoded at the
  // policy's size, or stretched to it, and u8 / 127.5 - 1)
  bool lerobot_images = false;
  // the normalised state written into the prompt (pi0.5's); false: the task alone (GR00T-N1.5's,
  // whose state enters as the state token)
  bool state_in_prompt = true;
  // GR00T: the embodiment whose heads read these samples (--policy.embodiment); pi0.5: 0
  int64_t embodiment = 0;
  // policy camera -> the dataset's key it reads (lerobot-train's --rename_map); a property of
  // the run, not of the policy: not saved
  std::map<std::string, std::string> camera_sources;

  // Sets camera_sources from rename (source key -> the policy camera it fills). Throws
  // kInvalidArgument naming --rename_map and the entry whose target is not one of `cameras` or
  // whose source `has_source` refuses (`sources` says where sources come from, for the message).
  void set_camera_sources(const std::map<std::string, std::string>& rename,
                          const std::function<bool(const std::string&)>& has_source, const std::string& sources);

  nlohmann::json to_json() const;
  static FeatureSpec from_json(const nlohmann::json& j, const std::string& what);
};

// A run's choices of how samples are made (its flags: --policy.normalization, state_in_prompt,
// loss_on_padded_steps; a policy type's defaults give N1.5's to groot).
struct FeatureRules {
  std::optional<data::NormMode> mode;  // state and action; unset: QUANTILES where the statistics have q01/q99, else MEAN_STD
  bool state_in_prompt = true;
  bool loss_on_padded_steps = false;
};

// Reads the dataset's features and statistics. Throws kInvalidArgument naming the dataset and
// the feature when the state or action is missing or not 1-D, there are more cameras than the
// policy's slots, the action dimension exceeds max_action_dim, or statistics are missing (or
// lack what rules.mode needs).
FeatureSpec feature_spec(const data::Metadata& meta, const model::PolicyShape& shape, const FeatureRules& rules = {});
// The same for a policy whose features are fixed already (an imported one, `like`): its
// cameras in its slot order (each must be a dataset feature or be one of its empty slots),
// state/action keys, modes and rules; dims and statistics from the dataset, as lerobot-train
// fine-tunes. rename: dataset key -> the policy camera it fills (lerobot-train's --rename_map,
// e.g. observation.images.top -> observation.images.base_0_rgb). Throws kInvalidArgument naming
// the dataset and the feature, or --rename_map and the entry that names no dataset feature or
// no camera of the policy.
FeatureSpec feature_spec_like(const data::Metadata& meta, const model::PolicyShape& shape, const FeatureSpec& like,
                              const std::map<std::string, std::string>& rename = {});

class SampleBuilder {
 public:
  SampleBuilder(FeatureSpec spec, const model::PolicyShape& shape, const model::Tokenizer& tokenizer);

  // The dataset options that produce what build() needs (action delta timestamps).
  data::DatasetOptions dataset_options() const;

  // One sample; with_actions false at inference. Thread-safe. With `shift` (training with
  // image transforms), each camera image is moved by a random whole number of pixels, up to
  // shift->max_fraction of its size in x and y, drawn from shift->seed (edges replicated).
  struct RandomShift {
    double max_fraction = 0;
    uint64_t seed = 0;
  };
  model::PolicySample build(const data::Item& item, bool with_actions = true, const RandomShift* shift = nullptr) const;
  // image [3, H, W] moved right by dx and down by dy pixels; the edge pixels fill the gap
  static at::Tensor shifted(const at::Tensor& image, int dx, int dy);

  // Normalised actions [H, max_action_dim] (or fewer columns) -> [H, action_dim] in the
  // dataset's units.
  std::vector<std::vector<float>> unnormalize_actions(const at::Tensor& actions) const;
  // The state of an item, normalised ([state_dim]).
  std::vector<float> normalized_state(const data::Item& item) const;

  const FeatureSpec& spec() const { return spec_; }

 private:
  at::Tensor image_tensor(const io::Image& image) const;  // [3, S, S] in [-1, 1]

  FeatureSpec spec_;
  model::PolicyShape shape_;
  const model::Tokenizer& tokenizer_;
  data::Normalizer normalizer_;
};

// LeRobot's (and openpi's PyTorch) resize_with_pad: image [3, h, w] float32 in [0, 1] to
// [3, size, size] keeping the aspect ratio: scaled by 1 / max(w, h) * size to int(h / r) x
// int(w / r) (bilinear, align_corners false, no antialiasing), clamped to [0, 1], then padded
// with zeros, centred (the top and left get the smaller half). An image of that size already is
// returned as it is.
at::Tensor resize_with_pad(const at::Tensor& image, int64_t size);

// The pi0.5 prompt texts of a dataset's tasks with a spread of state bins, for training a
// tokenizer that has pieces for the numbers it will see.
std::vector<std::string> tokenizer_training_texts(const data::Metadata& meta);

}  // namespace ember::model
