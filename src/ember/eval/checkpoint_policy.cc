#include "ember/eval/checkpoint_policy.h"

#include <torch/cuda.h>

#include <algorithm>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/device.h"
#include "ember/sim/features.h"

namespace ember::eval {

using namespace ember::train;

namespace {

io::Image camera_image(const sim::Observation& obs, const std::vector<uint8_t>& rgb) {
  io::Image im;
  im.width = obs.width;
  im.height = obs.height;
  im.rgb = rgb;
  return im;
}

}  // namespace

data::Item observation_item(const sim::Observation& obs, const std::string& instruction, const std::string& state_key) {
  if (obs.width == 0) throw Error(ErrorKind::kInternal, "a policy input came without camera images");
  data::Item item;
  item.task = instruction;
  data::Value state;
  state.dtype = "float32";
  state.shape = {int64_t(obs.state.size())};
  state.data.assign(obs.state.begin(), obs.state.end());
  item.values[state_key] = state;
  item.images[sim::kAgentviewKey] = {camera_image(obs, obs.agentview)};
  item.images[sim::kWristKey] = {camera_image(obs, obs.wrist)};
  return item;
}

sim::ActionChunk action_chunk(const model::SampleBuilder& builder, const at::Tensor& actions) {
  sim::ActionChunk chunk;
  for (const auto& row : builder.unnormalize_actions(actions)) {
    sim::Action a{};
    for (size_t d = 0; d < a.size(); ++d) a[d] = std::clamp(row[d], -1.0f, 1.0f);
    chunk.push_back(a);
  }
  return chunk;
}

CheckpointSimPolicy::CheckpointSimPolicy(const std::string& checkpoint, const std::string& device, uint64_t seed,
                                         const std::string& tokenizer_path, const std::string& rename_map, bool cuda_graphs,
                                         int flow_steps)
    : device_(model::resolve_device(device)) {
  const auto rename = rename_map.empty() ? std::map<std::string, std::string>{} : parse_rename_map(rename_map, "--rename_map");
  bundle_ = load_policy(checkpoint, device_, tokenizer_path.empty() ? std::nullopt : std::optional<std::string>(tokenizer_path));
  train::use_flow_steps(bundle_, flow_steps, device_, "--policy.num_steps");
  bundle_.spec.set_camera_sources(
      rename, [](const std::string& key) { return key == sim::kAgentviewKey || key == sim::kWristKey; },
      std::string("the simulator (cameras ") + sim::kAgentviewKey + ", " + sim::kWristKey + ")");
  for (const auto& cam : bundle_.spec.cameras)
    if (cam != sim::kAgentviewKey && cam != sim::kWristKey && cam.find("empty_camera_") == std::string::npos &&
        !bundle_.spec.camera_sources.count(cam))
      throw Error(ErrorKind::kInvalidArgument, checkpoint + ": the policy reads camera '" + cam +
                                                   "', which ember's simulator does not have (--rename_map maps " +
                                                   sim::kAgentviewKey + " or " + sim::kWristKey + " to it)");
  if (bundle_.spec.action_dim != sim::kActionDim)
    throw Error(ErrorKind::kInvalidArgument, checkpoint + ": the policy's actions have " + std::to_string(bundle_.spec.action_dim) +
                                                 " dimensions, the simulator's " + std::to_string(sim::kActionDim));
  builder_ = std::make_unique<model::SampleBuilder>(bundle_.spec, bundle_.shape, *bundle_.tokenizer);
  sampler_ = std::make_unique<train::Sampler>(*bundle_.module, bundle_.shape, device_, train::SamplerOptions{.cuda_graphs = cuda_graphs, .bf16_weights = cuda_graphs});
  at::manual_seed(seed);
}

std::vector<sim::ActionChunk> act_with(train::Sampler& sampler, const model::SampleBuilder& builder, const std::string& state_key,
                                       const std::vector<sim::PolicyInput>& inputs) {
  std::vector<model::PolicySample> samples;
  for (const auto& in : inputs) samples.push_back(builder.build(observation_item(*in.obs, in.task->instruction, state_key), false));
  std::vector<const model::PolicySample*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  // the noise from the device's generator, seeded once when the policy was loaded
  auto actions = sampler.sample(ptrs);  // [n, H, A]
  std::vector<sim::ActionChunk> chunks;
  for (int64_t i = 0; i < actions.size(0); ++i) chunks.push_back(action_chunk(builder, actions[i]));
  return chunks;
}

std::vector<sim::ActionChunk> CheckpointSimPolicy::act(const std::vector<sim::PolicyInput>& inputs) {
  return act_with(*sampler_, *builder_, bundle_.spec.state_key, inputs);
}

void register_checkpoint_sim_policy() {
  sim::register_policy("checkpoint", [](const sim::PolicyArgs& a) -> std::unique_ptr<sim::Policy> {
    return std::make_unique<CheckpointSimPolicy>(a.checkpoint, a.device, a.seed, a.tokenizer_path, a.rename_map, a.cuda_graphs, a.flow_steps);
  });
}

}  // namespace ember::eval
