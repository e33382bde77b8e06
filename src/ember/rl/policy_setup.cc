#include "ember/rl/policy_setup.h"

#include "ember/core/error.h"
#include "ember/model/policy_type.h"
#include "ember/model/prompt.h"
#include "ember/sim/features.h"

namespace ember::rl {

namespace {

train::PolicyBundle fresh_policy(const RlConfig& c, const std::vector<const sim::TaskSpec*>& tasks, const at::Device& device) {
  train::PolicyBundle b;
  std::vector<float> state;
  for (int bin = 0; bin < 256; ++bin) state.push_back(-1.0f + (bin + 0.5f) / 128.0f);
  std::vector<std::string> texts;
  for (const auto* t : tasks) texts.push_back(model::pi05_prompt_text(t->instruction, state));
  model::TokenizerTrainOptions to;
  to.vocab_size = c.policy.preset == "tiny" ? 512 : 2048;
  b.tokenizer = std::make_unique<model::Tokenizer>(model::train_tokenizer(texts, to));
  b.spec.cameras = {sim::kAgentviewKey, sim::kWristKey};
  b.spec.state_key = sim::kStateKey;
  b.spec.action_key = sim::kActionKey;
  b.spec.state_dim = sim::kStateDim;
  b.spec.action_dim = sim::kActionDim;
  b.spec.fps = 20;
  b.spec.modes[sim::kStateKey] = data::NormMode::kIdentity;
  b.spec.modes[sim::kActionKey] = data::NormMode::kIdentity;
  model::ShapeOptions o;
  o.preset = c.policy.preset;
  o.horizon = int(c.policy.horizon);
  o.flow_steps = int(c.policy.num_steps);
  o.max_action_dim = sim::kActionDim;
  o.image_size = int(c.image_size);
  o.image_size_flag = "--policy.image_size";
  o.vocab = b.tokenizer->vocab_size();
  const auto& type = model::policy_type(c.policy.type);
  model::check_preset(type, c.policy.preset, "--policy.preset");
  b.arch = type.from_preset(o);
  if (auto fitted = b.arch->fit_features(b.spec, "ember's simulator", false)) b.arch = fitted;
  b.shape = b.arch->base();
  at::manual_seed(uint64_t(c.seed));
  b.module = b.arch->build({}, device);
  b.module->eval();
  return b;
}

}  // namespace

train::PolicyBundle starting_policy(const RlConfig& c, const std::vector<const sim::TaskSpec*>& tasks, const at::Device& device) {
  if (c.checkpoint.empty()) {
    auto b = fresh_policy(c, tasks, device);
    train::use_flow_steps(b, int(c.denoise_steps), device, "--rl.denoise_steps");
    return b;
  }
  auto b = train::load_policy(c.checkpoint, device);
  train::use_flow_steps(b, int(c.denoise_steps), device, "--rl.denoise_steps");
  for (const auto& cam : b.spec.cameras)
    if (cam != sim::kAgentviewKey && cam != sim::kWristKey && cam.find("empty_camera_") == std::string::npos)
      throw Error(ErrorKind::kInvalidArgument, c.checkpoint + ": the policy reads camera '" + cam + "', which ember's simulator does not have");
  if (b.spec.action_dim != sim::kActionDim)
    throw Error(ErrorKind::kInvalidArgument, c.checkpoint + ": the policy's actions have " + std::to_string(b.spec.action_dim) +
                                                 " dimensions, the simulator's " + std::to_string(sim::kActionDim));
  return b;
}

}  // namespace ember::rl
