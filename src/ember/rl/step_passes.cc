#include "ember/rl/step_passes.h"

#include <chrono>

namespace ember::rl {

StepPasses::StepPasses(Learner& learner, const PassOptions& options, double lr_scale, int64_t& learner_ns)
    : learner_(learner), options_(options), lr_scale_(lr_scale), learner_ns_(learner_ns) {}

template <class F>
void StepPasses::timed(F&& fn) {
  const auto t = std::chrono::steady_clock::now();
  fn();
  learner_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t).count();
}

void StepPasses::learn() {
  timed([&] { pass_.push_back(learner_.step(lr_scale_)); });
  micro_batches_ += pass_.back().micro_batches;
}

void StepPasses::stream(const Group& group, int64_t used) {
  timed([&] { learner_.accumulate(group); });
  if (used == part(int64_t(pass_.size()) + 1)) learn();
}

StepStats StepPasses::finish(const std::vector<Group>& batch, bool streamed, int64_t& epochs) {
  std::vector<StepStats> stepped;  // the last pass that stepped
  bool stopped = false;
  for (int64_t e = 0; e < options_.epochs && !stopped; ++e) {
    if (e > 0 || !streamed) {
      pass_.clear();
      for (int64_t k = 0; k < options_.minibatches && !stopped; ++k) {
        for (int64_t i = part(k); i < part(k + 1); ++i) timed([&] { learner_.accumulate(batch[size_t(i)]); });
        if (e > 0 && options_.target_kl > 0) timed([&] { stopped = learner_.pass_kl() > options_.target_kl; });
        if (stopped) {
          timed([&] { learner_.discard(); });
          break;
        }
        learn();
      }
    }
    if (pass_.empty()) break;
    stepped = pass_;
    ++epochs;
  }
  StepStats out = combine(stepped);
  out.micro_batches = micro_batches_;
  return out;
}

}  // namespace ember::rl
