// Writes a LIBERO-shaped LeRobot v3.0 dataset with ember's DatasetWriter, for training-speed
// benchmarks on machines without FFmpeg (cameras as PNG `image` features):
//
//   libero_like_tool OUT_DIR [--episodes N] [--frames T] [--image S] [--tasks K]
//
// defaults: 400 episodes x 50 frames (20000 frames), two SxS cameras (S = 256), state 8,
// action 7, K = 40 task strings, 10 fps (LIBERO's shapes). Pictures are smooth procedural
// scenes (a moving square on a gradient); state and action are smooth random walks.
// Exit status 0 on success, 2 on a user error (message on stderr).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "../test_util.h"
#include "ember/core/error.h"
#include "ember/data/dataset_writer.h"

namespace {

using ember::data::Frame;

ember::io::Image scene(int size, int e, int k, int camera) {
  ember::io::Image im;
  im.height = im.width = size;
  im.rgb.resize(size_t(size) * size * 3);
  int cx = int((0.5 + 0.35 * std::sin(0.07 * k + e + camera)) * size);
  int cy = int((0.5 + 0.35 * std::cos(0.05 * k + 2 * e)) * size);
  int half = size / 10;
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      uint8_t* p = &im.rgb[(size_t(y) * size + x) * 3];
      bool box = std::abs(x - cx) < half && std::abs(y - cy) < half;
      p[0] = box ? 220 : uint8_t(x * 255 / size);
      p[1] = box ? uint8_t(40 + 20 * (e % 8)) : uint8_t(y * 255 / size);
      p[2] = box ? 30 : uint8_t(96 + 60 * camera);
    }
  }
  return im;
}

int parse(const char* flag, const char* value) {
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (!*value || *end || v < 1 || v > 1000000) throw ember::Error(ember::ErrorKind::kInvalidArgument, std::string(flag) + ": expected a positive integer, got '" + value + "'");
  return int(v);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw ember::Error(ember::ErrorKind::kInvalidArgument, "usage: libero_like_tool OUT_DIR [--episodes N] [--frames T] [--image S] [--tasks K]");
    std::string out = argv[1];
    int episodes = 400, frames = 50, image = 256, tasks = 40;
    for (int i = 2; i < argc; i += 2) {
      std::string flag = argv[i];
      if (i + 1 >= argc) throw ember::Error(ember::ErrorKind::kInvalidArgument, flag + ": missing value");
      int v = parse(argv[i], argv[i + 1]);
      if (flag == "--episodes") episodes = v;
      else if (flag == "--frames") frames = v;
      else if (flag == "--image") image = v;
      else if (flag == "--tasks") tasks = v;
      else throw ember::Error(ember::ErrorKind::kInvalidArgument, "unknown flag " + flag);
    }
    using ember::test::feature;
    std::vector<ember::data::Feature> features = {
        feature("observation.images.image", "image", {image, image, 3}, {"height", "width", "channels"}),
        feature("observation.images.wrist_image", "image", {image, image, 3}, {"height", "width", "channels"}),
        feature("observation.state", "float32", {8}, nullptr),
        feature("action", "float32", {7}, nullptr)};
    auto writer = ember::data::DatasetWriter::create(out, 10, features, "libero_like");
    const char* objects[] = {"bowl", "plate", "mug", "book", "cream cheese", "ketchup", "butter", "wine bottle"};
    const char* places[] = {"on the plate", "in the basket", "on the stove", "in the drawer", "on the shelf"};
    for (int e = 0; e < episodes; ++e) {
      int t = e % tasks;
      std::string task = std::string("put the ") + objects[t % 8] + " " + places[(t / 8) % 5] + (t >= 40 ? " again" : "");
      for (int k = 0; k < frames; ++k) {
        Frame f;
        for (int j = 0; j < 8; ++j) f.values["observation.state"].push_back(std::sin(0.05 * k + j + 0.3 * e) * 0.5);
        for (int j = 0; j < 7; ++j) f.values["action"].push_back(std::cos(0.05 * k - j + 0.2 * e) * 0.8);
        f.images["observation.images.image"] = scene(image, e, k, 0);
        f.images["observation.images.wrist_image"] = scene(image, e, k, 1);
        writer.add_frame(f);
      }
      writer.save_episode(task);
      if ((e + 1) % 50 == 0) std::fprintf(stderr, "%d/%d episodes\n", e + 1, episodes);
    }
    writer.finalize();
    std::printf("%s: %d episodes, %lld frames, %d tasks, two %dx%d PNG cameras\n", out.c_str(), episodes,
                (long long)writer.num_frames(), std::min(tasks, episodes), image, image);
    return 0;
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "libero_like_tool: %s\n", e.what());
    return e.is_user_error() ? 2 : 70;
  }
}
