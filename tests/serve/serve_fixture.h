// What the serve tests share: a fresh tiny policy of each registered type with the fixture
// dataset's features (tests/fixtures/lerobot_v3_0: cameras top and wrist, state 8, action 7),
// written as a checkpoint, and observations of the fixture's frames in openpi's LIBERO keys.
#pragma once

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "ember/data/dataset.h"
#include "ember/data/metadata.h"
#include "ember/model/policy_type.h"
#include "ember/model/processor.h"
#include "ember/serve/codec.h"
#include "ember/train/policy_checkpoint.h"
#include "test_util.h"

namespace ember::serve::test_fixture {

inline const std::string kFixture = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";

// A checkpoint directory of a fresh (seeded, untrained) tiny policy of `type`: chunk 10, 3
// denoising steps, 32 px cameras. Made once per type per process.
inline const std::string& checkpoint(const std::string& type = "pi05") {
  static std::map<std::string, std::unique_ptr<test::TempDir>> dirs;
  auto& dir = dirs[type];
  if (dir) return dir->path();
  dir = std::make_unique<test::TempDir>("serve_policy_" + type);
  auto meta = data::load_metadata(kFixture);
  train::PolicyBundle b;
  model::TokenizerTrainOptions to;
  to.vocab_size = 512;
  b.tokenizer = std::make_unique<model::Tokenizer>(model::train_tokenizer(model::tokenizer_training_texts(meta), to));
  model::ShapeOptions so;
  so.preset = "tiny", so.horizon = 10, so.flow_steps = 3, so.image_size = 32, so.vocab = b.tokenizer->vocab_size();
  b.arch = model::policy_type(type).from_preset(so);
  b.spec = model::feature_spec(meta, b.arch->base());
  if (auto fitted = b.arch->fit_features(b.spec, kFixture, false)) b.arch = fitted;
  b.shape = b.arch->base();
  at::manual_seed(11);
  b.module = b.arch->build({}, at::kCPU);
  b.module->eval();
  train::write_policy_files(dir->path(), b);
  return dir->path();
}

inline std::string float_bytes(const std::vector<float>& x) { return std::string(reinterpret_cast<const char*>(x.data()), x.size() * 4); }

// The fixture's frame `index` as the policy's processor reads it from the dataset (cameras at the
// decoder's size for this policy), as an observation in openpi's LIBERO keys.
inline Field frame_observation(const train::PolicyBundle& b, int64_t index) {
  model::SampleBuilder builder(b.spec, b.shape, *b.tokenizer);
  data::Dataset dataset(data::load_metadata(kFixture), builder.dataset_options());
  const auto item = dataset.get(index);
  Field obs = Field::map();
  const char* keys[] = {"observation/image", "observation/wrist_image"};
  for (size_t c = 0; c < 2; ++c) {
    const auto& im = item.images.at(b.spec.cameras[c]).front();
    obs.set(keys[c], Field::ndarray("|u1", {im.height, im.width, 3}, std::string(im.rgb.begin(), im.rgb.end())));
  }
  const auto& v = item.values.at(b.spec.state_key).data;
  obs.set("observation/state", Field::ndarray("<f4", {int64_t(v.size())}, float_bytes(std::vector<float>(v.begin(), v.end()))));
  obs.set("prompt", Field::text(item.task));
  return obs;
}

// noise [H, A] as an observation's "noise" value
inline Field noise_field(const at::Tensor& noise) {
  auto n = noise.to(at::kFloat).contiguous();
  return Field::ndarray("<f4", {n.size(0), n.size(1)}, std::string(static_cast<const char*>(n.data_ptr()), size_t(n.numel()) * 4));
}

// a reply's actions [H, A] as rows
inline std::vector<std::vector<float>> actions_of(const Field& reply) {
  const Field* a = reply.find("actions");
  std::vector<std::vector<float>> rows;
  if (!a || a->kind != Field::Kind::kNdArray || a->dtype != "<f4" || a->shape.size() != 2) return rows;
  for (int64_t h = 0; h < a->shape[0]; ++h) {
    std::vector<float> row(size_t(a->shape[1]));
    std::memcpy(row.data(), a->bytes.data() + size_t(h * a->shape[1]) * 4, row.size() * 4);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace ember::serve::test_fixture
