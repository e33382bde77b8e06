// libFuzzer target: the checkpoint readers (issue 26). The first byte of an input picks one file
// of a small training checkpoint (policy.json, features.json, model.safetensors,
// optimizer.safetensors, trainer_state.json, COMPLETE, checksums.json); the rest replaces that
// file's bytes. Then both readers run as `ember predict` / `ember eval` and `ember train
// --resume=true` run them: train::load_policy (shapes, features, tokenizer, weights) and
// Checkpointer::restore into a policy of the run's own shape (weights, optimizer state, the
// trainer state with its loader position and RNG states). Each must succeed or raise an
// ember::Error that is not kInternal; never crash, abort in libtorch, read out of bounds, or
// throw anything else.
//
// The checkpoint is made once per process in a temporary directory: a policy of a few
// thousand parameters (so that whole safetensors files fit in -max_len), its AdamW state after
// one step, a tokenizer trained on three strings. checksums.json is left out unless the input
// replaces it (a checkpoint without one passes verify_checksums, so the other files' mutations
// reach their parsers). EMBER_FUZZ_VERBOSE=1 prints each refusal. Seeds: `EMBER_CHECKPOINT_FUZZ_SEEDS=DIR` makes the target write each
// file behind its selector byte into DIR (fuzz/README.md).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/model/pi05.h"
#include "ember/model/policy_type.h"
#include "ember/model/tokenizer.h"
#include "ember/train/checkpointer.h"

namespace {

namespace fs = std::filesystem;
using namespace ember;

const char* const kFiles[] = {"policy.json",        "features.json", "model.safetensors", "optimizer.safetensors",
                              "trainer_state.json", "COMPLETE",      "checksums.json"};
constexpr size_t kNumFiles = sizeof(kFiles) / sizeof(kFiles[0]);
constexpr int64_t kStep = 7;

model::PolicyShape micro_shape() {
  model::PolicyShape s = model::preset_shape("tiny");
  s.preset = "tiny";
  s.vision = {16, 8, 16, 1, 1, 16};
  s.lm = {16, 1, 1, 1, 16, 16};
  s.expert = {16, 1, 1, 1, 16, 16};
  s.vocab = 96;
  s.horizon = 2;
  s.max_action_dim = 4;
  s.max_cameras = 1;
  s.max_prompt = 8;
  s.flow_steps = 2;
  return s;
}

model::NamedTensors named_params(model::Pi05Policy& policy) {
  model::NamedTensors params;
  for (const auto& p : policy->named_parameters()) params.emplace_back(p.key(), p.value());
  return params;
}

// The run a checkpoint belongs to: its configuration, policy and optimizer.
struct Run {
  train::TrainConfig config;
  model::Pi05Policy policy{nullptr};
  model::NamedTensors params;
  std::unique_ptr<train::AdamW> optimizer;

  Run() {
    config.seed = 3;
    at::manual_seed(3);
    policy = model::Pi05Policy(micro_shape());
    params = named_params(policy);
    optimizer = std::make_unique<train::AdamW>(params, train::AdamWOptions{});
  }
};

struct Scratch {
  fs::path output_dir, checkpoint;
  std::vector<std::vector<uint8_t>> originals;  // per kFiles entry
  std::unique_ptr<Run> run;
};

// Writes a real checkpoint of step kStep (Checkpointer::save, as `ember train` does).
Scratch make_scratch() {
  Scratch s;
  s.output_dir = fs::temp_directory_path() / ("ember_checkpoint_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(s.output_dir);
  s.run = std::make_unique<Run>();
  Run& run = *s.run;
  for (auto& [name, p] : run.params) p.mutable_grad() = at::ones_like(p) * 0.01;
  run.optimizer->step(1e-3);

  train::PolicyBundle bundle;
  bundle.shape = micro_shape();
  bundle.spec.cameras = {"observation.images.top"};
  bundle.spec.state_dim = 3;
  bundle.spec.action_dim = 3;
  bundle.spec.fps = 10;
  bundle.spec.modes = {{"observation.state", data::NormMode::kMeanStd}, {"action", data::NormMode::kMeanStd}};
  for (const char* key : {"observation.state", "action"}) {
    bundle.spec.stats[key] = {{"mean", {0.0, 0.0, 0.0}}, {"std", {1.0, 1.0, 1.0}},
                              {"min", {-1.0, -1.0, -1.0}}, {"max", {1.0, 1.0, 1.0}}};
  }
  const std::vector<std::string> texts = {"pick up the cube", "open the drawer", "push the block left"};
  model::TokenizerTrainOptions topt;
  topt.vocab_size = 48;
  topt.byte_fallback = false;
  bundle.tokenizer = std::make_unique<model::Tokenizer>(model::train_tokenizer(texts, topt));
  bundle.arch = model::pi05_arch(micro_shape());
  bundle.module = run.policy.ptr();

  train::Checkpointer checkpointer(run.config, s.output_dir, at::Device(at::kCPU), 1, true);
  s.checkpoint = checkpointer.save(kStep, data::LoaderPosition{0, 12}, bundle, *run.optimizer);
  for (const char* f : kFiles) s.originals.push_back(read_file((s.checkpoint / f).string()));
  fs::remove(s.checkpoint / "checksums.json");

  if (const char* seeds = std::getenv("EMBER_CHECKPOINT_FUZZ_SEEDS")) {
    fs::create_directories(seeds);
    for (size_t i = 0; i < kNumFiles; ++i) {
      std::ofstream out(fs::path(seeds) / ("seed_" + std::to_string(i) + "_" + kFiles[i]), std::ios::binary);
      out.put(char(i));
      out.write(reinterpret_cast<const char*>(s.originals[i].data()), std::streamsize(s.originals[i].size()));
    }
  }
  return s;
}

Scratch& scratch() {
  // never destroyed: the exit handler that removes the directory needs it
  static Scratch& s = *new Scratch(make_scratch());
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch().output_dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return s;
}

void write(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

// Runs f; an ember::Error other than kInternal is a clean refusal, anything else a finding.
template <typename F>
void expect_clean(const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) {
      std::fprintf(stderr, "checkpoint_fuzz: %s: internal error: %s\n", what, e.what());
      std::abort();
    }
    static const bool verbose = std::getenv("EMBER_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "checkpoint_fuzz: %s refused: %s\n", what, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Scratch& s = scratch();
  const size_t which = data[0] % kNumFiles;
  const fs::path path = s.checkpoint / kFiles[which];
  write(path, data + 1, size - 1);

  expect_clean("load_policy", [&] {
    train::PolicyBundle b = train::load_policy(s.checkpoint, at::Device(at::kCPU));
    // what predict does next with the shapes it read
    if (!b.module || b.shape.vocab < b.tokenizer->vocab_size()) std::abort();
  });
  expect_clean("restore", [&] {
    Run& run = *s.run;
    train::Checkpointer checkpointer(run.config, s.output_dir, at::Device(at::kCPU), 1, true);
    auto restored = checkpointer.restore(s.checkpoint, run.params, *run.optimizer);
    if (restored.step != kStep || restored.position.consumed < 0 || restored.position.epoch < 0) std::abort();
  });

  if (which == kNumFiles - 1) {
    fs::remove(path);
  } else {
    write(path, s.originals[which].data(), s.originals[which].size());
  }
  return 0;
}
