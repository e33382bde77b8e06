// Writes and converts LeRobot datasets with video cameras, for bench/lerobot_interop.py:
//
//   video_dataset_tool write OUT_DIR    OUT_DIR/v30video: v3.0, 3 episodes (20/31/17 frames),
//                                       float32[3] state and two video cameras (64x96, 80x96)
//                                       whose frames show their global index as 12 stripes;
//                                       OUT_DIR/v30video_rgb.bin: every frame as raw RGB, in
//                                       order frame, camera (top, wrist)
//   video_dataset_tool convert SRC DST  convert_v21_to_v30(SRC, DST)
//   video_dataset_tool decode ROOT OUT  every item's camera frames as ember's Dataset decodes
//                                       them, raw RGB in order item, camera (sorted keys)
// Exit status 0 on success, 2 on an error (message on stderr).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "../stripes.h"
#include "../test_util.h"
#include "ember/core/error.h"
#include "ember/data/convert.h"
#include "ember/data/dataset.h"
#include "ember/data/dataset_writer.h"

namespace {

using ember::data::Feature;
using ember::test::feature;


using ember::test::draw_stripes;

void write(const std::string& out) {
  const int lengths[] = {20, 31, 17};
  auto w = ember::data::DatasetWriter::create(
      out + "/v30video", 30,
      {feature("observation.state", "float32", {3}), feature("observation.images.top", "video", {64, 96, 3}),
       feature("observation.images.wrist", "video", {80, 96, 3})},
      "fixture_arm");
  std::ofstream rgb(out + "/v30video_rgb.bin", std::ios::binary);
  int64_t index = 0;
  for (int e = 0; e < 3; ++e) {
    for (int k = 0; k < lengths[e]; ++k, ++index) {
      ember::data::Frame f;
      f.values["observation.state"] = {double(index), 0.5 * k, -1.0 * e};
      f.images["observation.images.top"] = draw_stripes(index, 64, 96);
      f.images["observation.images.wrist"] = draw_stripes(index, 80, 96);
      for (const char* cam : {"observation.images.top", "observation.images.wrist"})
        rgb.write(reinterpret_cast<const char*>(f.images[cam].rgb.data()), std::streamsize(f.images[cam].rgb.size()));
      w.add_frame(f);
    }
    w.save_episode(e % 2 ? "place the cube" : "pick up the cube");
  }
  w.finalize();
  if (!rgb) throw std::runtime_error(out + "/v30video_rgb.bin: write failed");
}

void decode(const std::string& root, const std::string& out) {
  ember::data::Dataset ds(root);
  std::ofstream bin(out, std::ios::binary);
  for (int64_t i = 0; i < ds.size(); ++i)
    for (const auto& [key, images] : ds.get(i).images)  // std::map: sorted keys
      bin.write(reinterpret_cast<const char*>(images.at(0).rgb.data()), std::streamsize(images.at(0).rgb.size()));
  if (!bin) throw std::runtime_error(out + ": write failed");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "write" && argc == 3) {
      write(argv[2]);
    } else if (cmd == "convert" && argc == 4) {
      ember::data::ConvertReport r = ember::data::convert_v21_to_v30(argv[2], argv[3]);
      std::printf("converted %lld episodes, %lld frames: %lld data files, %lld video files\n",
                  static_cast<long long>(r.episodes), static_cast<long long>(r.frames),
                  static_cast<long long>(r.data_files), static_cast<long long>(r.video_files));
    } else if (cmd == "decode" && argc == 4) {
      decode(argv[2], argv[3]);
    } else {
      std::cerr << "usage: video_dataset_tool write OUT_DIR | convert SRC DST | decode ROOT OUT\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
