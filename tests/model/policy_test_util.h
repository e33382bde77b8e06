// Helpers the policy tests share (pi05 and groot): pointers to samples for collate, and the
// relative error that their layout comparisons bound.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

#include "ember/model/policy_inputs.h"

namespace ember::model::test {

inline std::vector<const PolicySample*> ptrs(const std::vector<PolicySample>& v) {
  std::vector<const PolicySample*> p;
  for (const auto& s : v) p.push_back(&s);
  return p;
}

// max |a - b| over max |b| (at least 1e-6)
inline double max_rel_err(const at::Tensor& a, const at::Tensor& b) {
  double scale = std::max(b.abs().max().item<double>(), 1e-6);
  return (a - b).abs().max().item<double>() / scale;
}

}  // namespace ember::model::test
