#include "ember/train/train_setup.h"

#include <algorithm>

#include "ember/core/error.h"
#include "ember/model/processor.h"

namespace ember::train {

model::FeatureRules feature_rules(const TrainConfig& c) {
  model::FeatureRules r;
  if (c.policy.normalization != "auto") r.mode = data::parse_norm_mode(c.policy.normalization, "--policy.normalization");
  r.state_in_prompt = c.policy.state_in_prompt;
  r.loss_on_padded_steps = c.policy.loss_on_padded_steps;
  return r;
}

std::shared_ptr<const model::PolicyArch> make_arch(const TrainConfig& c, int vocab) {
  model::ShapeOptions o;
  o.preset = c.policy.preset;
  o.horizon = int(c.policy.horizon);
  o.max_action_dim = int(c.policy.max_action_dim);
  o.flow_steps = int(c.policy.num_steps);
  if (c.dataset.image_size) o.image_size = int(*c.dataset.image_size);
  o.vocab = vocab;
  o.dropout = c.policy.dropout;
  return model::policy_type(c.policy.type).from_preset(o);
}

model::Tokenizer make_tokenizer(const TrainConfig& c, const data::Metadata& meta,
                                const std::optional<std::filesystem::path>& resume_dir, int max_vocab) {
  if (resume_dir) {  // the checkpoint's tokenizer.model or tokenizer.json (neither: kNotFound naming tokenizer.model)
    const std::string file = model::find_tokenizer_file(resume_dir->string());
    return model::Tokenizer::load(file.empty() ? (*resume_dir / "tokenizer.model").string() : file);
  }
  if (c.policy.tokenizer_path) return model::Tokenizer::load(*c.policy.tokenizer_path);
  model::TokenizerTrainOptions o;
  o.vocab_size = c.policy.preset == "tiny" ? 512 : 2048;
  if (max_vocab > 0) o.vocab_size = std::min(2048, max_vocab);  // an imported policy's embedding bounds it
  return model::train_tokenizer(model::tokenizer_training_texts(meta), o);
}

}  // namespace ember::train
