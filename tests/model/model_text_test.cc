// The SentencePiece tokenizer wrapper and pi0.5's prompt: training on a dataset's task
// strings, save/load, lossless round trips, state discretisation and the exact prompt text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "ember/core/error.h"
#include "ember/data/metadata.h"
#include "ember/model/prompt.h"
#include "ember/model/tokenizer.h"

namespace ember::model {
namespace {

const std::string kData = EMBER_TEST_DATA;

std::string temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("ember_model_text_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

// the fixture's task strings plus a few more, as a policy's training run would collect them
std::vector<std::string> training_texts() {
  std::vector<std::string> texts = data::load_metadata(kData + "/lerobot_v2_1").tasks;
  EXPECT_EQ(texts.size(), 3u);
  for (std::string s : {"stack the green block on the yellow block", "close the drawer slowly",
                        "wipe the table with the sponge", "put the spoon next to the plate",
                        "Task: pick up the cube, State: 0 128 255;\nAction: "}) {
    texts.push_back(s);
  }
  return texts;
}

const Tokenizer& trained() {
  static const Tokenizer tokenizer = train_tokenizer(training_texts(), {.vocab_size = 400});
  return tokenizer;
}

TEST(Tokenizer, TrainsOnTaskStringsWithGemmaSpecialIds) {
  const Tokenizer& t = trained();
  EXPECT_GT(t.vocab_size(), 260);  // 4 special + 256 bytes + pieces
  EXPECT_LE(t.vocab_size(), 400);
  EXPECT_EQ(t.pad_id(), 0);
  EXPECT_EQ(t.eos_id(), 1);
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.unk_id(), 3);
  std::vector<int> ids = t.encode("open the top drawer");
  EXPECT_FALSE(ids.empty());
  EXPECT_LT(ids.size(), 19u);  // merges were learnt: fewer tokens than bytes
}

TEST(Tokenizer, ShrinksVocabularyTooLargeForTheText) {
  std::vector<std::string> few = {"open the drawer", "close the drawer"};
  Tokenizer t = train_tokenizer(few, {.vocab_size = 5000});
  EXPECT_LT(t.vocab_size(), 5000);
  EXPECT_EQ(t.decode(t.encode("close the drawer")), "close the drawer");
}

TEST(Tokenizer, VocabularyTooLargeFailsClearlyWithoutShrinking) {
  std::vector<std::string> few = {"open the drawer", "close the drawer"};
  try {
    train_tokenizer(few, {.vocab_size = 5000, .shrink_vocab_to_fit = false});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("vocab_size 5000"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, VocabularySmallerThanBytesAndCharsFailsClearly) {
  std::vector<std::string> few = {"open the drawer", "close the drawer"};
  try {
    train_tokenizer(few, {.vocab_size = 100});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab_size 100"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, EmptyTrainingTextFails) {
  EXPECT_THROW(train_tokenizer(std::vector<std::string>{}), Error);
}

TEST(Tokenizer, UnigramTrains) {
  Tokenizer t = train_tokenizer(training_texts(),
                                {.algorithm = TokenizerTrainOptions::Algorithm::kUnigram,
                                 .vocab_size = 300});
  EXPECT_EQ(t.decode(t.encode("wipe the table")), "wipe the table");
}

TEST(Tokenizer, SaveLoadRoundTripGivesSameIds) {
  const std::string path = temp_dir() + "/tok.model";
  trained().save(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp-" + std::to_string(getpid())));
  Tokenizer loaded = Tokenizer::load(path);
  EXPECT_EQ(loaded.name(), path);
  EXPECT_EQ(loaded.vocab_size(), trained().vocab_size());
  EXPECT_EQ(loaded.serialized(), trained().serialized());
  for (const std::string& s : training_texts()) EXPECT_EQ(loaded.encode(s), trained().encode(s));
  EXPECT_EQ(loaded.encode("zebra xylophone 42"), trained().encode("zebra xylophone 42"));
  std::filesystem::remove(path);
}

TEST(Tokenizer, EncodeDecodeRoundTripIncludingUnicodeByByteFallback) {
  const Tokenizer& t = trained();
  for (std::string s : {"pick up the red cube and place it in the bowl",
                        "  two  spaces and\ttab\n", "Greif den Würfel 🤖 — 拿起杯子",
                        "Task: open_the drawer, State: 0 17 255;\nAction: ", ""}) {
    std::vector<int> ids = t.encode(s);
    for (int id : ids) EXPECT_NE(id, t.unk_id()) << s;
    EXPECT_EQ(t.decode(ids), s);
  }
}

TEST(Tokenizer, DecodeRejectsIdOutsideVocabulary) {
  std::vector<int> ids = {5, trained().vocab_size()};
  EXPECT_THROW(trained().decode(ids), Error);
}

TEST(Tokenizer, MissingModelFileNamesTheFile) {
  const std::string path = temp_dir() + "/no_such_tokenizer.model";
  try {
    Tokenizer::load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, GarbageModelFileNamesTheFile) {
  const std::string path = temp_dir() + "/garbage.model";
  FILE* f = fopen(path.c_str(), "wb");
  fputs("this is not a protobuf", f);
  fclose(f);
  try {
    Tokenizer::load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Prompt, DiscretisesAtBinEdges) {
  std::vector<float> state = {-1.0f, -0.99f, 0.0f, 0.999f, 1.0f, -1.0f + 1.0f / 128,
                              std::nextafter(-1.0f + 1.0f / 128, -2.0f), 0.5f};
  EXPECT_EQ(discretize_state(state), (std::vector<int>{0, 1, 128, 255, 255, 1, 0, 192}));
}

TEST(Prompt, OutOfRangeValuesClamp) {
  std::vector<float> state = {-1.5f, 2.0f, -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::infinity(),
                              std::nextafter(-1.0f, -2.0f)};
  EXPECT_EQ(discretize_state(state), (std::vector<int>{0, 255, 0, 255, 0}));
}

TEST(Prompt, NanStateNamesTheIndex) {
  std::vector<float> state = {0.0f, std::nanf("")};
  try {
    discretize_state(state);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("state[1]"), std::string::npos) << e.what();
  }
}

TEST(Prompt, CleansTaskLikeOpenpi) {
  EXPECT_EQ(clean_task("  Pick_up the\ncube \n"), "Pick up the cube");
  EXPECT_EQ(clean_task(""), "");
  EXPECT_EQ(clean_task("_x_"), " x ");  // strip comes before replacing '_'
}

TEST(Prompt, TextIsExactlyPi05Format) {
  std::vector<float> state = {-1.0f, 0.0f, 1.0f, 0.5f};
  EXPECT_EQ(pi05_prompt_text(" pick_up the cube\n", state),
            "Task: pick up the cube, State: 0 128 255 192;\nAction: ");
  EXPECT_EQ(pi05_prompt_text("wave", {}), "Task: wave, State: ;\nAction: ");
}

TEST(Prompt, TokensStartWithBosAndDecodeToTheText) {
  std::vector<float> state = {-1.0f, 0.0f, 1.0f};
  PromptTokens p = pi05_prompt_tokens(trained(), "open the top drawer", state, 200);
  ASSERT_GT(p.num_tokens, 1);
  EXPECT_EQ(p.num_tokens, static_cast<int>(p.ids.size()));
  EXPECT_EQ(p.full_tokens, p.num_tokens);
  EXPECT_FALSE(p.truncated());
  EXPECT_EQ(p.ids[0], trained().bos_id());
  EXPECT_EQ(trained().decode(p.ids), pi05_prompt_text("open the top drawer", state));
}

TEST(Prompt, LengthVariesPerSampleAndTruncationKeepsTheHead) {
  std::vector<float> state = {0.1f, 0.2f};
  PromptTokens shorter = pi05_prompt_tokens(trained(), "wave", state, 200);
  PromptTokens longer = pi05_prompt_tokens(trained(), "pick up the red cube and place it in the bowl",
                                           state, 200);
  EXPECT_LT(shorter.num_tokens, longer.num_tokens);

  PromptTokens cut = pi05_prompt_tokens(trained(), "pick up the red cube and place it in the bowl",
                                        state, 5);
  EXPECT_EQ(cut.num_tokens, 5);
  EXPECT_EQ(cut.full_tokens, longer.num_tokens);
  EXPECT_TRUE(cut.truncated());
  EXPECT_EQ(cut.ids, std::vector<int>(longer.ids.begin(), longer.ids.begin() + 5));
  EXPECT_THROW(pi05_prompt_tokens(trained(), "wave", state, 0), Error);
}

}  // namespace
}  // namespace ember::model
