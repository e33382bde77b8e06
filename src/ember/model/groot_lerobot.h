// LeRobot 0.5.1's GrootPolicy directories (LeRobot's `groot` policy of that release is
// GR00T-N1.5; 0.6 replaced it with N1.7, which ember does not read):
//
//   config.json        LeRobot's GrootConfig: "type" "groot", input_features (the cameras, the
//                      state), output_features (the action), embodiment_tag, base_model_path
//   model.safetensors  GR00TN15's state dict under "_groot_model." (GrootPolicy's attribute)
//   policy_preprocessor.json + its groot_pack_inputs_v3 step's statistics file
//                      the min-max statistics of observation.state and action (optional)
//
// The model's configuration is not in the directory: LeRobot rebuilds it from base_model_path.
// ember reads base_model_path's config.json where that is a local GR00T-N1.5 directory (a
// relative path: relative to the policy directory), else N1.5-3B's (its sizes from the tensors,
// as groot_n15.h reads every directory).
#pragma once

#include <filesystem>

#include "ember/model/groot_n15.h"
#include "ember/model/processor.h"

namespace ember::model {

// Whether dir/config.json is LeRobot's GrootConfig ("type": "groot", or no type with
// base_model_path and embodiment_tag, as configs saved without the choice key are).
bool is_lerobot_groot_dir(const std::filesystem::path& dir);

struct LeRobotGrootImport {
  GrootN15Import n15;        // shape, ember's weights, kept tensors, notes; config: base_model_path's
  FeatureSpec spec;          // cameras (sorted, as LeRobot's pack step orders them), widths, min-max, embodiment
  bool has_stats = false;    // the pack step's statistics were read
  nlohmann::ordered_json lerobot_config;  // config.json
};

// Reads a LeRobot GrootPolicy directory. Throws Error with one line naming the file and field or
// tensor (a tensor outside "_groot_model.", a base model that is not N1.5's, widths past the
// heads', and everything import_groot_n15 refuses).
LeRobotGrootImport import_lerobot_groot(const std::filesystem::path& dir);

}  // namespace ember::model
