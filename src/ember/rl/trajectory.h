// What rollouts hand the learner: one record per policy request (the policy's input, the
// sampled denoising chain with its log-probabilities, the weights' version), trajectories of
// them, and GRPO's groups: G trajectories from the same initial state.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "ember/model/policy_inputs.h"

namespace ember::rl {

struct ChunkRecord {
  model::PolicySample sample;  // the policy's input (host)
  at::Tensor chain;            // [K+1, H, A] float32 (host): x_0 .. x_K
  at::Tensor log_prob;         // [T] float32: the chain's log p terms under the sampling weights (flow_noise.h)
  int64_t noisy_step = -1;     // the sde noise method: the chain's noisy step (else -1)
  int64_t version = 0;         // the weights' version that sampled it (optimizer steps done)
  double value = 0;            // PPO: the value head's V at sampling (0 without one)
  double phi = 0;              // the shaping potential at the chunk's first observation
  double reward = 0;           // set when the episode ends (value_head.h: r_k)
};

struct Trajectory {
  int64_t group = 0;
  int member = 0;
  std::vector<ChunkRecord> chunks;
  double ret = 0;          // success (0/1) + shaping term (rl_config.h)
  bool success = false;
  int env_steps = 0;
  int64_t oldest_version() const {
    int64_t v = std::numeric_limits<int64_t>::max();
    for (const auto& c : chunks) v = std::min(v, c.version);
    return chunks.empty() ? 0 : v;
  }
};

struct Group {
  int64_t id = 0;
  std::vector<Trajectory> members;  // group_size of them, by member index
  int64_t oldest_version() const {
    int64_t v = std::numeric_limits<int64_t>::max();
    for (const auto& t : members) v = std::min(v, t.oldest_version());
    return v;
  }
};

}  // namespace ember::rl
