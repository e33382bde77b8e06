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

namespace ember::model::pi05_io {

using ojson = nlohmann::ordered_json;

inline const std::string kPG = "model.paligemma_with_expert.paligemma.";
inline const std::string kVT = kPG + "model.vision_tower.vision_model.";
inline const std::string kLM = kPG + "model.language_model.";
inline const std::string kEX = "model.paligemma_with_expert.gemma_expert.";
inline const std::string kEmbed = kLM + "embed_tokens.weight";
inline const std::string kLmHead = kPG + "lm_head.weight";

// Throws Error(kind, where + ": " + what).
[[noreturn]] void bad(const std::string& where, const std::string& what, ErrorKind kind = ErrorKind::kInvalidArgument);
std::string shape_text(at::IntArrayRef s);

// Keys as PI05Policy.from_pretrained sees them: the "model." prefix added where missing, and the
// older names its _fix_pytorch_state_dict_keys renames; pi0's state projection goes to `dropped`.
TensorMap canonical_keys(const TensorMap& in, const std::string& file, std::vector<std::string>* dropped);
// layers prefix0suffix, prefix1suffix, ... present in sd
int count_layers(const TensorMap& sd, const std::string& prefix, const std::string& suffix);
// sd[key] with `dims` dimensions, else an error naming the file and the key
const at::Tensor& need(const TensorMap& sd, std::string_view key, const std::string& file, int64_t dims);

// j[key] as T (fallback where absent or null); a wrong type is an error naming the file and field.
template <class T>
T get(const ojson& j, const char* key, T fallback, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(file, std::string("field '") + key + "' has the wrong type (" + j[key].dump() + ")");
  }
}

}  // namespace ember::model::pi05_io
