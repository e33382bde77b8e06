// `ember demo`: the main job on the embedded default, end to end on a CPU:
//   1. collect  scripted-expert demonstrations of the `easy` simulated task (LeRobot v3.0)
//   2. train    the tiny pi0.5 policy on them (ember train)
//   3. predict  one action chunk next to the recorded one
//   4. evaluate the policy closed loop in the simulator: success table, rollout videos
// Built without the simulator (no MuJoCo), it trains on the bundled fixture dataset instead.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "ember/core/error.h"
#include "ember/train/trainer.h"
#ifdef EMBER_HAVE_SIM
#include "ember/sim/collect.h"
#include "ember/eval/evaluate.h"
#include "ember/sim/gl_context.h"
#include "ember/eval/checkpoint_policy.h"
#endif

namespace ember::cli {

namespace {

namespace fs = std::filesystem;

struct DemoOptions {
  std::string output_dir;  // default: ./ember-demo/run-YYYYmmdd-HHMMSS
  int64_t steps = 2500;
  int episodes = 60;
  int trials = 20;
  std::string device = "auto";
};

std::string default_output_dir() {
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "run-%Y%m%d-%H%M%S", std::localtime(&t));
  return (fs::current_path() / "ember-demo" / stamp).string();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// How to run one of the demo's steps alone: "ember ARGS..." on one line.
void print_command(const std::vector<std::string>& args) {
  std::string line = "      reproduce: ember";
  for (const auto& a : args) line += " " + a;
  std::printf("%s\n", line.c_str());
}

train::TrainResult train_tiny(const std::string& data, const std::string& out, const DemoOptions& o, const std::string& horizon) {
  const std::vector<std::string> flags{"--dataset.root=" + data, "--output_dir=" + out, "--device=" + o.device,
                                       "--policy.preset=tiny", "--policy.horizon=" + horizon, "--dataset.image_size=32",
                                       "--steps=" + std::to_string(o.steps), "--batch_size=32", "--optimizer.lr=3e-3",
                                       "--optimizer.weight_decay=0", "--scheduler.warmup_steps=50", "--log_freq=100",
                                       "--save_freq=" + std::to_string(o.steps), "--num_workers=2", "--seed=0"};
  std::vector<std::string> command{"train"};
  command.insert(command.end(), flags.begin(), flags.end());
  print_command(command);
  std::fflush(stdout);
  return train::train(train::parse_train_flags(flags));
}

int run_demo(const DemoOptions& o) {
  const std::string out = o.output_dir.empty() ? default_output_dir() : o.output_dir;
  if (fs::exists(out) && !fs::is_empty(out)) fail(ErrorKind::kInvalidArgument, "--output_dir " + out + ": exists and is not empty");
  fs::create_directories(out);
  auto start = std::chrono::steady_clock::now();
#ifdef EMBER_HAVE_SIM
  std::printf("ember demo: collect -> train -> evaluate, in %s\n\n", out.c_str());
  std::fflush(stdout);
  std::printf("[1/4] collecting %d expert demonstrations of the 'easy' task (MuJoCo)\n", o.episodes);
  std::fflush(stdout);
  sim::CollectOptions c;
  c.suite = "easy";
  c.episodes_per_task = o.episodes;
  c.output_dir = out + "/data";
  c.image_size = 64;
  c.n_envs = 2;
  c.renderer = sim::default_renderer();
  print_command({"sim", "collect", "--suite", c.suite, "--episodes_per_task", std::to_string(o.episodes), "--output_dir", c.output_dir,
                 "--image_size", std::to_string(c.image_size), "--n_envs", std::to_string(c.n_envs)});
  std::fflush(stdout);
  auto collected = sim::collect(c);
  std::printf("      %lld episodes, %lld frames (%.0f s)\n\n", (long long)collected.episodes, (long long)collected.frames, collected.seconds);

  std::printf("[2/4] training the tiny pi0.5 policy for %lld steps\n", (long long)o.steps);
  std::fflush(stdout);
  auto trained = train_tiny(c.output_dir, out + "/train", o, "10");
  double first = 0, last = 0;
  int n = std::min<int>(20, int(trained.losses.size()));
  for (int i = 0; i < n; ++i) first += trained.losses[i].second / n, last += trained.losses[trained.losses.size() - 1 - i].second / n;
  std::printf("      loss %.3f -> %.3f (%.1fx lower); checkpoint %s\n\n", first, last, first / last, trained.last_checkpoint.c_str());

  std::printf("[3/4] one predicted action chunk (frame 10 of the demonstrations)\n");
  PredictArgs predict;
  predict.checkpoint = trained.last_checkpoint;
  predict.root = c.output_dir;
  predict.device = o.device;
  predict.index = 10;
  print_command({"predict", "--checkpoint", predict.checkpoint, "--dataset.root", predict.root, "--index", "10", "--device", o.device});
  print_prediction(predict);

  std::printf("\n[4/4] evaluating the policy closed loop: %d trials\n", o.trials);
  std::fflush(stdout);
  eval::CheckpointSimPolicy policy(trained.last_checkpoint, o.device, 0);
  eval::EvalOptions e;
  e.suite = "easy";
  e.trials = o.trials;
  e.n_envs = 2;
  e.replan_steps = 5;
  e.image_size = 64;
  e.renderer = c.renderer;
  e.output_dir = out + "/eval";
  print_command({"eval", "--checkpoint", trained.last_checkpoint, "--suite", e.suite, "--trials", std::to_string(e.trials), "--n_envs",
                 std::to_string(e.n_envs), "--replan_steps", std::to_string(e.replan_steps), "--image_size",
                 std::to_string(e.image_size), "--device", o.device, "--output_dir", out + "/eval-again"});
  std::fflush(stdout);
  auto result = eval::evaluate(e, policy);
  std::printf("\nember demo: done in %.0f s. Success %.0f%%. Dataset %s, checkpoint %s, eval.json and videos in %s\n",
              seconds_since(start), 100 * result.average_success, c.output_dir.c_str(), trained.last_checkpoint.c_str(),
              e.output_dir.c_str());
#else
  std::printf("ember demo: built without the simulator (no MuJoCo); training on the bundled dataset instead, in %s\n\n", out.c_str());
  const std::string data = std::string(EMBER_ASSET_DIR) + "/lerobot_v3_0";
  auto trained = train_tiny(data, out + "/train", o, "10");
  std::printf("\none predicted action chunk:\n");
  print_prediction({.checkpoint = trained.last_checkpoint, .root = data, .device = o.device, .index = 10});
  std::printf("\nember demo: done in %.0f s; checkpoint %s\n", seconds_since(start), trained.last_checkpoint.c_str());
#endif
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* demo = app.add_subcommand("demo", "the main job: collect demonstrations, train a policy, evaluate it (CPU, minutes)");
  demo->add_option("--output_dir", o->output_dir, "where everything goes (default ./ember-demo/run-<time>)");
  demo->add_option("--steps", o->steps, "training steps (default 2500)");
  demo->add_option("--episodes", o->episodes, "demonstrations to collect (default 60)");
  demo->add_option("--trials", o->trials, "evaluation episodes (default 20)");
  demo->add_option("--device", o->device, "auto | cuda | cpu");
  demo->callback([o, &action] { action = [o] { return run_demo(*o); }; });
}

}  // namespace ember::cli
