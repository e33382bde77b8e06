// The pieces of the LeRobot pi0.5 import and export that its three files share
// (lerobot_pi05_names.cc: the name map; _import.cc: directories in; _export.cc: directories out).
// Not an API: only those files include it.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.h"
#include "ember/model/lerobot_pi05.h"
#include "ember/model/reference_io.h"

namespace ember::model::pi05_io {

using ojson = nlohmann::ordered_json;

inline const std::string kPG = "model.paligemma_with_expert.paligemma.";
inline const std::string kVT = kPG + "model.vision_tower.vision_model.";
inline const std::string kLM = kPG + "model.language_model.";
inline const std::string kEX = "model.paligemma_with_expert.gemma_expert.";
inline const std::string kEmbed = kLM + "embed_tokens.weight";
inline const std::string kLmHead = kPG + "lm_head.weight";

// errors naming the file, typed fields, checked tensors: the reference readers' shared helpers
using ref_io::bad;
using ref_io::count_layers;
using ref_io::get;
using ref_io::need;
using ref_io::read_stats_file;
using ref_io::shape_text;

// Keys as PI05Policy.from_pretrained sees them: the "model." prefix added where missing, and the
// older names its _fix_pytorch_state_dict_keys renames; pi0's state projection goes to `dropped`.
TensorMap canonical_keys(const TensorMap& in, const std::string& file, std::vector<std::string>* dropped);
}  // namespace ember::model::pi05_io
