#include "bench/jpeg_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>
#include <span>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"
#include "ember/data/dataset.h"
#include "ember/io/jpeg.h"
#include "ember/io/nvjpeg.h"
#include "ember/io/resize.h"

namespace ember::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times f over the images (at least 0.2 s of repeats) and returns seconds per image.
template <class F>
double per_image(size_t n, F&& f) {
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    for (size_t i = 0; i < n; ++i) f(i);
    ++reps;
  } while (seconds_since(t0) < 0.2);
  return seconds_since(t0) / double(reps) / double(n);
}

// `frames` frames spread over the dataset at root, every camera's resized to size x size
std::vector<io::Image> sample_frames(const std::string& root, int size, int frames) {
  if (frames < 1) fail(ErrorKind::kInvalidArgument, "--frames: must be positive");
  if (size < 8) fail(ErrorKind::kInvalidArgument, "--image_size: must be at least 8");
  data::DatasetOptions dopt;
  dopt.image_width = dopt.image_height = size;
  dopt.threads = 1;
  data::Dataset ds(root, dopt);
  std::vector<io::Image> images;  // the frames as the policy reads them
  for (int k = 0; k < frames; ++k) {
    int64_t i = ds.size() * k / frames;
    data::Item item = ds.get(i);
    for (auto& [key, ims] : item.images) images.push_back(io::resize_bilinear(ims.front(), size, size));
  }
  if (images.empty()) fail(ErrorKind::kInvalidArgument, root + ": the dataset has no cameras");
  return images;
}

// prints a line and keeps it
struct Emitter {
  std::vector<std::string> lines;
  void operator()(const nlohmann::ordered_json& j) {
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  }
};

}  // namespace

std::vector<std::string> run_jpeg_bench(const JpegBenchOptions& o) {
  std::vector<io::Image> images = sample_frames(o.root, o.image_size, o.frames);
  Emitter emit;
  // PNG, LeRobot's image cells
  std::vector<std::vector<uint8_t>> png;
  for (const auto& im : images) png.push_back(io::encode_png(im));
  double png_bytes = 0;
  for (const auto& p : png) png_bytes += double(p.size());
  nlohmann::ordered_json pj;
  pj["bench"] = "jpeg";
  pj["dataset"] = o.root;
  pj["image_size"] = o.image_size;
  pj["images"] = images.size();
  pj["codec"] = "png";
  pj["bytes_per_image"] = png_bytes / double(images.size());
  pj["decode_us"] = 1e6 * per_image(png.size(), [&](size_t i) { io::decode_png(png[i].data(), png[i].size(), "png"); });
  emit(pj);
  for (int q : o.qualities) {
    std::vector<std::vector<uint8_t>> jpeg(images.size());
    const double encode_s = per_image(images.size(), [&](size_t i) { jpeg[i] = io::encode_jpeg(images[i], q); });
    double bytes = 0, abs = 0, sq = 0, n = 0;
    for (size_t i = 0; i < images.size(); ++i) {
      bytes += double(jpeg[i].size());
      io::Image back = io::decode_jpeg(jpeg[i].data(), jpeg[i].size(), "jpeg");
      for (size_t k = 0; k < back.rgb.size(); ++k) {
        const double d = double(back.rgb[k]) - double(images[i].rgb[k]);
        abs += std::abs(d), sq += d * d;
      }
      n += double(back.rgb.size());
    }
    nlohmann::ordered_json j;
    j["bench"] = "jpeg";
    j["dataset"] = o.root;
    j["image_size"] = o.image_size;
    j["images"] = images.size();
    j["codec"] = "jpeg";
    j["quality"] = q;
    j["bytes_per_image"] = bytes / double(images.size());
    j["encode_us"] = 1e6 * encode_s;
    j["decode_us"] = 1e6 * per_image(jpeg.size(), [&](size_t i) { io::decode_jpeg(jpeg[i].data(), jpeg[i].size(), "jpeg"); });
    j["mean_abs_error"] = abs / n;
    j["psnr_db"] = sq > 0 ? 10 * std::log10(255.0 * 255.0 * n / sq) : 99.0;
    emit(j);
  }
  return emit.lines;
}

std::vector<std::string> run_jpeg_decode_bench(const JpegDecodeBenchOptions& o) {
  if (o.batch_size < 1) fail(ErrorKind::kInvalidArgument, "--batch_size: must be positive");
  if (o.batches < 1) fail(ErrorKind::kInvalidArgument, "--batches: must be positive");
  if (o.quality < 1 || o.quality > 100) fail(ErrorKind::kInvalidArgument, "--quality: must be in 1..100");
  for (int t : o.threads)
    if (t < 1) fail(ErrorKind::kInvalidArgument, "--threads: " + std::to_string(t) + " is not a positive thread count");
  for (const auto& d : o.decoders)
    if (d != "cpu" && d != "nvjpeg") fail(ErrorKind::kInvalidArgument, "--decoders: " + d + " (must be cpu or nvjpeg)");
  std::vector<io::Image> images = sample_frames(o.root, o.image_size, std::max(1, o.batch_size / 2));
  std::vector<std::vector<uint8_t>> jpeg;
  for (int k = 0; k < o.batch_size; ++k) jpeg.push_back(io::encode_jpeg(images[size_t(k) % images.size()], o.quality));
  std::vector<std::span<const uint8_t>> batch(jpeg.begin(), jpeg.end());
  std::vector<io::Image> reference;
  for (const auto& j : jpeg) reference.push_back(io::decode_jpeg(j.data(), j.size(), "jpeg"));
  Emitter emit;
  auto line = [&](const std::string& decoder) {
    nlohmann::ordered_json j;
    j["bench"] = "jpeg_decode";
    j["dataset"] = o.root;
    j["image_size"] = o.image_size;
    j["quality"] = o.quality;
    j["batch_size"] = o.batch_size;
    j["decoder"] = decoder;
    return j;
  };
  // seconds per batch of decode(), the median of o.batches after 3 untimed
  auto time_batches = [&](auto&& decode) {
    for (int i = 0; i < 3; ++i) decode();
    std::vector<double> s;
    for (int i = 0; i < o.batches; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      decode();
      s.push_back(seconds_since(t0));
    }
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  };
  auto finish = [&](nlohmann::ordered_json j, double batch_s) {
    j["batch_ms"] = 1e3 * batch_s;
    j["images_per_s"] = double(o.batch_size) / batch_s;
    emit(j);
  };
  for (const auto& d : o.decoders) {
    if (d == "cpu") {
      for (int t : o.threads) {
        ThreadPool pool{size_t(t)};
        auto decode = [&] {
          std::vector<std::future<io::Image>> f;
          for (const auto& b : batch) f.push_back(pool.submit([b] { return io::decode_jpeg(b.data(), b.size(), "jpeg"); }));
          for (auto& x : f) x.get();
        };
        auto j = line("cpu");
        j["threads"] = t;
        finish(j, time_batches(decode));
      }
      continue;
    }
    std::string why;
    auto nv = io::NvJpeg::open(&why);
    auto j = line("nvjpeg");
    if (!nv) {
      j["skipped"] = why;
      emit(j);
      continue;
    }
    j["backend"] = nv->backend();
    j["library"] = nv->library();
    // its pixels against libjpeg-turbo's (two IDCTs and upsamplers: close, not equal)
    std::vector<io::Image> got = nv->decode(batch, "jpeg");
    double abs = 0, n = 0;
    int max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      for (size_t k = 0; k < got[i].rgb.size(); ++k) {
        const int diff = std::abs(int(got[i].rgb[k]) - int(reference[i].rgb[k]));
        abs += diff, n += 1, max_diff = std::max(max_diff, diff);
      }
    j["mean_abs_diff_vs_cpu"] = abs / n;
    j["max_abs_diff_vs_cpu"] = max_diff;
    finish(j, time_batches([&] { nv->decode(batch, "jpeg"); }));
  }
  return emit.lines;
}

}  // namespace ember::bench
