// Inputs, stored chains and tiny policies for the learner's tests (rl_test, prefix_reuse_test):
// everything on the CPU, drawn from the current torch generator or the seeds given.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/model/policy_inputs.h"
#include "ember/model/policy_type.h"
#include "ember/rl/flow_noise.h"
#include "ember/rl/trajectory.h"
#include "ember/train/policy_checkpoint.h"

namespace ember::rl {

// pi0.5's tiny preset at 16 px, horizon 4, 3 flow steps, 9 action dims (7 real + 2 padded)
model::PolicyShape tiny_shape();
// n samples of two cameras and a short prompt (salt varies it); state_dim > 0: each carries a
// state (GR00T's state token reads it)
std::vector<model::PolicySample> samples(const model::PolicyShape& shape, int n, int salt = 0, int64_t state_dim = 0);
// the samples collated in the varlen layout
model::PolicyInputs inputs(const model::PolicyShape& shape, const std::vector<model::PolicySample>& s);
std::vector<uint64_t> seeds(int n, uint64_t base = 7);
// Groups of stored chains sampled from the policy, with the given returns (a group per list,
// a trajectory of two chunks per return).
std::vector<Group> groups(model::PolicyModuleImpl& policy, const FlowNoise& noise, const std::vector<std::vector<double>>& returns,
                          int64_t state_dim = 0, NoiseHeadImpl* head = nullptr);
// a pi0.5 policy of the shape, its weights drawn from `seed`
train::PolicyBundle bundle_of(const model::PolicyShape& shape, uint64_t seed);
// A tiny policy of a registered type, in eval mode, on states and actions of 7 dims (padded to
// max_action_dim), its weights drawn from `seed`.
train::PolicyBundle tiny_of_type(const model::PolicyType& type, int max_action_dim, uint64_t seed);

}  // namespace ember::rl
