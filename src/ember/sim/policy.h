// What closed-loop evaluation and demonstration collection drive: a policy that, given the
// observations of some environments, returns an action chunk for each. A chunk is executed
// open loop for up to `replan_steps` steps (evaluate.h), then the policy is asked again.
//
// A learned policy (the lead's VLA, `ember eval --checkpoint DIR`) implements this interface:
// batch the inputs (images, state, instruction), run inference, return chunks of LIBERO
// actions in [-1, 1]. The scripted experts (expert.h) implement it too, with chunks of one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/sim/env.h"
#include "ember/sim/tasks.h"

namespace ember::sim {

using ActionChunk = std::vector<Action>;  // [chunk_len][7], chunk_len >= 1

struct EpisodeStart {
  const TaskSpec* task = nullptr;  // task->instruction is the language prompt
  int init_index = 0;
  uint64_t seed = 0;               // per-episode seed (independent of the env slot)
};

struct PolicyInput {
  int env = 0;                     // the env slot (as in reset())
  const Observation* obs = nullptr;
  const TaskSpec* task = nullptr;  // task->instruction
  int step = 0;                    // control steps taken in this episode so far
};

class Policy {
 public:
  virtual ~Policy() = default;
  // Env slot `env` starts a new episode; called before the first act() that includes it.
  virtual void reset(int env, const EpisodeStart& episode) { (void)env, (void)episode; }
  // One chunk per input, in order. Called from one thread at a time; inputs are only valid
  // during the call. Throwing aborts the evaluation with that error.
  virtual std::vector<ActionChunk> act(const std::vector<PolicyInput>& inputs) = 0;
  // The non-blocking form that run_rollouts drives: submit() asks for the inputs' chunks (inputs
  // only valid during the call), poll() returns those answered so far as (env, chunk), waiting
  // for at least one when `wait` and some are pending. run_rollouts steps the envs that have
  // actions while the others wait for theirs (held: not stepped). The default answers at once
  // through act(), so a blocking policy steps all its envs together.
  virtual void submit(const std::vector<PolicyInput>& inputs);
  virtual std::vector<std::pair<int, ActionChunk>> poll(bool wait);
  // Whether act() needs camera images (false lets evaluation skip rendering when no video is
  // written either).
  virtual bool needs_images() const { return true; }
  // A short name for reports (eval.json's "policy").
  virtual std::string name() const { return "policy"; }

 private:
  std::vector<std::pair<int, ActionChunk>> answered_;  // the default submit()'s, until poll()
};

// Policies by name, for `ember eval --policy NAME` (and `--checkpoint DIR`, which asks for
// "checkpoint"). "expert" is built in; the neural policy registers itself (for example from
// the CLI's startup, before parsing) with register_policy("checkpoint", factory).
struct PolicyArgs {
  std::string checkpoint;          // --checkpoint DIR ("" for the expert)
  std::string tokenizer_path;      // --policy.tokenizer_path (a LeRobot directory needs one)
  std::string rename_map;          // --rename_map: JSON, simulator camera -> the policy's camera
  std::string device;              // --device ("" : the factory's default)
  int image_size = 128;            // the cameras' size in this evaluation
  uint64_t seed = 0;
  bool cuda_graphs = true;         // --cuda_graphs: a checkpoint's sampler replayed from CUDA graphs (train/sampler.h)
  int flow_steps = 0;              // --policy.num_steps: a checkpoint's denoising steps (0: its own)
};
using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicyArgs&)>;
// Thread-safe; a later registration of the same name replaces the earlier one.
void register_policy(const std::string& name, PolicyFactory factory);
// Throws kInvalidArgument naming --policy when no policy of that name is registered.
std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyArgs& args);
std::vector<std::string> policy_names();

}  // namespace ember::sim
