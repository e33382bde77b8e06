#include "ember/train/checkpointer.h"

#include <iomanip>
#include <mutex>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/json_file.h"
#include "ember/model/weights.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {

std::string hex(const at::Tensor& bytes) {
  auto b = bytes.contiguous();
  const auto* p = b.data_ptr<uint8_t>();
  std::ostringstream o;
  for (int64_t i = 0; i < b.numel(); ++i) o << std::hex << std::setw(2) << std::setfill('0') << int(p[i]);
  return o.str();
}

at::Tensor unhex(const std::string& s, const std::string& what) {
  if (s.size() % 2) throw Error(ErrorKind::kCorruption, what + ": odd-length hex string");
  if (s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw Error(ErrorKind::kCorruption, what + ": not a hex string");
  auto t = at::empty({int64_t(s.size() / 2)}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  for (size_t i = 0; i < s.size() / 2; ++i) p[i] = uint8_t(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return t;
}

void set_generator_state(at::Generator g, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(state);
}

at::Tensor generator_state(at::Generator g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

}  // namespace

void restore_policy(const fs::path& dir, model::NamedTensors& params) {
  verify_checksums(dir);
  auto file = (dir / "model.safetensors").string();
  model::load_into(params, model::load_tensors(file), file);
}

void restore_optimizer(const fs::path& file, Optimizer& optimizer, const at::Device& device) {
  auto state = model::load_tensors(file.string());
  for (auto& [k, t] : state) t = t.to(device);
  optimizer.load_state(state, file.string());
}

int64_t checked_step(const nlohmann::json& state, const fs::path& file, const fs::path& dir) {
  int64_t step = 0;
  try {
    step = state.at("step").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, file.string() + ": " + e.what());
  }
  // the step is the checkpoint's own (its directory's name)
  if (auto named = checkpoint_step(dir); step < 0 || step != named)
    throw Error(ErrorKind::kCorruption, file.string() + ": \"step\" is " + std::to_string(step) + ", but the checkpoint is of step " +
                                            std::to_string(named));
  return step;
}

Checkpointer::Checkpointer(const TrainConfig& config, fs::path output_dir, at::Device device, int world_size, bool main_rank)
    : config_(config), output_dir_(std::move(output_dir)), device_(device), world_size_(world_size), main_rank_(main_rank),
      writer_(output_dir_) {}

bool Checkpointer::due(int64_t step) const {
  return config_.save_checkpoint && (step % config_.save_freq == 0 || step == config_.steps);
}

std::string Checkpointer::save(int64_t step, const data::LoaderPosition& next, const PolicyBundle& policy, Optimizer& optimizer) {
  nlohmann::json state;
  state["step"] = step;
  state["loader"] = next;
  state["seed"] = config_.seed;
  state["world_size"] = world_size_;
  state["rng"]["cpu"] = hex(generator_state(at::detail::getDefaultCPUGenerator()));
  if (device_.is_cuda()) state["rng"]["cuda"] = hex(generator_state(at::globalContext().defaultGenerator(device_)));
  auto optimizer_state = optimizer.state();  // collective under ZeRO-1: every rank gathers
  if (!main_rank_) return std::string();
  auto dir = writer_.save(step, [&](const fs::path& tmp) {
    write_policy_files(tmp, policy);
    model::save_tensors((tmp / "optimizer.safetensors").string(), optimizer_state);
    write_json_file((tmp / "trainer_state.json").string(), state);
    save_train_config(config_, tmp / "train_config.json");
  });
  return dir.string();
}

Checkpointer::Restored Checkpointer::restore(const fs::path& dir, model::NamedTensors& params, Optimizer& optimizer) const {
  Restored r;
  restore_policy(dir, params);
  restore_optimizer(dir / "optimizer.safetensors", optimizer, device_);
  auto state_path = dir / "trainer_state.json";
  auto state = read_json_file(state_path.string());
  r.step = checked_step(state, state_path, dir);
  try {
    try {
      r.position = state.at("loader").get<data::LoaderPosition>();
    } catch (const Error& e) {
      throw Error(ErrorKind::kCorruption, state_path.string() + ": \"loader\": " + e.what());
    }
    at::manual_seed(uint64_t(config_.seed));
    const std::string rng = state_path.string() + ": \"rng\"";
    auto cpu = unhex(state.at("rng").at("cpu").get<std::string>(), rng + "[\"cpu\"]");
    try {
      set_generator_state(at::detail::getDefaultCPUGenerator(), cpu);
      if (device_.is_cuda() && state.at("rng").contains("cuda"))
        set_generator_state(at::globalContext().defaultGenerator(device_), unhex(state["rng"]["cuda"].get<std::string>(), rng + "[\"cuda\"]"));
    } catch (const c10::Error& e) {
      throw Error(ErrorKind::kCorruption, rng + ": not a generator state (" + e.what_without_backtrace() + ")");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, state_path.string() + ": " + e.what());
  }
  return r;
}

}  // namespace ember::train
