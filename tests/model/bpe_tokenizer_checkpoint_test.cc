// A byte-level BPE tokenizer goes through a policy checkpoint: written as tokenizer.json,
// read back by load_policy (tests/fixtures/bpe_tiny, a tiny pi0.5 policy on the lerobot_v3_0
// fixture's features).
#include <ATen/ATen.h>

#include <filesystem>
#include <string>

#include "ember/core/json_file.h"
#include "ember/data/metadata.h"
#include "ember/model/policy_type.h"
#include "ember/model/processor.h"
#include "ember/model/tokenizer.h"
#include "ember/train/policy_checkpoint.h"
#include "test_util.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;

TEST(BpeTokenizerCheckpoint, WrittenAsTokenizerJsonAndReadBack) {
  const std::string dataset = std::string(EMBER_TEST_DATA) + "/lerobot_v3_0";
  const fs::path fixture = fs::path(EMBER_TEST_DATA) / "bpe_tiny";
  test::TempDir dir("bpe_checkpoint");
  auto meta = data::load_metadata(dataset);
  PolicyBundle b;
  b.tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::load((fixture / "tokenizer.json").string()));
  model::ShapeOptions so;
  so.preset = "tiny", so.horizon = 4, so.flow_steps = 2, so.image_size = 32, so.vocab = b.tokenizer->vocab_size();
  b.arch = model::policy_type("pi05").from_preset(so);
  b.spec = model::feature_spec(meta, b.arch->base());
  b.shape = b.arch->base();
  b.module = b.arch->build({}, at::kCPU);
  write_policy_files(dir.path(), b);
  EXPECT_TRUE(fs::exists(fs::path(dir.path()) / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "tokenizer.model"));

  PolicyBundle loaded = load_policy(dir.path(), at::kCPU);
  ASSERT_TRUE(loaded.tokenizer->is_bpe());
  EXPECT_EQ(loaded.tokenizer->eos_id(), b.tokenizer->eos_id());
  EXPECT_EQ(loaded.tokenizer->vocab_size(), b.tokenizer->vocab_size());
  const auto expected = read_json_file((fixture / "expected.json").string());
  for (const auto& c : expected["qwen2"])
    EXPECT_EQ(loaded.tokenizer->encode(c["text"].get<std::string>()), c["ids"].get<std::vector<int>>()) << c["text"];
}

}  // namespace
}  // namespace ember::train
