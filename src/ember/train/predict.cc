#include "ember/train/predict.h"

#include <cstring>

#include "ember/core/error.h"
#include "ember/core/file.h"
#include "ember/model/weights.h"
#include "ember/train/inference.h"
#include "ember/train/sampler.h"

namespace ember::train {

namespace {

[[noreturn]] void bad_noise(const std::string& path, const std::string& what, ErrorKind kind = ErrorKind::kInvalidArgument) {
  throw Error(kind, path + ": " + what);
}

// A NumPy .npy file (format 1.0-3.0) of little-endian float32 / float64 in C order.
at::Tensor read_npy(const std::string& path) {
  auto bytes = read_file(path);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) bad_noise(path, "not a .npy file (no \\x93NUMPY magic)", ErrorKind::kCorruption);
  const int major = bytes[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8, offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad_noise(path, "truncated .npy header", ErrorKind::kCorruption);
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24, offset = 12;
  } else {
    bad_noise(path, ".npy format version " + std::to_string(major) + " is not known", ErrorKind::kUnsupported);
  }
  if (offset + header_len > bytes.size()) bad_noise(path, "truncated .npy header", ErrorKind::kCorruption);
  const std::string header(bytes.begin() + long(offset), bytes.begin() + long(offset + header_len));
  auto field = [&](const std::string& key) {
    auto at = header.find("'" + key + "'");
    if (at == std::string::npos) bad_noise(path, ".npy header has no '" + key + "'", ErrorKind::kCorruption);
    return header.substr(header.find(':', at) + 1);
  };
  const std::string descr = field("descr"), order = field("fortran_order"), shape_text = field("shape");
  at::ScalarType type;
  size_t item;
  if (descr.find("'<f4'") != std::string::npos) type = at::kFloat, item = 4;
  else if (descr.find("'<f8'") != std::string::npos) type = at::kDouble, item = 8;
  else bad_noise(path, ".npy dtype " + descr.substr(0, descr.find(',')) + ": expected little-endian float32 or float64", ErrorKind::kUnsupported);
  if (order.find("True") < order.find(',')) bad_noise(path, "a Fortran-ordered .npy array; write it in C order", ErrorKind::kUnsupported);
  std::vector<int64_t> shape;
  const auto open = shape_text.find('('), close = shape_text.find(')');
  if (open == std::string::npos || close == std::string::npos) bad_noise(path, ".npy shape is not a tuple", ErrorKind::kCorruption);
  std::string dims = shape_text.substr(open + 1, close - open - 1);
  for (size_t pos = 0; pos < dims.size();) {
    auto comma = dims.find(',', pos);
    std::string d = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (d.find_first_not_of(" ") != std::string::npos) {
      try {
        shape.push_back(std::stoll(d));
      } catch (const std::exception&) {
        bad_noise(path, ".npy shape '" + dims + "' is not a tuple of integers", ErrorKind::kCorruption);
      }
      if (shape.back() < 0 || shape.back() > (int64_t(1) << 32)) bad_noise(path, ".npy shape '" + dims + "' is out of range", ErrorKind::kCorruption);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const size_t data = offset + header_len;
  if (bytes.size() - data != size_t(n) * item)
    bad_noise(path, ".npy data holds " + std::to_string(bytes.size() - data) + " bytes, the shape needs " + std::to_string(size_t(n) * item),
              ErrorKind::kCorruption);
  auto t = at::empty(shape, at::TensorOptions().dtype(type));
  if (n) std::memcpy(t.data_ptr(), bytes.data() + data, size_t(n) * item);
  return t;
}

}  // namespace

at::Tensor read_noise_file(const std::string& path, const model::PolicyShape& shape) {
  at::Tensor t;
  if (path.ends_with(".npy")) {
    t = read_npy(path);
  } else {
    auto tensors = model::load_tensors(path);
    if (tensors.count("noise")) t = tensors.at("noise");
    else if (tensors.size() == 1) t = tensors.begin()->second;
    else bad_noise(path, "holds " + std::to_string(tensors.size()) + " tensors and none named 'noise'");
  }
  if (t.dim() == 3 && t.size(0) == 1) t = t[0];
  if (t.dim() != 2 || t.size(0) != shape.horizon || t.size(1) != shape.max_action_dim)
    bad_noise(path, "noise of shape " + [&] {
      std::string s = "[";
      for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
      return s + "]";
    }() + ", the policy needs [" + std::to_string(shape.horizon) + ", " + std::to_string(shape.max_action_dim) + "] (chunk, max_action_dim)");
  if (!t.is_floating_point()) bad_noise(path, "the noise is not floating point");
  if (!at::isfinite(t).all().item<bool>()) bad_noise(path, "the noise holds NaN or infinite values");
  return t.to(at::kFloat).contiguous();
}

Prediction predict_chunk(PolicyBundle& b, const std::string& root, int64_t index, const at::Device& device, uint64_t seed,
                         const at::Tensor& noise, const std::string& noise_what) {
  data::Metadata meta = data::load_metadata(root);
  model::FeatureSpec spec = b.spec;
  if (spec.fps <= 0) spec.fps = meta.info.fps;  // an imported policy does not know the dataset's rate
  for (const auto& cam : spec.cameras)
    if (cam.find("empty_camera_") == std::string::npos && !meta.info.find(cam))
      throw Error(ErrorKind::kInvalidArgument, "dataset " + root + " has no camera '" + cam + "', which the checkpoint was trained with");
  for (const auto& key : {spec.state_key, spec.action_key})
    if (!meta.info.find(key)) throw Error(ErrorKind::kInvalidArgument, "dataset " + root + " has no feature '" + key + "', which the policy reads");
  model::SampleBuilder builder(spec, b.shape, *b.tokenizer);
  data::Dataset dataset(std::move(meta), builder.dataset_options());
  if (index < 0 || index >= dataset.size())
    throw Error(ErrorKind::kInvalidArgument, "--index " + std::to_string(index) + ": the dataset has frames 0.." + std::to_string(dataset.size() - 1));
  if (noise.defined() && (noise.dim() != 2 || noise.size(0) != b.shape.horizon || noise.size(1) != b.shape.max_action_dim))
    throw Error(ErrorKind::kInvalidArgument, noise_what + ": not [" + std::to_string(b.shape.horizon) + ", " + std::to_string(b.shape.max_action_dim) + "]");
  auto item = dataset.get(index);
  auto sample = builder.build(item, /*with_actions=*/false);
  const model::PolicySample* one[] = {&sample};
  auto x0 = noise.defined() ? noise : seeded_noise(b.shape, seed);  // [H, max_action_dim]
  // as `ember serve` samples (bf16 weights, a CUDA graph on CUDA): its first request of this
  // frame and seed gets this chunk
  Sampler sampler(*b.module, b.shape, device, {.bf16_weights = true});
  auto actions = sampler.sample(one, x0.unsqueeze(0));  // [1, H, A]
  Prediction p;
  p.task = item.task;
  p.raw = actions[0].to(at::kFloat).cpu().contiguous();
  p.predicted = builder.unnormalize_actions(actions[0]);
  const auto& v = item.values.at(spec.action_key);
  for (int64_t h = 0; h < b.shape.horizon; ++h)
    p.recorded.emplace_back(v.data.begin() + h * spec.action_dim, v.data.begin() + (h + 1) * spec.action_dim);
  p.recorded_is_pad = item.is_pad.at(spec.action_key);
  return p;
}

}  // namespace ember::train
