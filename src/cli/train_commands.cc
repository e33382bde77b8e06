// `ember train` (lerobot-train style flags, see src/ember/train/train_config.h) and
// `ember predict` (one action chunk from a checkpoint next to the recorded one).
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "ember/core/error.h"
#include "ember/model/device.h"
#include "ember/dist/env.h"
#include "ember/dist/process_group.h"
#include "ember/train/predict.h"
#include "ember/train/trainer.h"

namespace ember::cli {

namespace {

void report(const train::TrainResult& result) {
  if (result.last_checkpoint.empty())
    std::printf("trained to step %lld; no checkpoint (--save_checkpoint=false)\n", (long long)result.steps_done);
  else
    std::printf("trained to step %lld; checkpoint %s\n", (long long)result.steps_done, result.last_checkpoint.c_str());
}

int run_train(const std::vector<std::string>& args) {
  auto config = train::parse_train_flags(args);
  auto env = dist::detect_dist_env();
  if (!env.is_distributed()) {
    report(train::train(config));
    return 0;
  }
  // one rank of a job (ember launch, torchrun, srun, mpirun): one GPU per process
  train::TrainerHooks hooks;
  try {
    const bool cuda = model::resolve_device(config.device).is_cuda();
    if (cuda && env.local_rank >= int(torch::cuda::device_count()))
      fail(ErrorKind::kInvalidArgument, "LOCAL_RANK=" + std::to_string(env.local_rank) + ": this node has only " +
                                            std::to_string(torch::cuda::device_count()) + " CUDA device(s)");
    at::Device device = cuda ? at::Device(at::kCUDA, c10::DeviceIndex(env.local_rank)) : at::Device(at::kCPU);
    if (env.rank == 0) std::fprintf(stderr, "ember train: %s, %s\n", dist::describe(env).c_str(), cuda ? "NCCL" : "Gloo");
    auto timeout = std::chrono::milliseconds(int64_t(config.dist.timeout_s * 1000));
    hooks.collectives = dist::make_collectives(env, device, timeout, int64_t(config.dist.bucket_mb * (1 << 20)),
                                                   config.dist.reduce_dtype == "bf16");
    auto result = train::train(config, hooks);
    if (env.rank == 0) report(result);
    return 0;
  } catch (const Error& e) {
    // a failed collective can leave c10d's threads waiting on peers: report and leave at once
    // rather than run destructors that might block
    std::string what = e.what();
    if (what.rfind("rank ", 0) != 0) what = "rank " + std::to_string(env.rank) + ": " + what;
    std::fprintf(stderr, "ember train: %s\n", what.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(e.is_user_error() ? 2 : 70);
  }
}

}  // namespace

int print_prediction(const std::string& checkpoint, const std::string& root, int64_t index, const std::string& device_name) {
  auto device = model::resolve_device(device_name);
  auto bundle = train::load_policy(checkpoint, device);
  auto p = train::predict_chunk(bundle, root, index, device);
  std::printf("frame %lld, task \"%s\", checkpoint step %lld\n", (long long)index, p.task.c_str(), (long long)bundle.step);
  std::printf("%4s  %-*s  %s\n", "step", int(p.predicted[0].size() * 8), "predicted", "recorded");
  for (size_t h = 0; h < p.predicted.size(); ++h) {
    std::printf("%4zu ", h);
    for (float x : p.predicted[h]) std::printf(" %7.3f", x);
    std::printf("  ");
    for (float x : p.recorded[h]) std::printf(" %7.3f", x);
    if (p.recorded_is_pad[h]) std::printf("  (past the episode's end)");
    std::printf("\n");
  }
  double err = 0;
  int64_t n = 0;
  for (size_t h = 0; h < p.predicted.size(); ++h) {
    if (p.recorded_is_pad[h]) continue;
    for (size_t d = 0; d < p.predicted[h].size(); ++d, ++n) err += std::abs(p.predicted[h][d] - p.recorded[h][d]);
  }
  std::printf("mean absolute error over recorded steps: %.4f\n", n ? err / n : 0.0);
  return 0;
}

void add_train_commands(CLI::App& app, Action& action) {
  CLI::App* train = app.add_subcommand("train", "train a policy on a LeRobot dataset (lerobot-train style flags)");
  train->allow_extras();
  train->footer("Flags (--name=value or --name value):\n  " + [] {
    std::string s;
    for (const auto& n : train::train_flag_names()) s += "--" + n + " ";
    return s;
  }() + "\n  --config_path=FILE.json loads a saved train_config.json first.");
  train->callback([train, &action] {
    auto args = train->remaining();
    action = [args] { return run_train(args); };
  });

  auto checkpoint = std::make_shared<std::string>();
  auto root = std::make_shared<std::string>();
  auto index = std::make_shared<int64_t>(0);
  auto device = std::make_shared<std::string>("auto");
  CLI::App* predict = app.add_subcommand("predict", "predict one action chunk with a checkpoint, next to the recorded one");
  predict->add_option("--checkpoint", *checkpoint, "checkpoint directory, or a training output directory (its latest)")->required();
  predict->add_option("--dataset.root", *root, "LeRobot dataset")->required();
  predict->add_option("--index", *index, "global frame index");
  predict->add_option("--device", *device, "auto | cuda | cpu");
  predict->callback([=, &action] { action = [=] { return print_prediction(*checkpoint, *root, *index, *device); }; });
}

}  // namespace ember::cli
