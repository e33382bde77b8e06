#include "ember/train/predict.h"

#include <ATen/core/grad_mode.h>

#include "ember/core/error.h"
#include "ember/train/cuda_setup.h"

namespace ember::train {

Prediction predict_chunk(PolicyBundle& b, const std::string& root, int64_t index, const at::Device& device, uint64_t seed) {
  model::SampleBuilder builder(b.spec, b.shape, *b.tokenizer);
  data::Dataset dataset(root, builder.dataset_options());
  for (const auto& cam : b.spec.cameras)
    if (!dataset.meta().info.find(cam))
      throw Error(ErrorKind::kInvalidArgument, "dataset " + root + " has no camera '" + cam + "', which the checkpoint was trained with");
  if (index < 0 || index >= dataset.size())
    throw Error(ErrorKind::kInvalidArgument, "--index " + std::to_string(index) + ": the dataset has frames 0.." + std::to_string(dataset.size() - 1));
  auto item = dataset.get(index);
  auto sample = builder.build(item, /*with_actions=*/false);
  std::vector<const model::PolicySample*> one{&sample};
  auto in = model::collate(one, b.shape, model::AttentionBackend::kVarlen).to(device);
  at::manual_seed(seed);
  at::NoGradGuard no_grad;
  Bf16Autocast bf16(device.is_cuda());
  auto actions = b.policy->sample_actions(in);  // [1, H, A]
  Prediction p;
  p.task = item.task;
  p.predicted = builder.unnormalize_actions(actions[0]);
  const auto& v = item.values.at(b.spec.action_key);
  for (int64_t h = 0; h < b.shape.horizon; ++h)
    p.recorded.emplace_back(v.data.begin() + h * b.spec.action_dim, v.data.begin() + (h + 1) * b.spec.action_dim);
  p.recorded_is_pad = item.is_pad.at(b.spec.action_key);
  return p;
}

}  // namespace ember::train
