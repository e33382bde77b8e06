#include "ember/serve/observation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/core/error.h"

namespace ember::serve {

namespace {

constexpr int64_t kMaxImageSide = 8192;

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorKind::kInvalidArgument, what); }

bool is_empty_slot(const std::string& camera) { return camera.find("empty_camera_") != std::string::npos; }

// the array's elements as doubles (floating dtypes of 4 or 8 bytes), C order
std::vector<double> float_values(const std::string& key, const Field& v) {
  if (v.dtype.size() < 3 || v.dtype[1] != 'f' || (dtype_size(v.dtype) != 4 && dtype_size(v.dtype) != 8))
    bad("key '" + key + "': dtype " + v.dtype + ", expected float32 or float64 (<f4, <f8)");
  const size_t item = dtype_size(v.dtype), n = v.bytes.size() / item;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (item == 4) {
      float x;
      std::memcpy(&x, v.bytes.data() + i * 4, 4);
      out[i] = x;
    } else {
      std::memcpy(&out[i], v.bytes.data() + i * 8, 8);
    }
  }
  return out;
}

void check_finite(const std::string& key, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) bad("key '" + key + "': value " + std::to_string(i) + " is not finite");
}

io::Image camera_image(const std::string& key, const Field& v) {
  if (v.kind != Field::Kind::kNdArray) bad("key '" + key + "': a camera image must be an ndarray (uint8 [H, W, 3])");
  const auto& s = v.shape;
  const bool hwc = s.size() == 3 && s[2] == 3, chw = s.size() == 3 && !hwc && s[0] == 3;
  if (!hwc && !chw) bad("key '" + key + "': image of shape " + shape_text(s) + ", expected [H, W, 3] or [3, H, W]");
  const int64_t h = hwc ? s[0] : s[1], w = hwc ? s[1] : s[2];
  if (h < 1 || w < 1 || h > kMaxImageSide || w > kMaxImageSide)
    bad("key '" + key + "': image of " + std::to_string(h) + " x " + std::to_string(w) + " pixels, expected 1 to " +
        std::to_string(kMaxImageSide) + " on each side");
  const auto n = size_t(h * w * 3);
  std::vector<uint8_t> px(n);
  if (v.dtype.size() == 3 && v.dtype[1] == 'u' && v.dtype[2] == '1') {
    std::memcpy(px.data(), v.bytes.data(), n);
  } else if (v.dtype.size() >= 3 && v.dtype[1] == 'f') {
    auto x = float_values(key, v);
    // openpi's server: floats in [0, 1] become uint8(255 x), truncated
    for (size_t i = 0; i < n; ++i) px[i] = uint8_t(255.0 * std::clamp(std::isnan(x[i]) ? 0.0 : x[i], 0.0, 1.0));
  } else {
    bad("key '" + key + "': image dtype " + v.dtype + ", expected uint8 (|u1) or float32/64 in [0, 1]");
  }
  io::Image im;
  im.height = int(h), im.width = int(w);
  if (hwc) {
    im.rgb = std::move(px);
  } else {  // [3, H, W] -> [H, W, 3]
    im.rgb.resize(n);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < h * w; ++i) im.rgb[size_t(i * 3 + c)] = px[size_t(c * h * w + i)];
  }
  return im;
}

std::vector<double> state_values(const std::string& key, const Field& v, int64_t dim, const std::string& feature) {
  std::vector<double> x;
  if (v.kind == Field::Kind::kNdArray) {
    if (v.shape.size() != 1) bad("key '" + key + "': state of shape " + shape_text(v.shape) + ", expected [" + std::to_string(dim) + "]");
    x = float_values(key, v);
  } else if (v.kind == Field::Kind::kList) {
    for (const auto& item : v.items) {
      if (item.kind == Field::Kind::kFloat) x.push_back(item.number);
      else if (item.kind == Field::Kind::kInt) x.push_back(double(item.integer));
      else bad("key '" + key + "': a state list holds something other than numbers");
    }
  } else {
    bad("key '" + key + "': the state must be an ndarray of float32/64 [" + std::to_string(dim) + "]");
  }
  if (int64_t(x.size()) != dim)
    bad("key '" + key + "': " + std::to_string(x.size()) + " state values, the policy's " + feature + " has " + std::to_string(dim));
  check_finite(key, x);
  return x;
}

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6)), out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12)), out += char(0x80 | ((c >> 6) & 0x3F)), out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18)), out += char(0x80 | ((c >> 12) & 0x3F)), out += char(0x80 | ((c >> 6) & 0x3F)), out += char(0x80 | (c & 0x3F));
  }
}

std::string task_text(const std::string& key, const Field& v) {
  if (v.kind == Field::Kind::kString || v.kind == Field::Kind::kBytes) return v.bytes;
  int64_t numel = 1;
  for (int64_t d : v.shape) numel *= d;
  if (v.kind == Field::Kind::kNdArray && v.dtype.size() >= 3 && v.dtype[1] == 'U' && numel == 1) {
    // NumPy's unicode: UTF-32, each string padded with zeros to the dtype's length
    std::string out;
    for (size_t i = 0; i + 4 <= v.bytes.size(); i += 4) {
      uint32_t c;
      std::memcpy(&c, v.bytes.data() + i, 4);
      if (c == 0) break;
      if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) bad("key '" + key + "': not a unicode string");
      append_utf8(out, c);
    }
    return out;
  }
  bad("key '" + key + "': the instruction must be a string");
}

at::Tensor noise_tensor(const std::string& key, const Field& v, const model::PolicyShape& shape) {
  const std::string want = "[" + std::to_string(shape.horizon) + ", " + std::to_string(shape.max_action_dim) + "]";
  if (v.kind != Field::Kind::kNdArray) bad("key '" + key + "': the noise must be an ndarray of floats " + want);
  auto s = v.shape;
  if (s.size() == 3 && s[0] == 1) s.erase(s.begin());
  if (s.size() != 2 || s[0] != shape.horizon || s[1] != shape.max_action_dim)
    bad("key '" + key + "': noise of shape " + shape_text(v.shape) + ", the policy needs " + want + " (chunk, max_action_dim)");
  auto x = float_values(key, v);
  check_finite(key, x);
  return at::tensor(x, at::kDouble).to(at::kFloat).view({shape.horizon, shape.max_action_dim});
}

void flatten_into(const Field& map, const std::string& prefix, std::vector<std::pair<std::string, const Field*>>& out) {
  for (const auto& item : map.items) {
    std::string key = prefix.empty() ? item.key : prefix + "/" + item.key;
    if (item.kind == Field::Kind::kMap) flatten_into(item, key, out);
    else out.emplace_back(std::move(key), &item);
  }
}

}  // namespace

std::vector<std::pair<std::string, const Field*>> flatten(const Field& map) {
  std::vector<std::pair<std::string, const Field*>> out;
  flatten_into(map, "", out);
  return out;
}

ObservationMap::ObservationMap(const model::FeatureSpec& spec, const model::PolicyShape& shape, const std::string& obs_map)
    : spec_(spec), shape_(shape) {
  std::vector<std::string> cameras;
  for (const auto& cam : spec.cameras)
    if (!is_empty_slot(cam)) cameras.push_back(cam);
  std::set<std::string> features(cameras.begin(), cameras.end());
  features.insert({spec.state_key, kTaskFeature, kNoiseFeature});
  for (const auto& f : features) keys_[f] = f;
  // openpi's LIBERO client (examples/libero/main.py)
  if (cameras.size() >= 1) keys_["observation/image"] = cameras[0];
  if (cameras.size() >= 2) keys_["observation/wrist_image"] = cameras[1];
  keys_["observation/state"] = spec.state_key;
  keys_["prompt"] = kTaskFeature;
  if (!obs_map.empty()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(obs_map);
    } catch (const nlohmann::json::exception& e) {
      bad(std::string("--obs_map: not JSON (") + e.what() + ")");
    }
    if (!j.is_object()) bad("--obs_map: expected a JSON object, client key -> feature name (or null to ignore the key)");
    for (const auto& [key, target] : j.items()) {
      if (target.is_null()) {
        keys_[key] = "";
      } else if (target.is_string() && features.count(target.get<std::string>())) {
        keys_[key] = target.get<std::string>();
      } else {
        std::string names;
        for (const auto& f : features) names += (names.empty() ? "" : ", ") + f;
        bad("--obs_map: '" + key + "' -> " + target.dump() + " is not a feature of the policy (" + names + ") or null");
      }
    }
  }
  required_ = cameras;
  required_.push_back(spec.state_key);
  required_.push_back(kTaskFeature);
}

ObservationMap::Request ObservationMap::request(const Field& observation) const {
  if (observation.kind != Field::Kind::kMap) bad("the message is not a map (an observation is a msgpack map: key -> value)");
  Request r;
  std::map<std::string, std::string> filled;  // feature -> the key that filled it
  for (const auto& [key, value] : flatten(observation)) {
    auto it = keys_.find(key);
    if (it == keys_.end()) {
      std::string known;
      for (const auto& [k, f] : keys_)
        if (!f.empty()) known += (known.empty() ? "" : ", ") + k;
      bad("unknown key '" + key + "' (this server reads " + known + "; --obs_map maps other keys)");
    }
    const std::string& feature = it->second;
    if (feature.empty()) continue;
    if (auto [at, fresh] = filled.emplace(feature, key); !fresh)
      bad("key '" + key + "': '" + at->second + "' already gave " + feature);
    if (feature == kTaskFeature) {
      r.item.task = task_text(key, *value);
    } else if (feature == kNoiseFeature) {
      r.noise = noise_tensor(key, *value, shape_);
    } else if (feature == spec_.state_key) {
      data::Value state;
      state.dtype = "float32";
      state.shape = {spec_.state_dim};
      state.data = state_values(key, *value, spec_.state_dim, spec_.state_key);
      r.item.values[spec_.state_key] = std::move(state);
    } else {
      r.item.images[feature] = {camera_image(key, *value)};
    }
  }
  for (const auto& feature : required_) {
    if (filled.count(feature)) continue;
    std::string sources;
    for (const auto& [k, f] : keys_)
      if (f == feature) sources += (sources.empty() ? "'" : " or '") + k + "'";
    bad("missing key " + sources + " (the policy's " + (feature == kTaskFeature ? std::string("instruction") : feature) + ")");
  }
  return r;
}

}  // namespace ember::serve
