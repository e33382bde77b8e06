#include "ember/eval/evaluate.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/core/output_dir.h"
#include "ember/core/file.h"
#include "ember/io/png.h"
#include "ember/eval/rollout_frames.h"
#include "ember/io/video/video_decoder.h"
#include "ember/io/video/video_encoder.h"
#include "ember/sim/rollout.h"

namespace ember::eval {

using namespace ember::sim;

namespace fs = std::filesystem;


namespace {

constexpr int kMaxRecordedPerTask = 6;

// agentview | wrist, side by side: [n, 2n, 3]
std::vector<uint8_t> side_by_side(const Observation& o) {
  const int n = o.width;
  std::vector<uint8_t> out(size_t(n) * 2 * n * 3);
  for (int y = 0; y < n; ++y) {
    std::copy_n(o.agentview.data() + size_t(y) * n * 3, n * 3, out.data() + size_t(y) * 2 * n * 3);
    std::copy_n(o.wrist.data() + size_t(y) * n * 3, n * 3, out.data() + size_t(y) * 2 * n * 3 + n * 3);
  }
  return out;
}

// Writes frames ([n, 2n, 3] each) as an MP4 (rollout_frames.h: scaled up, cameras labelled), or a
// PNG strip without FFmpeg. Returns the file
// name written (relative to dir).
std::string write_rollout_video(const std::string& dir, const std::string& stem,
                                const std::vector<std::vector<uint8_t>>& frames, int n) {
  fs::create_directories(fs::path(dir) / "videos");
  if (io::video_support_available() && n % 2 == 0) {
    io::EncoderOptions o;
    o.codec = "libx264";
    o.fallback_codec = "libsvtav1";
    o.gop = 20;
    o.crf = 23;
    // at half speed, the last frame held a second: an episode of the easy task is under a second
    o.fps_num = int(kControlHz), o.fps_den = 2;
    const FrameSize size = presented_size(n);
    o.width = size.width, o.height = size.height;
    std::vector<std::vector<uint8_t>> shown;
    for (const auto& f : frames) shown.push_back(present_frame(f, n));
    std::vector<const uint8_t*> ptrs;
    for (const auto& f : shown) ptrs.push_back(f.data());
    for (int k = 0; k < int(kControlHz) / 2 && !shown.empty(); ++k) ptrs.push_back(shown.back().data());
    std::string name = "videos/" + stem + ".mp4";
    io::encode_video((fs::path(dir) / name).string(), ptrs, o);
    return name;
  }
  // a strip of every 4th frame, at most 12 wide per row
  std::vector<size_t> picks;
  for (size_t i = 0; i < frames.size(); i += 4) picks.push_back(i);
  if (frames.size() && picks.back() != frames.size() - 1) picks.push_back(frames.size() - 1);
  const int per_row = 6, cols = std::min<int>(per_row, int(picks.size()));
  const int rows = int((picks.size() + per_row - 1) / per_row);
  io::Image im;
  im.width = cols * 2 * n, im.height = rows * n;
  im.rgb.assign(size_t(im.width) * im.height * 3, 0);
  for (size_t k = 0; k < picks.size(); ++k) {
    int r = int(k) / per_row, c = int(k) % per_row;
    for (int y = 0; y < n; ++y)
      std::copy_n(frames[picks[k]].data() + size_t(y) * 2 * n * 3, 2 * n * 3,
                  im.rgb.data() + (size_t(r * n + y) * im.width + size_t(c) * 2 * n) * 3);
  }
  std::string name = "videos/" + stem + ".png";
  std::vector<uint8_t> png = io::encode_png(im);
  AtomicFile f((fs::path(dir) / name).string());
  f.write(png.data(), png.size());
  f.commit();
  return name;
}

}  // namespace

std::string format_table(const EvalResult& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-26s %-11s %9s %8s %10s\n", "task", "family", "success", "rate", "mean steps");
  out += line;
  for (const TaskResult& t : r.tasks) {
    std::snprintf(line, sizeof(line), "%-26s %-11s %4d/%-4d %7.1f%% %10.1f\n", t.name.c_str(), t.family.c_str(),
                  t.successes, t.trials, 100.0 * t.successes / std::max(1, t.trials), t.mean_steps_success);
    out += line;
  }
  std::snprintf(line, sizeof(line), "%-26s %-11s %9s %7.1f%%   +- %.1f (standard error)\n", "average", "", "", 100.0 * r.average_success,
                100.0 * r.average_stderr);
  out += line;
  return out;
}

double average_success_stderr(const std::vector<TaskResult>& tasks) {
  if (tasks.empty()) return 0;
  double var = 0;
  for (const TaskResult& t : tasks) {
    if (t.trials < 1) continue;
    const double p = double(t.successes) / t.trials;
    var += p * (1 - p) / t.trials;
  }
  return std::sqrt(var) / double(tasks.size());
}

EvalResult evaluate(const EvalOptions& opt, Policy& policy) {
  const Suite& suite = find_suite(opt.suite);
  std::vector<const TaskSpec*> tasks = select_tasks(suite, opt.tasks);
  if (opt.trials < 1) fail(ErrorKind::kInvalidArgument, "--trials: must be >= 1");
  if (opt.replan_steps < 1) fail(ErrorKind::kInvalidArgument, "--replan_steps: must be >= 1");
  const bool write = !opt.output_dir.empty();
  if (write) check_output_dir(opt.output_dir, "--output_dir");
  const bool want_video = write && opt.videos && opt.renderer != RendererKind::kNone;
  if (opt.renderer == RendererKind::kNone && policy.needs_images())
    fail(ErrorKind::kInvalidArgument, "--renderer: none, but policy " + policy.name() + " needs camera images");
  const bool render = opt.renderer != RendererKind::kNone && (policy.needs_images() || want_video);

  auto t0 = std::chrono::steady_clock::now();
  auto scene = Scene::load();
  VectorEnvConfig vc;
  vc.n_envs = opt.n_envs;
  vc.threads = opt.threads;
  vc.renderer = render ? opt.renderer : RendererKind::kNone;
  vc.image_size = opt.image_size;
  VectorEnv venv(scene, tasks, vc);
  if (write) fs::create_directories(opt.output_dir);

  EvalResult result;
  result.suite = suite.name;
  result.policy = policy.name();
  std::map<const TaskSpec*, size_t> index;
  for (const TaskSpec* t : tasks) {
    index[t] = result.tasks.size();
    TaskResult tr;
    tr.name = t->name, tr.instruction = t->instruction, tr.family = family_name(t->family);
    tr.trials = opt.trials;
    tr.outcomes.assign(opt.trials, 0);
    result.tasks.push_back(tr);
  }
  std::vector<int> finished(tasks.size(), 0);
  std::vector<double> success_steps(tasks.size(), 0);
  // episodes in a fixed order: task by task, trial by trial
  size_t next_task = 0;
  int next_trial = 0;
  // recorded frames of the running episode per env, while its task still lacks a video
  std::vector<std::vector<std::vector<uint8_t>>> frames(opt.n_envs);
  std::vector<uint8_t> recording(opt.n_envs, 0);
  std::vector<int> recorded(tasks.size(), 0);  // episodes recorded per task

  RolloutHooks hooks;
  hooks.next_episode = [&]() -> std::optional<Episode> {
    if (next_task >= tasks.size()) return std::nullopt;
    const TaskSpec* t = tasks[next_task];
    Episode e;
    e.task = t;
    e.init_index = next_trial % kEvalInitStates;
    e.init = eval_init_states(*t)[e.init_index];
    e.seed = mix_seed(mix_seed(opt.seed, hash_string(t->name)), uint64_t(next_trial));
    e.id = next_trial;
    if (++next_trial == opt.trials) next_trial = 0, ++next_task;
    return e;
  };
  hooks.on_step = [&](int env, const Episode& e, int step, const Observation& obs, const Action&) {
    if (step == 0) {
      const size_t ti = index[e.task];
      const TaskResult& tr = result.tasks[ti];
      // rendering every step costs: record a task's first few episodes only, until it has both
      recording[env] = want_video && (tr.success_video.empty() || tr.failure_video.empty()) &&
                       recorded[ti] < kMaxRecordedPerTask;
      recorded[ti] += recording[env];
      frames[env].clear();
    }
    if (recording[env] && obs.width > 0) frames[env].push_back(side_by_side(obs));
  };
  hooks.wants_images = [&](int env) { return recording[env] != 0; };
  hooks.on_end = [&](int env, const Episode& e, bool success, int steps, const Observation& final_obs) {
    size_t ti = index[e.task];
    TaskResult& tr = result.tasks[ti];
    tr.successes += success;
    if (success) success_steps[ti] += steps;
    tr.outcomes[e.id] = success;
    ++finished[ti];
    if (recording[env] && final_obs.width > 0) {
      frames[env].push_back(side_by_side(final_obs));
      std::string& slot = success ? tr.success_video : tr.failure_video;
      if (slot.empty())
        slot = write_rollout_video(opt.output_dir, e.task->name + (success ? "_success" : "_failure"), frames[env],
                                   final_obs.width);
    }
    frames[env].clear();
    recording[env] = 0;
    if (opt.progress && finished[ti] == tr.trials)
      std::fprintf(stderr, "[eval] %-26s %d/%d\n", tr.name.c_str(), tr.successes, tr.trials);
  };
  RolloutStats stats = run_rollouts(venv, policy, opt.replan_steps, hooks);
  result.env_steps = stats.env_steps;
  result.policy_calls = stats.policy_calls;
  result.policy_seconds = stats.policy_s;
  result.env_seconds = stats.env_s;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  double sum = 0;
  for (size_t i = 0; i < result.tasks.size(); ++i) {
    TaskResult& tr = result.tasks[i];
    tr.mean_steps_success = tr.successes ? success_steps[i] / tr.successes : 0;
    sum += double(tr.successes) / tr.trials;
  }
  result.average_success = result.tasks.empty() ? 0 : sum / result.tasks.size();
  result.average_stderr = average_success_stderr(result.tasks);
  if (opt.print_table) std::printf("%s", format_table(result).c_str());

  if (write) {
    nlohmann::json j;
    j["suite"] = result.suite;
    j["policy"] = result.policy;
    j["trials"] = opt.trials;
    j["seed"] = opt.seed;
    j["n_envs"] = opt.n_envs;
    j["replan_steps"] = opt.replan_steps;
    if (opt.flow_steps > 0) j["flow_steps"] = opt.flow_steps;
    j["image_size"] = opt.image_size;
    j["renderer"] = renderer_name(vc.renderer);
    j["average_success"] = result.average_success;
    j["average_success_stderr"] = result.average_stderr;
    j["env_steps"] = result.env_steps;
    j["seconds"] = result.seconds;
    j["policy_calls"] = result.policy_calls;
    j["policy_seconds"] = result.policy_seconds;
    j["env_seconds"] = result.env_seconds;
    for (const TaskResult& tr : result.tasks) {
      nlohmann::json t;
      t["name"] = tr.name;
      t["instruction"] = tr.instruction;
      t["family"] = tr.family;
      t["trials"] = tr.trials;
      t["successes"] = tr.successes;
      t["success_rate"] = double(tr.successes) / tr.trials;
      t["mean_steps_success"] = tr.mean_steps_success;
      t["success_video"] = tr.success_video;
      t["failure_video"] = tr.failure_video;
      j["tasks"].push_back(t);
    }
    std::string text = j.dump(2) + "\n";
    AtomicFile f((fs::path(opt.output_dir) / "eval.json").string());
    f.write(text.data(), text.size());
    f.commit();
  }
  return result;
}

}  // namespace ember::eval
