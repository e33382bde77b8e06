#include "ember/data/episode_buffer.h"

#include <cmath>
#include <cstdio>
#include <future>

#include "ember/core/error.h"
#include "ember/io/jpeg.h"
#include "ember/io/png.h"

namespace ember::data::detail {

// LeRobot's DEFAULT_FEATURES, appended after the user's.
std::vector<Feature> standard_features() {
  std::vector<Feature> out;
  for (auto [key, dtype] : {std::pair{"timestamp", "float32"}, {"frame_index", "int64"}, {"episode_index", "int64"},
                            {"index", "int64"}, {"task_index", "int64"}}) {
    Feature f;
    f.key = key;
    f.dtype = dtype;
    f.shape = {1};
    out.push_back(f);
  }
  return out;
}

namespace {

bool numeric_type(const std::string& dtype, io::TypeId& out) {
  if (dtype == "float32") out = io::TypeId::kFloat;
  else if (dtype == "float64") out = io::TypeId::kDouble;
  else if (dtype == "int64") out = io::TypeId::kInt64;
  else if (dtype == "int32") out = io::TypeId::kInt32;
  else if (dtype == "bool") out = io::TypeId::kBool;
  else return false;
  return true;
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Values of a numeric feature as a column: a scalar column for shape [1], else list<element>.
io::Column numeric_column(const Slot& s, const std::vector<double>& v, int64_t frames) {
  io::Column leaf;
  const std::string name = s.kind == Kind::kScalar ? s.feature.key : "element";
  switch (s.type) {
    case io::TypeId::kFloat: leaf = io::make_float(name, std::vector<float>(v.begin(), v.end())); break;
    case io::TypeId::kDouble: leaf = io::make_double(name, v); break;
    case io::TypeId::kInt32: {
      std::vector<int32_t> x;
      for (double d : v) x.push_back(int32_t(d));
      leaf = io::make_int32(name, x);
      break;
    }
    case io::TypeId::kBool: {
      std::vector<bool> x;
      for (double d : v) x.push_back(d != 0);
      leaf = io::make_bool(name, x);
      break;
    }
    default: {
      std::vector<int64_t> x;
      for (double d : v) x.push_back(int64_t(d));
      leaf = io::make_int64(name, x);
    }
  }
  if (s.kind == Kind::kScalar) return leaf;
  return io::make_list(s.feature.key, std::move(leaf), std::vector<int64_t>(size_t(frames), s.numel));
}

// The value a float32 / other column will hold, for statistics over what is stored.
double stored_value(io::TypeId t, double v) { return t == io::TypeId::kFloat ? double(float(v)) : v; }

}  // namespace

Slot make_slot(const Feature& f, const std::string& what) {
  const std::string where = what + ": feature '" + f.key + "'";
  Slot s;
  s.feature = f;
  for (int64_t d : f.shape)
    if (d <= 0) fail(ErrorKind::kInvalidArgument, where + ": shape " + shape_string(f.shape) + " must be positive");
  if (f.is_camera()) {
    s.kind = f.is_video() ? Kind::kVideo : Kind::kImage;
    if (f.shape.size() == 3 && f.shape[2] == 3) s.height = int(f.shape[0]), s.width = int(f.shape[1]);
    else if (f.shape.size() == 3 && f.shape[0] == 3) s.height = int(f.shape[1]), s.width = int(f.shape[2]);
    else fail(ErrorKind::kInvalidArgument, where + ": an image's shape must be [height, width, 3], got " + shape_string(f.shape));
    return s;
  }
  if (f.shape.size() != 1)
    fail_unsupported(where + ": shape " + shape_string(f.shape) + " is not supported (numeric features have shape [d])");
  s.numel = f.shape[0];
  if (f.dtype == "string") {
    if (s.numel != 1) fail(ErrorKind::kInvalidArgument, where + ": a string feature has shape [1]");
    s.kind = Kind::kString;
    return s;
  }
  if (!numeric_type(f.dtype, s.type))
    fail_unsupported(where + ": dtype '" + f.dtype + "' is not supported (float32, float64, int64, int32, bool, string, image)");
  s.kind = s.numel == 1 ? Kind::kScalar : Kind::kList;
  return s;
}

EpisodeBuffer::EpisodeBuffer(std::vector<Slot> slots, double fps, int jpeg_quality)
    : slots_(std::move(slots)), fps_(fps), jpeg_quality_(jpeg_quality) {
  clear();
}

void EpisodeBuffer::clear() {
  size_ = 0;
  numbers_.assign(slots_.size(), {});
  blobs_.assign(slots_.size(), {});
  pixels_.assign(slots_.size(), {});
  timestamps_.clear();
  tasks_.clear();
}

void EpisodeBuffer::validate(const Frame& f, const std::string& what) const {
  size_t seen = 0;
  for (const Slot& s : slots_) {
    const std::string where = what + ": feature '" + s.feature.key + "'";
    if (s.camera()) {
      auto it = f.images.find(s.feature.key);
      if (it == f.images.end()) fail(ErrorKind::kInvalidArgument, where + " is missing (expected an image)");
      const io::Image& im = it->second;
      if (im.height != s.height || im.width != s.width)
        fail(ErrorKind::kInvalidArgument, where + ": image is " + std::to_string(im.height) + "x" + std::to_string(im.width) +
                                              " (height x width), the feature's shape says " + std::to_string(s.height) +
                                              "x" + std::to_string(s.width));
      if (im.rgb.size() != size_t(im.height) * size_t(im.width) * 3)
        fail(ErrorKind::kInvalidArgument, where + ": image holds " + std::to_string(im.rgb.size()) +
                                              " bytes, expected height * width * 3");
    } else if (s.kind == Kind::kString) {
      if (!f.strings.count(s.feature.key)) fail(ErrorKind::kInvalidArgument, where + " is missing (expected a string)");
    } else {
      auto it = f.values.find(s.feature.key);
      if (it == f.values.end()) fail(ErrorKind::kInvalidArgument, where + " is missing (expected " + std::to_string(s.numel) + " values)");
      if (int64_t(it->second.size()) != s.numel)
        fail(ErrorKind::kInvalidArgument, where + ": got " + std::to_string(it->second.size()) + " values, shape " +
                                              shape_string(s.feature.shape) + " needs " + std::to_string(s.numel));
      for (double v : it->second) {
        bool ok = true;
        if (s.type == io::TypeId::kBool) ok = v == 0 || v == 1;
        else if (s.type == io::TypeId::kInt32) ok = v == std::floor(v) && v >= INT32_MIN && v <= INT32_MAX;
        else if (s.type == io::TypeId::kInt64) ok = v == std::floor(v) && std::abs(v) <= 9007199254740992.0;
        if (!ok)
          fail(ErrorKind::kInvalidArgument, where + ": value " + std::to_string(v) + " is not a valid " + s.feature.dtype);
      }
    }
    ++seen;
  }
  // anything the features do not name
  auto unknown = [&](const std::string& key) {
    for (const Slot& s : slots_)
      if (s.feature.key == key) return false;
    return true;
  };
  for (const auto& [k, v] : f.values)
    if (unknown(k)) fail(ErrorKind::kInvalidArgument, what + ": '" + k + "' is not a feature of this dataset");
  for (const auto& [k, v] : f.images)
    if (unknown(k)) fail(ErrorKind::kInvalidArgument, what + ": '" + k + "' is not a feature of this dataset");
  for (const auto& [k, v] : f.strings)
    if (unknown(k)) fail(ErrorKind::kInvalidArgument, what + ": '" + k + "' is not a feature of this dataset");
  if (f.values.size() + f.images.size() + f.strings.size() != seen)
    fail(ErrorKind::kInvalidArgument, what + ": a feature is given twice or under the wrong kind (values/images/strings)");
  if (f.timestamp && !std::isfinite(*f.timestamp))
    fail(ErrorKind::kInvalidArgument, what + ": timestamp must be a finite number");
}

void EpisodeBuffer::add(const Frame& f) {
  // everything that can fail (PNG encoding, lookups) first, so a failure adds nothing
  std::vector<std::string> png(slots_.size());
  std::vector<PixelHistogram> hist(slots_.size());
  // the cameras' PNGs are compressed side by side (zlib is most of a frame's cost)
  std::vector<std::future<std::vector<uint8_t>>> encoding(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].camera() && slots_[i].kind == Kind::kImage)
      encoding[i] = std::async(std::launch::async, [&im = f.images.at(slots_[i].feature.key), q = jpeg_quality_] {
        return q > 0 ? io::encode_jpeg(im, q) : io::encode_png(im);
      });
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.camera()) {
      const io::Image& im = f.images.at(s.feature.key);
      hist[i].add(im);
      if (s.kind == Kind::kImage) {
        std::vector<uint8_t> bytes = encoding[i].get();
        png[i].assign(bytes.begin(), bytes.end());
      }
    } else if (s.kind == Kind::kString) {
      png[i] = f.strings.at(s.feature.key);
    } else if (int64_t(f.values.at(s.feature.key).size()) != s.numel) {
      fail(ErrorKind::kInvalidArgument, "EpisodeBuffer::add: feature '" + s.feature.key + "' was not validated");
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.camera()) {
      if (s.kind == Kind::kImage) blobs_[i].push_back(std::move(png[i]));
      pixels_[i].push_back(hist[i]);
    } else if (s.kind == Kind::kString) {
      blobs_[i].push_back(std::move(png[i]));
    } else {
      const std::vector<double>& v = f.values.at(s.feature.key);
      numbers_[i].insert(numbers_[i].end(), v.begin(), v.end());
    }
  }
  timestamps_.push_back(f.timestamp ? *f.timestamp : double(size_) / fps_);
  tasks_.push_back(f.task);
  ++size_;
}

io::Table EpisodeBuffer::table(int64_t episode, int64_t first_index, const std::vector<int64_t>& task_ids) const {
  io::Table t;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kind == Kind::kVideo) continue;  // in the camera's video file
    if (s.kind == Kind::kImage) {
      // LeRobot embeds image files as {bytes, path: file name}
      std::vector<std::string> names;
      for (int64_t k = 0; k < size_; ++k) {
        char name[32];
        std::snprintf(name, sizeof name, "frame-%06lld.png", static_cast<long long>(k));
        names.emplace_back(name);
      }
      t.columns.push_back(io::make_struct(
          s.feature.key, {io::make_string("bytes", blobs_[i], io::TypeId::kBinary), io::make_string("path", names)}));
    } else if (s.kind == Kind::kString) {
      t.columns.push_back(io::make_string(s.feature.key, blobs_[i]));
    } else {
      t.columns.push_back(numeric_column(s, numbers_[i], size_));
    }
  }
  std::vector<int64_t> frame(static_cast<size_t>(size_)), ep(static_cast<size_t>(size_), episode), index(static_cast<size_t>(size_));
  for (int64_t k = 0; k < size_; ++k) frame[size_t(k)] = k, index[size_t(k)] = first_index + k;
  t.columns.push_back(io::make_float("timestamp", std::vector<float>(timestamps_.begin(), timestamps_.end())));
  t.columns.push_back(io::make_int64("frame_index", frame));
  t.columns.push_back(io::make_int64("episode_index", ep));
  t.columns.push_back(io::make_int64("index", index));
  t.columns.push_back(io::make_int64("task_index", task_ids));
  return t;
}

std::map<std::string, FeatureStats> EpisodeBuffer::stats(int64_t episode, int64_t first_index,
                                                         const std::vector<int64_t>& task_ids,
                                                         const StatsOptions& options) const {
  std::map<std::string, FeatureStats> out;
  const int64_t n = size_;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.kind == Kind::kString) continue;
    if (s.camera()) {
      PixelHistogram h;
      for (int64_t k : sample_frame_indices(n)) h.merge(pixels_[i][size_t(k)]);
      out[s.feature.key] = image_stats(h, options);
      continue;
    }
    std::vector<double> v;
    v.reserve(numbers_[i].size());
    for (double x : numbers_[i]) v.push_back(stored_value(s.type, x));
    out[s.feature.key] = compute_stats(v, s.numel, n, options);
  }
  // the standard features, as LeRobot computes them from its episode buffer (timestamps_ as given)
  std::vector<double> frame(static_cast<size_t>(n)), ep(static_cast<size_t>(n), double(episode)), index(static_cast<size_t>(n)), task(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    frame[size_t(k)] = double(k);
    index[size_t(k)] = double(first_index + k);
    task[size_t(k)] = double(task_ids[size_t(k)]);
  }
  out["timestamp"] = compute_stats(timestamps_, 1, n, options);
  out["frame_index"] = compute_stats(frame, 1, n, options);
  out["episode_index"] = compute_stats(ep, 1, n, options);
  out["index"] = compute_stats(index, 1, n, options);
  out["task_index"] = compute_stats(task, 1, n, options);
  return out;
}

}  // namespace ember::data::detail
