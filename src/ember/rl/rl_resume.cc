#include "ember/rl/rl_resume.h"

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/weights.h"
#include "ember/train/checkpointer.h"

namespace ember::rl {

namespace fs = std::filesystem;

void must_keep(const fs::path& checkpoint, const std::string& flag, const std::string& now, const std::string& before) {
  const auto file = (checkpoint / "rl_config.json").string();
  const auto saved = read_json_file(file);
  std::string was = before;
  if (const nlohmann::json* v = saved_rl_field(saved, flag)) {
    if (v->is_string()) was = v->get<std::string>();
    else if (v->is_number_integer()) was = std::to_string(v->get<int64_t>());
    else throw Error(ErrorKind::kCorruption, file + ": \"" + flag + "\" is " + v->dump());
  }
  if (now != was)
    throw Error(ErrorKind::kInvalidArgument,
                "--" + flag + "=" + now + ": the run being resumed used '" + was + "' (" + file + "); resume it with --" + flag + "=" + was);
}

std::optional<train::CheckpointRef> resume_point(const RlConfig& c) {
  std::error_code ec;
  if (fs::exists(c.output_dir, ec) && !fs::is_directory(c.output_dir, ec))
    throw Error(ErrorKind::kInvalidArgument, "--output_dir=" + c.output_dir + ": exists and is not a directory");
  if (c.resume) {
    auto latest = train::find_latest_checkpoint(c.output_dir);
    if (!latest) throw Error(ErrorKind::kNotFound, "--resume: no complete checkpoint under " + (fs::path(c.output_dir) / "checkpoints").string());
    // the sampler the run optimised: a run from before these flags used a fixed std on the
    // policy's own steps (what it trained is checked once the policy's size settles --rl.train:
    // Policies)
    must_keep(latest->dir, "rl.noise_method", c.noise_method, "every_step");
    must_keep(latest->dir, "rl.denoise_steps", std::to_string(c.denoise_steps), "0");
    return latest;
  }
  if (!train::list_checkpoints(c.output_dir).empty())
    throw Error(ErrorKind::kInvalidArgument, "--output_dir=" + c.output_dir + " already holds checkpoints: pass --resume to continue, or choose a new --output_dir");
  return std::nullopt;
}

Resumed restore(const fs::path& dir, Learner& learner, const at::Device& device) {
  train::restore_policy(dir, learner.params());
  train::restore_optimizer(dir / "optimizer.safetensors", learner.optimizer(), device);
  // a head the run has: its weights file must be there (`other`: the flag of a run without it)
  auto load_head = [&](const std::string& name, const model::NamedTensors& params, const std::string& other) {
    const auto file = (dir / name).string();
    if (!fs::exists(file)) throw Error(ErrorKind::kInvalidArgument, "--resume: " + file + " is missing (was this run " + other + "?)");
    model::load_into(params, model::load_tensors(file), file);
  };
  if (learner.value()) {
    load_head("value_head.safetensors", learner.value_params(), "--rl.algo=grpo");
    train::restore_optimizer(dir / "value_optimizer.safetensors", *learner.value_optimizer(), device);
  }
  if (learner.noise_head()) load_head("noise_head.safetensors", learner.noise_params(), "--rl.noise_method=flow_noise");
  const auto file = dir / "rl_state.json";
  const auto j = read_json_file(file.string());
  Resumed r;
  r.step = train::checked_step(j, file, dir);
  try {
    r.env_steps = j.at("env_steps").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, file.string() + ": " + e.what());
  }
  return r;
}

}  // namespace ember::rl
