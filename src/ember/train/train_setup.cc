#include "ember/train/train_setup.h"

#include <algorithm>

#include "ember/core/error.h"
#include "ember/model/processor.h"

namespace ember::train {

model::PolicyShape make_shape(const TrainConfig& c, int vocab) {
  auto s = model::preset_shape(c.policy.preset);
  s.horizon = int(c.policy.horizon);
  s.max_action_dim = int(c.policy.max_action_dim);
  s.flow_steps = int(c.policy.num_steps);
  if (c.dataset.image_size) {
    s.vision.image_size = int(*c.dataset.image_size);
    if (s.vision.image_size % s.vision.patch)
      throw Error(ErrorKind::kInvalidArgument, "--dataset.image_size=" + std::to_string(*c.dataset.image_size) +
                                                   ": must be a multiple of the preset's patch size " + std::to_string(s.vision.patch));
  }
  s.vocab = vocab;
  model::validate(s);
  return s;
}

model::GrootShape make_groot_shape(const TrainConfig& c, int vocab) {
  auto g = model::groot_preset_shape(c.policy.preset);
  auto& s = g.base;
  s.horizon = int(c.policy.horizon);
  s.max_action_dim = int(c.policy.max_action_dim);
  s.flow_steps = int(c.policy.num_steps);
  g.max_seq_len = std::max(g.max_seq_len, s.horizon);
  if (c.dataset.image_size) {
    s.vision.image_size = int(*c.dataset.image_size);
    if (s.vision.image_size % (s.vision.patch * s.vision.merge))
      throw Error(ErrorKind::kInvalidArgument, "--dataset.image_size=" + std::to_string(*c.dataset.image_size) +
                                                   ": must be a multiple of the preset's patch size x merge " +
                                                   std::to_string(s.vision.patch * s.vision.merge));
  }
  s.vocab = vocab;
  for (auto& e : g.embodiments) e.action_dim = std::min(e.action_dim, s.max_action_dim);
  model::validate(g);
  return g;
}

void with_dataset_embodiment(model::GrootShape& shape, const model::FeatureSpec& spec, const std::string& root, bool resumed) {
  auto& e = shape.embodiments.at(0);
  const model::GrootEmbodiment want{int(spec.state_dim), int(spec.action_dim)};
  if (resumed && (e.state_dim != want.state_dim || e.action_dim != want.action_dim))
    throw Error(ErrorKind::kInvalidArgument, "dataset " + root + ": state/action widths " + std::to_string(want.state_dim) + "/" +
                                                 std::to_string(want.action_dim) + ", the checkpoint's embodiment 0 has " +
                                                 std::to_string(e.state_dim) + "/" + std::to_string(e.action_dim));
  e = want;
  model::validate(shape);
}

model::Tokenizer make_tokenizer(const TrainConfig& c, const data::Metadata& meta,
                                const std::optional<std::filesystem::path>& resume_dir) {
  if (resume_dir) return model::Tokenizer::load((*resume_dir / "tokenizer.model").string());
  if (c.policy.tokenizer_path) return model::Tokenizer::load(*c.policy.tokenizer_path);
  model::TokenizerTrainOptions o;
  o.vocab_size = c.policy.preset == "tiny" ? 512 : 2048;
  return model::train_tokenizer(model::tokenizer_training_texts(meta), o);
}

}  // namespace ember::train
