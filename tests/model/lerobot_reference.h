// A directory written by tests/python/lerobot_pi05_reference.py (LeRobot 0.6.1's PI05Policy
// with random weights and its outputs on fixed inputs, reference.safetensors) as ember sees it:
// the stored tensors, the batch as ember's samples, the imported policy. Shared by the CPU parity
// test (the shrunken fixture) and the GPU one (pi0.5's real shapes).
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ember/core/json_file.h"
#include "ember/model/lerobot_pi05.h"
#include "ember/model/pi05.h"
#include "ember/model/weights.h"

namespace ember::model::test {

struct LeRobotReference {
  TensorMap t;
  nlohmann::json meta;

  explicit LeRobotReference(const std::filesystem::path& dir) {
    std::map<std::string, std::string> md;
    t = load_tensors((dir / "reference.safetensors").string(), &md);
    meta = nlohmann::json::parse(md.at("reference"));
  }
  const at::Tensor& operator()(const std::string& name) const { return t.at(name); }

  // The batch as ember's samples: the images PI05Pytorch saw (present cameras only), the real
  // prompt tokens, the normalised action chunk.
  std::vector<PolicySample> samples() const {
    const auto images = t.at("model.images").cpu().to(at::kFloat);  // [slots, B, 3, S, S]
    const auto masks = t.at("model.image_masks").cpu();
    const auto& tokens = t.at("tokens");
    const auto& tmask = t.at("token_mask");
    const auto& actions = t.at("actions");
    std::vector<PolicySample> out(size_t(tokens.size(0)));
    for (int64_t i = 0; i < tokens.size(0); ++i) {
      auto& s = out[size_t(i)];
      for (int64_t slot = 0; slot < images.size(0); ++slot) {
        if (!masks[slot][i].item<bool>()) continue;
        s.images.push_back(images[slot][i].contiguous());
        s.camera_slots.push_back(int(slot));
      }
      const int64_t n = tmask[i].sum().item<int64_t>();
      for (int64_t j = 0; j < n; ++j) s.prompt.push_back(int(tokens[i][j].item<int64_t>()));
      s.actions = actions[i].contiguous();
    }
    return out;
  }
};

// max |a - b| / max |b|, as lerobot_pi05_reference.py --verify reports it
inline double lerobot_rel(const at::Tensor& a, const at::Tensor& b) {
  auto d = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
  return d / std::max(b.to(at::kDouble).abs().max().item<double>(), 1e-12);
}

// `policy` (a module holder of any type) with an import's weights (ember's names), in eval mode.
template <class Policy>
Policy with_weights(Policy policy, const std::map<std::string, at::Tensor>& weights) {
  NamedTensors params;
  for (const auto& q : policy->named_parameters()) params.emplace_back(q.key(), q.value());
  load_into(params, weights, "reference");
  policy->eval();
  return policy;
}

// The imported policy with its weights, in eval mode (fp32, on the CPU).
inline Pi05Policy imported_policy(const LeRobotImport& im) { return with_weights(Pi05Policy(im.shape), im.params); }

}  // namespace ember::model::test
