// GR00T-N1.5 policy directories in and out: Isaac-GR00T's GR00TN15.save_pretrained layout (as
// `nvidia/GR00T-N1.5-3B` and its fine-tunes are published, and as LeRobot 0.5.1's groot policy
// wraps it). The name map and what is refused: docs/groot.md, "N1.5 checkpoints".
//
//   config.json                      model_type "gr00t_n1_5": backbone_cfg (select_layer,
//                                    project_to_dim), action_head_cfg (the DiT's and the vl
//                                    self-attention's configs, widths, horizon, embodiments)
//   model.safetensors, or model-*-of-*.safetensors with model.safetensors.index.json
//                                    the state dict: backbone.eagle_model.* (SigLIP, the pixel
//                                    shuffle's mlp1, Qwen3's first select_layer layers),
//                                    backbone.eagle_linear.*, action_head.*
//   ember_shrink.json (optional)     a shrunken test model's sizes no tensor shows
//                                    (tests/python/groot_n15_reference.py)
//
// Sizes come from the tensors; what no tensor shows is N1.5's (SigLIP's 16 heads, Qwen3's rope
// base 1e6) unless ember_shrink.json says otherwise. Every embodiment keeps N1.5's padded widths
// (max_state_dim, action_dim): its category-specific weights W[e] [in, out] become embodiment e's
// linear layers ([out, in]). Tensors ember never reads (SigLIP's pooling head, the language
// model's lm_head, layers past select_layer) are kept aside and written back on export.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/model/groot_shape.h"

namespace ember::model {

// Whether `dir` holds a config.json whose model_type is "gr00t_n1_5".
bool is_groot_n15_dir(const std::filesystem::path& dir);

struct GrootN15Import {
  GrootShape shape;
  std::map<std::string, at::Tensor> params;  // ember's names (GrootPolicyImpl::named_parameters)
  std::map<std::string, at::Tensor> kept;    // N1.5's names: the tensors ember never reads
  std::vector<std::string> skipped, notes;
  nlohmann::ordered_json config;             // config.json, written back by an export
};

// Reads a GR00T-N1.5 directory. Throws Error (kNotFound, kCorruption, kInvalidArgument) with one
// line naming the file and the field or tensor: a missing, unexpected or mis-shaped tensor, and
// the configurations ember does not implement (a connector without the pixel shuffle, positional
// embeddings in the DiT, cross-attention on every block, noise other than Beta(1.5, 1) * 0.999).
GrootN15Import import_groot_n15(const std::filesystem::path& dir);
// The same from a config.json's content and a state dict (`cfile`, `wfile` name them in errors;
// `shrink` is ember_shrink.json's content, or an empty object). Shapes only are read until the
// weights are used: meta tensors give the name map and shapes of a checkpoint without its data.
GrootN15Import import_groot_n15(const nlohmann::ordered_json& config, std::map<std::string, at::Tensor> state_dict,
                                const nlohmann::ordered_json& shrink, const std::string& cfile, const std::string& wfile);

// ember's parameters -> N1.5's state dict for `shape` (kept added back).
std::map<std::string, at::Tensor> to_groot_n15_state_dict(const GrootShape& shape, const std::map<std::string, at::Tensor>& params,
                                                          const std::map<std::string, at::Tensor>& kept);

// The config.json of a GR00T-N1.5 directory of `shape` (`project`: backbone_cfg.project_to_dim
// set): `base` with the shape's values set, N1.5's defaults where `base` is not an object.
nlohmann::ordered_json groot_n15_config(const GrootShape& shape, bool project, const nlohmann::ordered_json& base);

// Writes `out` (absent or empty) as a GR00T-N1.5 directory: config.json (`config` with the
// shape's values set; N1.5's defaults where it is not an object) and model.safetensors.
void write_groot_n15(const std::filesystem::path& out, const GrootShape& shape, const std::map<std::string, at::Tensor>& params,
                     const std::map<std::string, at::Tensor>& kept, const nlohmann::ordered_json& config);

}  // namespace ember::model
