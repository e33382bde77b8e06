#include "ember/train/train_setup.h"

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

model::Tokenizer make_tokenizer(const TrainConfig& c, const data::Metadata& meta,
                                const std::optional<std::filesystem::path>& resume_dir) {
  if (resume_dir) return model::Tokenizer::load((*resume_dir / "tokenizer.model").string());
  if (c.policy.tokenizer_path) return model::Tokenizer::load(*c.policy.tokenizer_path);
  model::TokenizerTrainOptions o;
  o.vocab_size = c.policy.preset == "tiny" ? 512 : 2048;
  return model::train_tokenizer(model::tokenizer_training_texts(meta), o);
}

}  // namespace ember::train
