#include "learner_util.h"

#include "ember/model/pi05.h"

namespace ember::rl {

model::PolicyShape tiny_shape() {
  auto s = model::preset_shape("tiny");
  s.vision.image_size = 16;
  s.horizon = 4;
  s.flow_steps = 3;
  s.max_action_dim = 9;  // 7 real + 2 padded dims
  model::validate(s);
  return s;
}

std::vector<model::PolicySample> samples(const model::PolicyShape& shape, int n, int salt, int64_t state_dim) {
  std::vector<model::PolicySample> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& s = out[size_t(i)];
    for (int c = 0; c < 2; ++c) {
      s.images.push_back(at::rand({3, shape.vision.image_size, shape.vision.image_size}) * 2 - 1);
      s.camera_slots.push_back(c);
    }
    s.prompt.push_back(2);
    for (int j = 0; j < 4 + i % 3; ++j) s.prompt.push_back((salt * 31 + i * 13 + j * 5) % shape.vocab);
    if (state_dim > 0) s.state = at::rand({state_dim}) * 2 - 1;
  }
  return out;
}

model::PolicyInputs inputs(const model::PolicyShape& shape, const std::vector<model::PolicySample>& s) {
  std::vector<const model::PolicySample*> p;
  for (const auto& x : s) p.push_back(&x);
  return model::collate(p, shape, model::AttentionBackend::kVarlen);
}

std::vector<uint64_t> seeds(int n, uint64_t base) {
  std::vector<uint64_t> s;
  for (int i = 0; i < n; ++i) s.push_back(base + uint64_t(i) * 1000);
  return s;
}

std::vector<Group> groups(model::PolicyModuleImpl& policy, const FlowNoise& noise, const std::vector<std::vector<double>>& returns,
                          int64_t state_dim, NoiseHeadImpl* head) {
  std::vector<Group> out;
  int salt = 0;
  for (const auto& rs : returns) {
    Group g;
    g.id = int64_t(out.size());
    for (double r : rs) {
      Trajectory t;
      t.ret = r;
      t.success = r > 0.5;
      auto s = samples(policy.base_shape(), 2, ++salt, state_dim);
      Chain c = sample_chain(policy, inputs(policy.base_shape(), s), noise, seeds(2, uint64_t(salt) * 77), head);
      for (int j = 0; j < 2; ++j)
        t.chunks.push_back({s[size_t(j)], c.x[j], c.log_prob[j], c.noisy_step.defined() ? c.noisy_step[j].item<int64_t>() : -1, 0});
      g.members.push_back(std::move(t));
    }
    out.push_back(std::move(g));
  }
  return out;
}

train::PolicyBundle bundle_of(const model::PolicyShape& shape, uint64_t seed) {
  at::manual_seed(seed);
  train::PolicyBundle b;
  b.shape = shape;
  b.arch = model::pi05_arch(shape);
  b.module = b.arch->build({}, at::kCPU);
  return b;
}

train::PolicyBundle tiny_of_type(const model::PolicyType& type, int max_action_dim, uint64_t seed) {
  model::ShapeOptions o;
  o.preset = "tiny";
  o.horizon = 4;
  o.flow_steps = 3;
  o.max_action_dim = max_action_dim;
  o.image_size = 16;
  o.vocab = tiny_shape().vocab;
  model::FeatureSpec spec;
  spec.state_dim = 7;
  spec.action_dim = 7;
  train::PolicyBundle b;
  b.arch = type.from_preset(o);
  if (auto fitted = b.arch->fit_features(spec, "test", false)) b.arch = fitted;
  b.shape = b.arch->base();
  at::manual_seed(seed);
  b.module = b.arch->build({}, at::kCPU);
  b.module->eval();
  return b;
}

}  // namespace ember::rl
