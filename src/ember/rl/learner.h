// The learner: GRPO over the groups the rollouts produce. Each group is cut into micro-batches
// of chunks as soon as it arrives; their clipped-ratio losses (grpo.h) are summed into the
// gradients (accumulation); step() divides by the number of terms accumulated, clips the
// global norm and steps AdamW (train/optimizer.h, as `ember train`). The ratio is against the
// log-probabilities recorded at sampling time, whichever weights version sampled them.
// KL to the starting policy is measured on the same terms (no gradient).
#pragma once

#include <memory>

#include "ember/rl/flow_noise.h"
#include "ember/rl/trajectory.h"
#include "ember/train/optimizer.h"

namespace ember::rl {

struct LearnerOptions {
  FlowNoise noise;
  double clip = 0.2;
  double lr = 1e-4;
  double grad_clip_norm = 1.0;
  int micro_batch = 16;
};

struct StepStats {
  double loss = 0;       // surrogate loss per term
  double kl = 0;         // k3 per term, to the starting policy
  double clip_frac = 0;  // terms with |ratio - 1| > clip
  double grad_norm = 0;
  int64_t terms = 0;     // chunk x denoising step terms with an advantage
  int64_t chunks = 0, groups = 0, flat_groups = 0;  // flat: equal returns, no signal
  double success = 0, ret = 0;  // over the groups' episodes
};

class Learner {
 public:
  // policy: trained in place (set to train mode); reference: the starting weights (frozen).
  Learner(model::Pi05Policy policy, model::Pi05Policy reference, at::Device device, LearnerOptions options);

  // Adds a group's gradients.
  void accumulate(const Group& group);
  // One optimizer step over what was accumulated since the last one (none when no term had an
  // advantage); returns its figures and starts the next accumulation.
  StepStats step();

  train::Optimizer& optimizer() { return *optimizer_; }
  model::NamedTensors& params() { return params_; }
  model::Pi05Policy policy() { return policy_; }

 private:
  void micro_step(const std::vector<const ChunkRecord*>& chunks, const std::vector<double>& advantages);

  model::Pi05Policy policy_, reference_;
  at::Device device_;
  LearnerOptions options_;
  model::NamedTensors params_;
  std::vector<at::Tensor> param_list_;
  std::unique_ptr<train::Optimizer> optimizer_;
  StepStats acc_;
  at::Tensor loss_sum_, clipped_, kl_sum_;
  int64_t episodes_ = 0;
};

}  // namespace ember::rl
