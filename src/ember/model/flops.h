// Model FLOPs of a training step: 2 per multiply-add of every matrix product (linear layers,
// patch embedding, attention scores and values), forward x 3 for forward + backward. Norms,
// activations and the optimizer are not counted (the usual MFU convention).
#pragma once

#include <cstdint>
#include <vector>

#include "ember/model/policy_inputs.h"
#include "ember/model/policy_shape.h"

namespace ember::model {

struct StepWork {
  int64_t images = 0;                  // images through the vision tower
  std::vector<int64_t> prefix_lens;    // per sample (or padded row): prefix tokens attended over
  int64_t suffix_len = 0;              // action tokens per sample
  int64_t filler_tokens = 0;           // varlen filler: prefix tokens in a segment of their own, no suffix
};

// The work the batch's layout computes (padding included in the padded layout) ...
StepWork layout_work(const PolicyInputs& in, const PolicyShape& shape);
// ... and the work its real tokens need (the same for both layouts).
StepWork real_work(const PolicyInputs& in, const PolicyShape& shape);

// Training FLOPs (forward + backward) of that work.
double train_flops(const StepWork& work, const PolicyShape& shape);

}  // namespace ember::model
