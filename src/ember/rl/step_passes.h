#pragma once
// One `ember rl` step's optimizer steps over its groups (rl_loop.cc): --rl.minibatches optimizer
// steps per pass (mini-batch k: the groups [k n / M, (k + 1) n / M) in the order learned),
// --rl.epochs passes, and --rl.target_kl's early stop of the later passes (PPO's): a mini-batch
// that finds the weights already that far from the sampling policy is dropped without a step, and
// the passes end there. Async streams the first pass into the learner as the groups arrive
// (stream); finish runs the passes still to run over the step's complete groups.

#include <cstdint>
#include <vector>

#include "ember/rl/learner.h"
#include "ember/rl/trajectory.h"

namespace ember::rl {

struct PassOptions {
  int64_t groups = 1;       // the step's groups on this rank
  int64_t minibatches = 1;  // optimizer steps per pass
  int64_t epochs = 1;       // passes
  double target_kl = 0;     // > 0: the early stop of the passes after the first
};

class StepPasses {
 public:
  // lr_scale: the step's learning-rate factor (warm-ups); learner_ns: the learner's busy time,
  // which every call here adds to
  StepPasses(Learner& learner, const PassOptions& options, double lr_scale, int64_t& learner_ns);

  // async: the step's used-th group (from 1) into the first pass, an optimizer step at the end of
  // each mini-batch
  void stream(const Group& group, int64_t used);

  // The passes still to run over the step's groups, in batch's order (streamed: the first pass
  // was streamed, so the later ones). Returns the step's figures: the last pass that stepped,
  // combined (learner.h), with the micro-batches of all passes; epochs: the passes that stepped.
  StepStats finish(const std::vector<Group>& batch, bool streamed, int64_t& epochs);

 private:
  template <class F>
  void timed(F&& fn);
  void learn();
  int64_t part(int64_t k) const { return k * options_.groups / options_.minibatches; }

  Learner& learner_;
  PassOptions options_;
  double lr_scale_;
  int64_t& learner_ns_;
  std::vector<StepStats> pass_;  // the optimizer steps of the pass under way
  int64_t micro_batches_ = 0;    // of all passes
};

}  // namespace ember::rl
