#include "ember/model/processor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>

#include "ember/core/error.h"
#include "ember/data/sampler.h"
#include "ember/model/prompt.h"

namespace ember::model {

namespace {

[[noreturn]] void bad(const std::string& root, const std::string& what) {
  throw Error(ErrorKind::kInvalidArgument, "dataset " + root + ": " + what);
}

// Whether s holds what `mode` reads.
bool has_stats(const data::FeatureStats& s, data::NormMode mode) {
  for (const char* n : data::norm_mode_stats(mode))
    if (n && !s.count(n)) return false;
  return true;
}

// The dataset's cameras in its order, as many as the policy has slots for (else an error naming it).
std::vector<std::string> dataset_cameras(const data::Metadata& meta, const model::PolicyShape& shape) {
  std::vector<std::string> cameras;
  for (const auto* cam : meta.info.cameras()) cameras.push_back(cam->key);
  if (int(cameras.size()) > shape.max_cameras)
    bad(meta.root, std::to_string(cameras.size()) + " cameras, the policy has " + std::to_string(shape.max_cameras) + " slots");
  return cameras;
}

}  // namespace

FeatureSpec feature_spec(const data::Metadata& meta, const model::PolicyShape& shape, const FeatureRules& rules) {
  FeatureSpec spec;
  spec.state_in_prompt = rules.state_in_prompt;
  spec.loss_on_padded_steps = rules.loss_on_padded_steps;
  spec.fps = meta.info.fps;
  spec.cameras = dataset_cameras(meta, shape);
  auto dim_of = [&](const std::string& key) {
    const auto* f = meta.info.find(key);
    if (!f) bad(meta.root, "feature '" + key + "' is missing (meta/info.json)");
    if (f->shape.size() != 1) bad(meta.root, "feature '" + key + "' is not a vector (meta/info.json shape)");
    return f->shape[0];
  };
  spec.state_dim = dim_of(spec.state_key);
  spec.action_dim = dim_of(spec.action_key);
  if (spec.action_dim > shape.max_action_dim)
    bad(meta.root, "action has " + std::to_string(spec.action_dim) + " dimensions, the policy at most " +
                       std::to_string(shape.max_action_dim) + " (--policy.max_action_dim)");
  for (const auto& key : {spec.state_key, spec.action_key}) {
    auto it = meta.stats.find(key);
    if (it == meta.stats.end()) bad(meta.root, "no statistics for '" + key + "' (meta/stats.json; `ember data stats` computes them)");
    if (rules.mode) {
      if (!has_stats(it->second, *rules.mode))
        bad(meta.root, std::string("statistics of '") + key + "' lack what " + data::norm_mode_name(*rules.mode) +
                           " normalisation needs (meta/stats.json; `ember data stats PATH --write` computes them)");
      spec.modes[key] = *rules.mode;
    } else if (has_stats(it->second, data::NormMode::kQuantiles)) {
      spec.modes[key] = data::NormMode::kQuantiles;
    } else if (has_stats(it->second, data::NormMode::kMeanStd)) {
      spec.modes[key] = data::NormMode::kMeanStd;
    } else {
      bad(meta.root, "statistics of '" + key + "' have neither q01/q99 nor mean/std");
    }
    spec.stats[key] = it->second;
  }
  return spec;
}

FeatureSpec feature_spec_like(const data::Metadata& meta, const model::PolicyShape& shape, const FeatureSpec& like,
                              const std::map<std::string, std::string>& rename) {
  FeatureSpec spec = like;
  spec.fps = meta.info.fps;
  if (spec.cameras.empty()) spec.cameras = dataset_cameras(meta, shape);  // a policy that names none (a GR00T-N1.5 directory)
  spec.set_camera_sources(rename, [&](const std::string& key) { return meta.info.find(key) != nullptr; }, "dataset " + meta.root);
  for (const auto& cam : spec.cameras) {
    if (cam.find("empty_camera_") != std::string::npos || spec.camera_sources.count(cam)) continue;  // an empty slot (LeRobot's empty_cameras), a renamed one
    if (!meta.info.find(cam))
      bad(meta.root, "no camera '" + cam + "', which the policy reads (its cameras, in slot order: " + [&] {
            std::string all;
            for (const auto& c : spec.cameras) all += (all.empty() ? "" : ", ") + c;
            return all;
          }() + "; --rename_map maps a dataset camera to one)");
  }
  auto dim_of = [&](const std::string& key) {
    const auto* f = meta.info.find(key);
    if (!f) bad(meta.root, "feature '" + key + "' is missing (meta/info.json), the policy reads it");
    if (f->shape.size() != 1) bad(meta.root, "feature '" + key + "' is not a vector (meta/info.json shape)");
    return f->shape[0];
  };
  spec.state_dim = dim_of(spec.state_key);
  spec.action_dim = dim_of(spec.action_key);
  if (spec.action_dim > shape.max_action_dim)
    bad(meta.root, "action has " + std::to_string(spec.action_dim) + " dimensions, the policy at most " + std::to_string(shape.max_action_dim));
  spec.stats.clear();
  for (const auto& key : {spec.state_key, spec.action_key}) {
    auto it = meta.stats.find(key);
    if (it == meta.stats.end()) bad(meta.root, "no statistics for '" + key + "' (meta/stats.json; `ember data stats` computes them)");
    const auto mode = spec.modes.count(key) ? spec.modes.at(key) : data::NormMode::kIdentity;
    if (mode == data::NormMode::kQuantiles && !has_stats(it->second, mode))
      bad(meta.root, "statistics of '" + key + "' have no q01/q99, which the policy's QUANTILES normalisation needs "
                     "(meta/stats.json; `ember data stats PATH --write` computes them)");
    spec.stats[key] = it->second;
  }
  return spec;
}

void FeatureSpec::set_camera_sources(const std::map<std::string, std::string>& rename,
                                     const std::function<bool(const std::string&)>& has_source, const std::string& sources) {
  camera_sources.clear();
  for (const auto& [from, to] : rename) {
    const std::string entry = "--rename_map: '" + from + "' -> '" + to + "': ";
    if (std::find(cameras.begin(), cameras.end(), to) == cameras.end())
      throw Error(ErrorKind::kInvalidArgument, entry + "the policy has no camera '" + to + "'");
    if (!has_source(from)) throw Error(ErrorKind::kInvalidArgument, entry + sources + " has no '" + from + "'");
    camera_sources[to] = from;
  }
}

nlohmann::json FeatureSpec::to_json() const {
  nlohmann::json j;
  j["cameras"] = cameras;
  j["state_key"] = state_key;
  j["action_key"] = action_key;
  j["state_dim"] = state_dim;
  j["action_dim"] = action_dim;
  j["fps"] = fps;
  for (const auto& [key, mode] : modes) {
    j["normalization"][key]["mode"] = data::norm_mode_name(mode);
    j["normalization"][key]["stats"] = stats.count(key) ? nlohmann::json(stats.at(key)) : nlohmann::json::object();
  }
  // written only when they differ from ember's own rules, so older files read the same
  if (norm_options.eps != data::NormalizeOptions{}.eps) j["norm_eps"] = norm_options.eps;
  if (norm_options.rule == data::EpsilonRule::kAddToRange) j["norm_eps_rule"] = "add_to_range";
  if (norm_options.rule == data::EpsilonRule::kZeroRangeToZero) j["norm_eps_rule"] = "zero_range_to_zero";
  if (lerobot_state_bins) j["lerobot_state_bins"] = true;
  if (loss_on_padded_steps) j["loss_on_padded_steps"] = true;
  if (lerobot_images) j["lerobot_images"] = true;
  if (!state_in_prompt) j["state_in_prompt"] = false;
  if (embodiment != 0) j["embodiment"] = embodiment;
  return j;
}

FeatureSpec FeatureSpec::from_json(const nlohmann::json& j, const std::string& what) {
  try {
    FeatureSpec s;
    s.cameras = j.at("cameras").get<std::vector<std::string>>();
    s.state_key = j.at("state_key").get<std::string>();
    s.action_key = j.at("action_key").get<std::string>();
    s.state_dim = j.at("state_dim").get<int64_t>();
    s.action_dim = j.at("action_dim").get<int64_t>();
    s.fps = j.at("fps").get<double>();
    for (const auto& [key, v] : j.at("normalization").items()) {
      s.modes[key] = data::parse_norm_mode(v.at("mode").get<std::string>(), what + ": normalization." + key);
      auto st = v.at("stats").get<data::FeatureStats>();
      if (!st.empty()) s.stats[key] = st;
    }
    s.norm_options.eps = j.value("norm_eps", s.norm_options.eps);
    const std::string rule = j.value("norm_eps_rule", std::string());
    if (rule == "add_to_range") s.norm_options.rule = data::EpsilonRule::kAddToRange;
    else if (rule == "zero_range_to_zero") s.norm_options.rule = data::EpsilonRule::kZeroRangeToZero;
    else if (!rule.empty())
      throw Error(ErrorKind::kCorruption, what + ": norm_eps_rule '" + rule + "' is not add_to_range or zero_range_to_zero");
    s.lerobot_state_bins = j.value("lerobot_state_bins", false);
    s.loss_on_padded_steps = j.value("loss_on_padded_steps", false);
    s.lerobot_images = j.value("lerobot_images", false);
    s.state_in_prompt = j.value("state_in_prompt", true);
    s.embodiment = j.value("embodiment", int64_t(0));
    if (s.embodiment < 0 || s.embodiment >= 1024) throw Error(ErrorKind::kCorruption, what + ": embodiment " + std::to_string(s.embodiment));
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorruption, what + ": " + e.what());
  }
}

SampleBuilder::SampleBuilder(FeatureSpec spec, const model::PolicyShape& shape, const model::Tokenizer& tokenizer)
    : spec_(std::move(spec)), shape_(shape), tokenizer_(tokenizer), normalizer_(spec_.stats, spec_.modes, spec_.norm_options) {}

data::DatasetOptions SampleBuilder::dataset_options() const {
  data::DatasetOptions o;
  std::vector<double> offsets;
  for (int h = 0; h < shape_.horizon; ++h) offsets.push_back(h / spec_.fps);
  o.delta_timestamps[spec_.action_key] = offsets;
  // video frames resized by the dataset as image_tensor resizes every other frame (io/resize.h);
  // LeRobot's image path decodes them at their stored size
  if (!spec_.lerobot_images) o.image_width = o.image_height = shape_.vision.image_size;
  o.threads = 1;  // the loader builds several samples at once instead
  return o;
}

at::Tensor SampleBuilder::image_tensor(const io::Image& image) const {
  const int s = shape_.vision.image_size;
  auto hwc = at::from_blob(const_cast<uint8_t*>(image.rgb.data()), {image.height, image.width, 3}, at::kByte);
  if (spec_.lerobot_images)  // in LeRobot's order of operations, for the same floats
    return resize_with_pad(hwc.permute({2, 0, 1}).to(at::kFloat).div_(255.0), s).mul(2.0).sub_(1.0).contiguous();
  auto x = hwc.permute({2, 0, 1}).to(at::kFloat).div_(127.5).sub_(1.0);  // [3, h, w] in [-1, 1]
  if (image.height != s || image.width != s) {
    x = at::upsample_bilinear2d(x.unsqueeze(0), {s, s}, /*align_corners=*/false).squeeze(0);
  }
  return x.contiguous();
}

at::Tensor resize_with_pad(const at::Tensor& image, int64_t size) {
  const int64_t h = image.size(1), w = image.size(2);
  if (h == size && w == size) return image;
  const double ratio = std::max(double(w) / double(size), double(h) / double(size));
  const auto rh = int64_t(double(h) / ratio), rw = int64_t(double(w) / ratio);
  auto resized = at::upsample_bilinear2d(image.unsqueeze(0), {rh, rw}, /*align_corners=*/false).clamp_(0.0, 1.0);
  const int64_t top = (size - rh) / 2, left = (size - rw) / 2;
  return at::constant_pad_nd(resized, {left, size - rw - left, top, size - rh - top}, 0.0).squeeze(0);
}

std::vector<float> SampleBuilder::normalized_state(const data::Item& item) const {
  auto it = item.values.find(spec_.state_key);
  if (it == item.values.end()) throw Error(ErrorKind::kInvalidArgument, "item " + std::to_string(item.index) + " has no " + spec_.state_key);
  std::vector<float> state(it->second.data.begin(), it->second.data.end());
  normalizer_.normalize(spec_.state_key, state);
  return state;
}

at::Tensor SampleBuilder::shifted(const at::Tensor& image, int dx, int dy) {
  if (dx == 0 && dy == 0) return image;
  const int64_t h = image.size(1), w = image.size(2);
  const int64_t px = std::abs(dx), py = std::abs(dy);
  // pad by |d| on every side with the edge pixels, then crop the window moved by (dx, dy)
  auto padded = at::replication_pad2d(image.unsqueeze(0), {px, px, py, py}).squeeze(0);
  return padded.narrow(1, py - dy, h).narrow(2, px - dx, w).contiguous();
}

model::PolicySample SampleBuilder::build(const data::Item& item, bool with_actions, const RandomShift* shift) const {
  model::PolicySample s;
  uint64_t draw = shift ? shift->seed : 0;
  for (size_t c = 0; c < spec_.cameras.size(); ++c) {
    auto source = spec_.camera_sources.find(spec_.cameras[c]);
    auto it = item.images.find(source == spec_.camera_sources.end() ? spec_.cameras[c] : source->second);
    if (it == item.images.end() || it->second.empty()) continue;  // an absent camera costs nothing
    at::Tensor image = image_tensor(it->second.front());
    if (shift && shift->max_fraction > 0) {
      const int m = int(shift->max_fraction * double(image.size(2)));
      auto offset = [&] { return m ? int(data::mix64(++draw) % uint64_t(2 * m + 1)) - m : 0; };
      const int dx = offset(), dy = offset();
      image = shifted(image, dx, dy);
    }
    s.images.push_back(image);
    s.camera_slots.push_back(int(c));
  }
  const std::vector<float> state = normalized_state(item);
  auto prompt = spec_.state_in_prompt
                    ? model::pi05_prompt_tokens(tokenizer_, item.task, state, shape_.max_prompt, spec_.lerobot_state_bins)
                    : model::task_prompt_tokens(tokenizer_, item.task, shape_.max_prompt);
  s.prompt = std::move(prompt.ids);
  s.state = at::tensor(state, at::kFloat);  // GR00T's state token reads it (pi0.5 only the prompt)
  s.embodiment = int(spec_.embodiment);
  if (!with_actions) return s;
  auto it = item.values.find(spec_.action_key);
  if (it == item.values.end()) throw Error(ErrorKind::kInvalidArgument, "item " + std::to_string(item.index) + " has no " + spec_.action_key);
  std::vector<float> actions(it->second.data.begin(), it->second.data.end());  // [H, action_dim]
  normalizer_.normalize(spec_.action_key, actions);
  s.actions = at::from_blob(actions.data(), {shape_.horizon, spec_.action_dim}, at::kFloat).clone();
  if (spec_.loss_on_padded_steps) return s;  // LeRobot's pi05 and N1.5: every step counts (docs/lerobot_pi05.md row 17)
  const auto& pad = item.is_pad.at(spec_.action_key);
  s.action_is_pad = at::from_blob(const_cast<uint8_t*>(pad.data()), {int64_t(pad.size())}, at::kByte).to(at::kBool);
  return s;
}

std::vector<std::vector<float>> SampleBuilder::unnormalize_actions(const at::Tensor& actions) const {
  auto a = actions.to(at::kFloat).cpu().narrow(1, 0, spec_.action_dim).contiguous();  // [H, action_dim]
  std::vector<float> flat(a.data_ptr<float>(), a.data_ptr<float>() + a.numel());
  normalizer_.unnormalize(spec_.action_key, flat);
  std::vector<std::vector<float>> out;
  for (int64_t h = 0; h < a.size(0); ++h)
    out.emplace_back(flat.begin() + h * spec_.action_dim, flat.begin() + (h + 1) * spec_.action_dim);
  return out;
}

std::vector<std::string> tokenizer_training_texts(const data::Metadata& meta) {
  std::vector<std::string> texts;
  std::vector<float> state;
  for (int bin = 0; bin < 256; bin += 1) state.push_back(-1.0f + (bin + 0.5f) / 128.0f);
  for (const auto& task : meta.tasks) {
    texts.push_back(model::pi05_prompt_text(task, state));
  }
  if (texts.empty()) texts.push_back(model::pi05_prompt_text("", state));
  return texts;
}

}  // namespace ember::model
