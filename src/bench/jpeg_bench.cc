#include "bench/jpeg_bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/io/jpeg.h"
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

}  // namespace

std::vector<std::string> run_jpeg_bench(const JpegBenchOptions& o) {
  if (o.frames < 1) fail(ErrorKind::kInvalidArgument, "--frames: must be positive");
  if (o.image_size < 8) fail(ErrorKind::kInvalidArgument, "--image_size: must be at least 8");
  data::DatasetOptions dopt;
  dopt.image_width = dopt.image_height = o.image_size;
  dopt.threads = 1;
  data::Dataset ds(o.root, dopt);
  std::vector<io::Image> images;  // the frames as the policy reads them
  for (int k = 0; k < o.frames; ++k) {
    int64_t i = ds.size() * k / o.frames;
    data::Item item = ds.get(i);
    for (auto& [key, ims] : item.images) images.push_back(io::resize_bilinear(ims.front(), o.image_size, o.image_size));
  }
  if (images.empty()) fail(ErrorKind::kInvalidArgument, o.root + ": the dataset has no cameras");
  std::vector<std::string> lines;
  auto emit = [&](nlohmann::ordered_json j) {
    lines.push_back(j.dump());
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  };
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
  return lines;
}

}  // namespace ember::bench
